// Bad node out (issue 21 item 5), the leader agent's part, folded through the pure transition: a
// follower host lost with restarts left is excluded from the next attempt when the spec names a
// spare host; the restart event names both; the excluded host's agent is refused if a client brings
// it back; the spare's agent joins in its place and the restart goes on; no spare: as before. A
// follower host with a hung rank (the rank-hung root) is excluded the same way, its live agent told to end.
import { describe, expect, it } from 'vitest';
import { errorEvent, transition, type AgentConfig, type AgentInput, type AgentState } from './agent-lifecycle';
import { AGENT_TABLE_ROWS } from './agent-table-rows';
import { SAMPLE_INPUTS, effectsOf, fold, sampleConfig, sampleState, spareConfig, spareState } from './agent-table';

const find = effectsOf;
const lostH2: AgentInput[] = [
  { t: 'follower-lost', host: 'h2', why: 'connection closed' },
  { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: true, silentMs: 6000 }] },
];
const running = (): AgentState => sampleState('leader', 'running');
const withSpare = (spares = ['h3']): AgentConfig => ({ ...sampleConfig('leader'), spares });

describe('bad node out: the leader moves a lost host\'s ranks to a spare host', () => {
  it('h2 lost, spare h3: restart names h2 excluded and h3 its replacement, waits for h3 (not h2)', () => {
    const r = fold(withSpare(), running(), ...lostH2);
    expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h3'] });
    expect(r.state.excluded).toEqual(['h2']);
    expect(r.state.followers.h2).toBeUndefined();
    const [restart] = find(r.effects, 'emit-restart');
    expect(restart).toMatchObject({ attempt: 1, host: 'h2', code: 'host-lost', waitingFor: ['h3'], excluded: 'h2', replacement: 'h3' });
    expect(find(r.effects, 'log').map((l) => l.message)).toContain('h2 is excluded from the next attempt: its ranks move to the spare host h3 (a client following the run starts its agent)');
  });

  it("h2's agent relaunched by a client is refused; h3's agent joins, claims, and the attempt restarts with it", () => {
    let r = fold(withSpare(), running(), ...lostH2, { t: 'ranks-exited', attempt: 1, ok: false });
    expect(find(fold(withSpare(), r.state, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true, key: 'm2:/w' }).effects, 'refuse-link')).toHaveLength(1);
    r = fold(withSpare(), r.state, { t: 'hello', host: 'h3', ranks: 1, tokenOk: true, priorClosed: true, key: 'm3:/w' });
    expect(find(r.effects, 'accept-link')).toHaveLength(1);
    expect(r.effects).toContainEqual({ do: 'send', to: 'h3', msg: { t: 'claim' } });
    r = fold(withSpare(), r.state, { t: 'follower-msg', host: 'h3', msg: { t: 'ready' } });
    expect(r.effects).toContainEqual({ do: 'send', to: 'h3', msg: { t: 'go', attempt: 2, resume: true } });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
    expect(r.state.phase.k).toBe('running');
  });

  it('the spare never joins: the run fails spare-missing naming it and the excluded host', () => {
    const r = fold(withSpare(), running(), ...lostH2, { t: 'ranks-exited', attempt: 1, ok: false }, { t: 'timer', name: 'host-wait' });
    const ev = find(r.effects, 'event').pop();
    expect(ev!.event).toMatchObject({ code: 'spare-missing', host: 'h3' });
    expect(ev!.event.message).toMatch(/^the spare host h3 did not join within 60 s to take the ranks of h2/);
  });

  it('no spare (none named, or the one spare already in use): behaviour as before, the lost host is waited for', () => {
    for (const cfg of [sampleConfig('leader'), withSpare(['h2'])]) {
      const r = fold(cfg, running(), ...lostH2);
      expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h2'] });
      expect(r.state.excluded).toEqual([]);
      const [restart] = find(r.effects, 'emit-restart');
      expect(restart).toMatchObject({ host: 'h2', waitingFor: ['h2'] });
      expect(restart).not.toHaveProperty('excluded');
    }
  });

  // Rank 1 on h2 hung, says rank 0 on h1 (the tcp ring's watcher, reported by the leader's own rank).
  const hungOn = (host: string, rank: number): AgentInput[] => [
    { t: 'rank-error', event: errorEvent({ host, rank, message: `rank ${rank} on ${host} hung in allreduce #12`, code: 'rank-hung' }), fromExit: false },
    { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: false, silentMs: 100 }] },
  ];

  it('a hung rank on h2 (its agent alive), spare h3: h2 is told to end and excluded, the restart names h2 out and h3 in, waits for h3', () => {
    const r = fold(withSpare(), running(), ...hungOn('h2', 1));
    expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h3'] });
    expect(r.state.excluded).toEqual(['h2']);
    expect(r.state.followers.h2).toBeUndefined();
    const end = find(r.effects, 'send').find((x) => x.to === 'h2' && x.msg.t === 'end');
    expect(end?.msg).toMatchObject({ t: 'end', state: 'failed', reason: 'rank 1 on h2 hung: h2 is excluded from run r1, its ranks move to the spare host h3' });
    const [restart] = find(r.effects, 'emit-restart');
    expect(restart).toMatchObject({ attempt: 1, host: 'h2', rank: 1, code: 'rank-hung', waitingFor: ['h3'], excluded: 'h2', replacement: 'h3', waitMs: 60_000 });
    expect(find(r.effects, 'timer').map((t) => t.name)).toContain('host-wait');
    // h3 joins, claims, and the attempt restarts with it (h2's late exit is not waited for)
    let n = fold(withSpare(), r.state, { t: 'ranks-exited', attempt: 1, ok: false }, { t: 'hello', host: 'h3', ranks: 1, tokenOk: true, priorClosed: true, key: 'm3:/w' }, { t: 'follower-msg', host: 'h3', msg: { t: 'ready' } });
    expect(n.effects).toContainEqual({ do: 'send', to: 'h3', msg: { t: 'go', attempt: 2, resume: true } });
    expect(find(n.effects, 'send').filter((x) => x.to === 'h2')).toEqual([]);
    n = fold(withSpare(), r.state, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true, key: 'm2:/w' });
    expect(find(n.effects, 'refuse-link')).toHaveLength(1);
  });

  it('a hung rank on the leader\'s own host, or no spare: the restart stays on the same hosts, as before', () => {
    for (const [cfg, inputs] of [
      [withSpare(), hungOn('h1', 0)],
      [sampleConfig('leader'), hungOn('h2', 1)],
      [withSpare(['h2']), hungOn('h2', 1)],
    ] as const) {
      const r = fold(cfg, running(), ...inputs, { t: 'ranks-exited', attempt: 1, ok: false }, { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: false } });
      expect(r.state.excluded).toEqual([]);
      expect(find(r.effects, 'emit-restart')[0]).not.toHaveProperty('excluded');
      expect(r.effects).toContainEqual({ do: 'send', to: 'h2', msg: { t: 'go', attempt: 2, resume: true } });
    }
  });

  it("the hung exclusion is a row of the agent table (leader+spare, halting with a rank-hung root on h2, timer:blame), and the lost one beside it: one path (excludeForSpare)", () => {
    const rowOf = (input: string) => AGENT_TABLE_ROWS.find((r) => r.role === 'leader+spare' && r.from === 'halting' && r.input === input);
    expect(rowOf('timer:blame')).toEqual({ role: 'leader+spare', from: 'halting', input: 'timer:blame', to: 'restarting', effects: ['event rank-hung', 'record(state,error)', 'send end→h2', 'record(restarts)', 'emit-restart(h2 out, h3 in)', 'log', 'timer host-wait'] });
    // the row, walked: the same state the lost host's exclusion leaves (h2 out, h3 awaited, the host-wait timer), only the cause and the words differ
    const hung = transition(spareConfig(), spareState('halting'), SAMPLE_INPUTS['timer:blame']!);
    const lost = transition(spareConfig(), spareState('halting'), SAMPLE_INPUTS['timer:blame:h2-lost']!);
    for (const r of [hung, lost]) {
      expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h3'], told: true });
      expect(r.state.excluded).toEqual(['h2']);
      expect(r.state.followers.h2).toBeUndefined();
      expect(find(r.effects, 'timer')).toEqual([{ do: 'timer', name: 'host-wait', ms: 60_000 }]);
    }
    expect(find(hung.effects, 'emit-restart')[0]).toMatchObject({ code: 'rank-hung', rank: 1, excluded: 'h2', replacement: 'h3', waitingFor: ['h3'] });
    expect(find(lost.effects, 'emit-restart')[0]).toMatchObject({ code: 'host-lost', excluded: 'h2', replacement: 'h3', waitingFor: ['h3'] });
    expect(find(hung.effects, 'log').map((l) => l.message)).toEqual(['h2 is excluded from the next attempt (rank 1 hung there): its ranks move to the spare host h3 (a client following the run starts its agent)']);
    expect(find(lost.effects, 'log').map((l) => l.message)).toEqual(['h2 is excluded from the next attempt: its ranks move to the spare host h3 (a client following the run starts its agent)']);
  });
});
