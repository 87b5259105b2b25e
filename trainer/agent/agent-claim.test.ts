// Scenarios of the global claim order inside the host agent's lifecycle (issue 24 item 3, carried
// into agent-lifecycle.ts at the merge of agent-fsm and slots): the leader asks host after host in
// claim-key order once every follower said hello, claims its own slots at its own turn, and a
// follower claims only when asked. Pure: inputs folded through `transition`, no process.
import { describe, expect, it } from 'vitest';
import { initialState, type AgentConfig, type AgentInput, type Effect } from './agent-lifecycle';
import { fold, sampleConfig, sampleState } from './agent-table';

const hello = (host: string, key: string): AgentInput => ({ t: 'hello', host, ranks: 1, tokenOk: true, priorClosed: true, key });
const ready = (host: string): AgentInput => ({ t: 'follower-msg', host, msg: { t: 'ready' } });
const claimsOf = (fx: Effect[]) => fx.flatMap((e) => (e.do === 'claim' ? ['self'] : e.do === 'send' && e.msg.t === 'claim' ? [e.to] : []));

describe('claim order: leader', () => {
  // h1 leads with key m5; followers h2 (key m9) and h3 (key m1): the order is h3, h1, h2.
  const cfg: AgentConfig = { ...sampleConfig('leader'), followerRanks: 2, claimKey: 'm5:/w' };

  it('asks nobody before every follower said hello, then host after host in key order, itself at its turn; go once all hold', () => {
    let r = fold(cfg, initialState(), { t: 'begin' }, { t: 'prepared' }, hello('h2', 'm9:/w'));
    expect(claimsOf(r.effects)).toEqual([]);
    r = fold(cfg, r.state, hello('h3', 'm1:/w'));
    expect(claimsOf(r.effects)).toEqual(['h3']);
    // asked already: a second trigger (another hello's retry, a queued word) asks nobody again
    expect(claimsOf(fold(cfg, r.state, { t: 'follower-msg', host: 'h3', msg: { t: 'queued', behind: 'r0' } }).effects)).toEqual([]);
    r = fold(cfg, r.state, ready('h3'));
    expect(claimsOf(r.effects)).toEqual(['self']);
    expect(r.state.claiming).toBe(true);
    r = fold(cfg, r.state, { t: 'slots-held' });
    expect(claimsOf(r.effects)).toEqual(['h2']);
    expect(r.state).toMatchObject({ claiming: false, leases: true, phase: { k: 'rendezvous' } });
    expect(r.effects.filter((e) => e.do === 'spawn')).toEqual([]);
    r = fold(cfg, r.state, ready('h2'));
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 1, resume: false });
    expect(claimsOf(r.effects)).toEqual([]);
  });

  it('a host queued in its turn holds back every host after it (no run holds a later host while waiting for an earlier one)', () => {
    let r = fold(cfg, initialState(), { t: 'begin' }, { t: 'prepared' }, hello('h2', 'm9:/w'), hello('h3', 'm1:/w'));
    r = fold(cfg, r.state, { t: 'follower-msg', host: 'h3', msg: { t: 'queued', behind: 'r0' } });
    expect(r.state.phase).toMatchObject({ k: 'queued', behind: 'r0', by: 'h3' });
    expect(claimsOf(r.effects)).toEqual([]);
    expect(r.state.leases).toBe(false);
    r = fold(cfg, r.state, ready('h3'), { t: 'slots-busy', slot: 0, busyBy: 'r7' });
    expect(r.state.phase).toMatchObject({ k: 'queued', behind: 'r7' });
    expect(claimsOf(r.effects)).toEqual(['self']); // its own claim, queued: h2 not asked
    r = fold(cfg, r.state, { t: 'slots-held' });
    expect(claimsOf(r.effects)).toEqual(['h2']);
  });

  it('a follower first in the order that was queued, then ready: the leader claims, and says go once its own slots are held', () => {
    const two: AgentConfig = { ...sampleConfig('leader'), claimKey: 'm5:/w' };
    let r = fold(two, initialState(), { t: 'begin' }, { t: 'prepared' }, hello('h2', 'm1:/w'), { t: 'follower-msg', host: 'h2', msg: { t: 'queued', behind: 'r0' } });
    expect(r.state.phase).toMatchObject({ k: 'queued', by: 'h2' });
    r = fold(two, r.state, ready('h2'));
    expect(claimsOf(r.effects)).toEqual(['self']);
    r = fold(two, r.state, { t: 'slots-held' });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 1, resume: false });
    expect(r.state.phase.k).toBe('running');
  });

  it('one host: the leader claims at once when prepared', () => {
    const one: AgentConfig = { ...sampleConfig('leader'), followerRanks: 0 };
    expect(claimsOf(fold(one, initialState(), { t: 'begin' }, { t: 'prepared' }).effects)).toEqual(['self']);
  });

  it('a follower that rejoins after its host was lost is asked to claim again', () => {
    const two = sampleConfig('leader');
    let r = fold(two, sampleState('leader', 'running'), { t: 'follower-lost', host: 'h2', why: 'connection closed' });
    r = fold(two, r.state, { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: true, silentMs: 0 }] }, { t: 'ranks-exited', attempt: 1, ok: false });
    expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h2'] });
    r = fold(two, r.state, hello('h2', 'm2:/w'));
    expect(claimsOf(r.effects)).toEqual(['h2']);
    r = fold(two, r.state, ready('h2'));
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
  });

  it("an older follower's hello without a key is ordered by its host name", () => {
    const two: AgentConfig = { ...sampleConfig('leader'), claimKey: 'zz:/w' };
    const r = fold(two, initialState(), { t: 'begin' }, { t: 'prepared' }, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true });
    expect(claimsOf(r.effects)).toEqual(['h2']);
  });
});

describe('claim order: follower', () => {
  const cfg = sampleConfig('follower');

  it('claims only when the leader asks, once; says ready when held; asked again while holding (a relaunched leader) says ready at once', () => {
    let r = fold(cfg, initialState(), { t: 'begin' }, { t: 'prepared' }, { t: 'leader-connected' });
    expect(r.effects.map((e) => e.do)).toEqual(['connect', 'say-hello']);
    r = fold(cfg, r.state, { t: 'leader-msg', msg: { t: 'claim' } });
    expect(claimsOf(r.effects)).toEqual(['self']);
    expect(claimsOf(fold(cfg, r.state, { t: 'leader-msg', msg: { t: 'claim' } }).effects)).toEqual([]); // under way
    r = fold(cfg, r.state, { t: 'slots-held' });
    expect(r.effects).toEqual([{ do: 'send', to: 'leader', msg: { t: 'ready' } }]);
    r = fold(cfg, r.state, { t: 'leader-msg', msg: { t: 'claim' } });
    expect(r.effects).toEqual([{ do: 'send', to: 'leader', msg: { t: 'ready' } }]);
  });

  it('damaged or stale leases taken over on the way are logged as warnings naming the host, never fatal', () => {
    const r = fold(cfg, sampleState('follower', 'starting'), { t: 'slots-held', warnings: ['slot 0: lease file is truncated JSON; taken over'] });
    expect(r.effects).toContainEqual({ do: 'log', level: 'warn', message: 'h2: slot 0: lease file is truncated JSON; taken over' });
    expect(r.state.phase.k).toBe('rendezvous');
  });
});
