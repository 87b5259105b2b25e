// Scenarios of the host agent's lifecycle (agent-lifecycle.ts), each a few inputs folded through
// the pure transition: milliseconds, no process. The rows of every role × phase × input are in
// agent-table.test.ts; these walk the guarded paths (restarts left or not, lost hosts, Slurm, a
// relaunched leader) and issue 24's agent defects 3, 6 and 10.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoneEvent } from '../protocol';
import { BLAME_GRACE_MS, DECIDE_MS, errorEvent, followersTold, initialState, transition, type AgentConfig, type AgentInput, type Effect } from './agent-lifecycle';
import { effectsOf, fold, sampleConfig, sampleState } from './agent-table';
import { cleanStaleTemps } from './stale-temps';

const kinds = (fx: Effect[]) => fx.map((e) => e.do);
const find = effectsOf;
const leader = (o: Partial<AgentConfig> = {}): AgentConfig => ({ ...sampleConfig('leader'), ...o });
const follower = (o: Partial<AgentConfig> = {}): AgentConfig => ({ ...sampleConfig('follower'), ...o });
const rankErr = errorEvent({ host: 'h1', rank: 0, message: 'rank 0 on h1 exited with code 1', code: 'rank-exited' });
const done = (status: 'ok' | 'failed'): DoneEvent => ({ v: 1, time: 0, type: 'done', status, steps: 4, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: 1 });
const blame = (links = [{ host: 'h2', closed: false, silentMs: 100 }]): AgentInput => ({ t: 'timer', name: 'blame', links });

describe('host agent lifecycle: leader', () => {
  it('starts, says go once the follower is ready, ends ok once every rank of the attempt exited ok with rank 0 done', () => {
    const cfg = leader();
    let r = fold(cfg, initialState(), { t: 'begin' }, { t: 'prepared' }, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true, key: 'm2:/w' });
    expect(kinds(r.effects)).toEqual(['listen', 'timer', 'accept-link', 'claim']); // h1's key is first in the claim order
    r = fold(cfg, r.state, { t: 'slots-held' });
    expect(r.state.phase.k).toBe('rendezvous');
    expect(r.effects).toEqual([{ do: 'send', to: 'h2', msg: { t: 'claim' } }]);
    r = fold(cfg, r.state, { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } });
    expect(r.state.phase.k).toBe('running');
    expect(r.effects).toContainEqual({ do: 'send', to: 'h2', msg: { t: 'go', attempt: 1, resume: false } });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 1, resume: false });
    r = fold(cfg, r.state, { t: 'rank-done', event: done('ok') }, { t: 'ranks-exited', attempt: 1, ok: true, noDone: rankErr }, { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: true } });
    expect(r.state.phase).toEqual({ k: 'stopping', status: 'ok' });
    r = fold(cfg, r.state, { t: 'stopped' });
    expect(r.state.phase).toMatchObject({ k: 'done', status: 'ok' });
    expect(r.effects).toContainEqual({ do: 'exit', status: 'ok' });
  });

  it('a token that does not match, or a second hello for a joined host, is refused', () => {
    const s = sampleState('leader', 'rendezvous');
    expect(kinds(transition(leader(), s, { t: 'hello', host: 'h3', ranks: 1, tokenOk: false, priorClosed: true }).effects)).toEqual(['refuse-link']);
    expect(kinds(transition(leader(), s, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: false }).effects)).toEqual(['refuse-link']);
  });

  it('a rank failure with a restart left: halt, decide after the grace, restart every rank from the checkpoint once all exited', () => {
    const cfg = leader();
    let r = fold(cfg, sampleState('leader', 'running'), { t: 'rank-error', event: rankErr, fromExit: false });
    expect(r.state.phase.k).toBe('halting');
    expect(r.effects).toContainEqual({ do: 'timer', name: 'blame', ms: DECIDE_MS });
    expect(r.effects).toContainEqual({ do: 'send', to: 'h2', msg: { t: 'halt', attempt: 1 } });
    // the same rank's exit after its own report adds no second failure
    r = fold(cfg, r.state, { t: 'rank-error', event: rankErr, fromExit: true }, blame());
    expect(find(r.effects, 'event')).toHaveLength(1);
    expect(r.state.phase.k).toBe('restarting');
    r = fold(cfg, r.state, { t: 'ranks-exited', attempt: 1, ok: false });
    expect(find(r.effects, 'spawn')).toEqual([]); // h2 has not exited yet
    r = fold(cfg, r.state, { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: false } });
    expect(find(r.effects, 'emit-restart')[0]).toMatchObject({ attempt: 1, host: 'h1', rank: 0, code: 'rank-exited' });
    expect(r.effects).toContainEqual({ do: 'send', to: 'h2', msg: { t: 'go', attempt: 2, resume: true } });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
    expect(r.state.restarts).toBe(1);
  });

  it('no restarts left: the root cause fails the run', () => {
    const r = fold(leader({ maxRestarts: 0 }), sampleState('leader', 'running'), { t: 'rank-error', event: rankErr, fromExit: false }, blame());
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { host: 'h1', rank: 0, code: 'rank-exited' } });
  });

  it('only a peer-lost: the grace is longer, and a silent follower is blamed as a lost host', () => {
    const peerLost = errorEvent({ host: 'h1', rank: 0, message: 'peer lost', code: 'peer-lost' });
    let r = fold(leader(), sampleState('leader', 'running'), { t: 'rank-error', event: peerLost, fromExit: false });
    expect(r.effects).toContainEqual({ do: 'timer', name: 'blame', ms: BLAME_GRACE_MS });
    r = fold(leader(), r.state, blame([{ host: 'h2', closed: false, silentMs: 9000 }]));
    expect(find(r.effects, 'event')[0]!.event).toMatchObject({ host: 'h2', code: 'host-lost' });
    expect(r.state.phase).toMatchObject({ k: 'restarting', waitingFor: ['h2'] });
    expect(find(r.effects, 'emit-restart')[0]).toMatchObject({ host: 'h2', waitingFor: ['h2'], waitMs: 60_000 });
  });

  it('a lost follower host: waits for it, accepts its rejoin, restarts once it holds its slots; not back in time fails host-lost with a hint', () => {
    const cfg = leader();
    let r = fold(cfg, sampleState('leader', 'running'), { t: 'follower-lost', host: 'h2', why: 'connection closed' });
    expect(find(r.effects, 'send')).toEqual([]); // no halt to the lost host
    r = fold(cfg, r.state, blame([{ host: 'h2', closed: true, silentMs: 0 }]), { t: 'ranks-exited', attempt: 1, ok: false });
    expect(r.effects).toContainEqual({ do: 'close-link', host: 'h2', why: 'host lost' });
    expect(r.effects).toContainEqual({ do: 'timer', name: 'host-wait', ms: 60_000 });
    const waiting = r.state;
    r = fold(cfg, waiting, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true }, { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } });
    expect(kinds(r.effects)).toContain('accept-link');
    expect(r.effects).toContainEqual({ do: 'clear-timer', name: 'host-wait' });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
    expect(find(r.effects, 'emit-restart')).toEqual([]); // told at detection, not again
    r = fold(cfg, waiting, { t: 'timer', name: 'host-wait' });
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { host: 'h2', code: 'host-lost' } });
    expect(find(r.effects, 'event')[0]!.event.hint).toMatch(/bring h2 back/);
    // the host's state.json keeps the hint too: the one error shape (issue 24 item 5), not the event's alone
    r = fold(cfg, r.state, { t: 'stopped' });
    expect(find(r.effects, 'record')[0]!.patch.error).toMatchObject({ host: 'h2', rank: -1, code: 'host-lost', hint: expect.stringMatching(/bring h2 back/) });
  });

  it("a rank's error with a hint, no restarts left: the record's error (restarting, then failed) keeps the rank's hint", () => {
    const cfg = leader({ maxRestarts: 0 });
    const hinted = errorEvent({ host: 'h1', rank: 0, message: 'rank 0 on h1: out of memory', code: 'oom', hint: 'lower --batch-size' });
    let r = fold(cfg, sampleState('leader', 'running'), { t: 'rank-error', event: hinted, fromExit: false }, blame());
    r = fold(cfg, r.state, { t: 'ranks-exited', attempt: 1, ok: false }, { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: false } }, { t: 'stopped' });
    const errors = find(r.effects, 'record').map((e) => e.patch.error).filter(Boolean);
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toMatchObject({ code: 'oom', hint: 'lower --batch-size' });
  });

  it('Slurm: a lost node with restarts left waits for the scheduler, whose SIGTERM ends it failed with the node as the story; not requeueable fails at once', () => {
    const lost = blame([{ host: 'h2', closed: true, silentMs: 0 }]);
    const lose: AgentInput = { t: 'follower-lost', host: 'h2', why: 'connection closed' };
    let r = fold(leader({ scheduler: { requeueable: true } }), sampleState('leader', 'running'), lose, lost);
    expect(r.state.phase.k).toBe('awaiting-scheduler');
    r = fold(leader({ scheduler: { requeueable: true } }), r.state, { t: 'signal', why: 'agent received SIGTERM' });
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { code: 'host-lost' } });
    r = fold(leader({ scheduler: { requeueable: false } }), sampleState('leader', 'running'), lose, lost);
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed' });
  });

  it('Slurm requeue: past --max-restarts it trains nothing; within, every rank resumes at go as a restart, and spent restarts tell Slurm once', () => {
    const cfg = leader({ scheduler: { requeueable: true } });
    let r = fold(cfg, initialState(), { t: 'begin', requeued: { restarts: 2, host: 'n2', reason: 'node n2 failed' } });
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { code: 'slurm-requeued' } });
    r = fold(cfg, initialState(), { t: 'begin', requeued: { restarts: 1, host: 'n2', reason: 'node n2 failed' } }, { t: 'prepared' }, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true }, { t: 'slots-held' }, { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } });
    expect(find(r.effects, 'emit-restart')[0]).toMatchObject({ attempt: 1, host: 'n2', code: 'slurm-requeued' });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
    expect(find(r.effects, 'no-more-requeues')).toHaveLength(1);
  });

  it('a leader relaunched over its lost predecessor: restarting at once, the restart counted when every follower is back', () => {
    const cfg = leader();
    let r = fold(cfg, initialState(), { t: 'begin', relaunched: { state: 'running', lastStep: 40 } });
    expect(r.effects[0]).toMatchObject({ do: 'record', patch: { state: 'restarting', error: { code: 'host-lost' } } });
    r = fold(cfg, r.state, { t: 'prepared' }, { t: 'slots-held' }, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true }, { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } });
    expect(find(r.effects, 'emit-restart')[0]).toMatchObject({ attempt: 1, code: 'host-lost' });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
    // none left: the run ends host-lost, training nothing
    r = fold(leader({ maxRestarts: 0 }), initialState(), { t: 'begin', relaunched: { state: 'running', lastStep: 40 } });
    expect(r.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { code: 'host-lost' } });
  });

  it("rank 0's done: recorded as the run's end; a failed attempt's `done failed` while a restart replaces it is rank 0's log line only", () => {
    const cfg = leader();
    // running: the done is the run's (ok or failed), and counts for the attempt's exit; it is recorded
    // once this host's ranks have all exited, before anything else the exit brings, so the other ranks'
    // last output lines (read after rank 0's done) go into the record before it (seen: durable-run)
    for (const status of ['ok', 'failed'] as const) {
      const r = transition(cfg, sampleState('leader', 'running'), { t: 'rank-done', event: done(status) });
      expect(r.effects).toEqual([]);
      expect(r.state.doneAttempt).toBe(1);
      expect(r.state.heldDone).toEqual(done(status));
      const exited = transition(cfg, r.state, { t: 'ranks-exited', attempt: 1, ok: status === 'ok' });
      expect(exited.effects[0]).toEqual({ do: 'record-done', event: done(status) });
      expect(find(exited.effects, 'record-done')).toHaveLength(1);
      expect(exited.state.heldDone).toBeUndefined();
    }
    // no rank running (the ranks' exit was seen first): recorded at once
    const after = transition(cfg, { ...sampleState('leader', 'running'), ranksUp: false }, { t: 'rank-done', event: done('ok') });
    expect(after.effects).toEqual([{ do: 'record-done', event: done('ok') }]);
    // the torch engine's rank 0 says `done failed` after its error: the attempt is halting, then restarting
    let r = fold(cfg, sampleState('leader', 'running'), { t: 'rank-error', event: rankErr, fromExit: false }, { t: 'rank-done', event: done('failed') });
    expect(r.state.phase.k).toBe('halting');
    expect(find(r.effects, 'record-done')).toEqual([]);
    expect(find(r.effects, 'rank-line')).toEqual([{ do: 'rank-line', rank: 0, text: "(attempt 1's done failed not recorded: the run restarts)" }]);
    expect(r.state.doneAttempt).toBe(-1);
    r = fold(cfg, r.state, blame(), { t: 'rank-done', event: done('failed') });
    expect(r.state.phase.k).toBe('restarting');
    expect(find(r.effects, 'record-done')).toEqual([]);
    // no restart left: the failed attempt is the run's end, its done recorded
    r = fold(leader({ maxRestarts: 0 }), sampleState('leader', 'running'), { t: 'rank-error', event: rankErr, fromExit: false }, blame(), { t: 'rank-done', event: done('failed') });
    expect(r.state.phase.k).toBe('stopping');
    expect(find(r.effects, 'record-done')).toEqual([]); // held: the ranks are being stopped
    const stopped = transition(leader({ maxRestarts: 0 }), r.state, { t: 'stopped' });
    expect(stopped.effects.map((e) => e.do).slice(0, 2)).toEqual(['record-done', 'record']); // the done, then the terminal state
    expect(find(stopped.effects, 'record-done')).toEqual([{ do: 'record-done', event: done('failed') }]);
  });

  it('rank 0 exiting 0 without a done event is a failure (no-done)', () => {
    const r = fold(leader({ maxRestarts: 0 }), sampleState('leader', 'running'), { t: 'ranks-exited', attempt: 1, ok: true, noDone: errorEvent({ host: 'h1', rank: 0, message: 'no done', code: 'no-done' }) }, blame());
    expect(r.state.phase).toMatchObject({ k: 'stopping', error: { code: 'no-done' } });
  });

  it('queued: told once per run it waits behind; --no-queue fails at once with slots-busy', () => {
    const r = fold(leader(), initialState(), { t: 'slots-busy', slot: 0, busyBy: 'a' }, { t: 'slots-busy', slot: 0, busyBy: 'a' }, { t: 'slots-busy', slot: 0, busyBy: 'b' });
    expect(find(r.effects, 'emit-queued').map((e) => e.behind)).toEqual(['a', 'b']);
    const nq = fold(leader({ queue: false }), initialState(), { t: 'slots-busy', slot: 0, busyBy: 'a' });
    expect(nq.state.phase).toMatchObject({ k: 'stopping', error: { code: 'slots-busy' } });
  });
});

describe('host agent lifecycle: queue', () => {
  it('a leader queued behind a follower\'s slots stays queued once its own are held, and says go when the follower is ready', () => {
    const cfg = leader();
    let r = fold(cfg, initialState(), { t: 'prepared' }, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true }, { t: 'follower-msg', host: 'h2', msg: { t: 'queued', behind: 'r0' } }, { t: 'slots-held' });
    expect(r.state.phase).toMatchObject({ k: 'queued', by: 'h2' });
    expect(r.effects.filter((e) => e.do === 'record').map((e) => (e as Extract<Effect, { do: 'record' }>).patch.state)).toEqual(['queued']);
    r = fold(cfg, r.state, { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } });
    expect(r.state.phase.k).toBe('running');
    expect(r.effects).toContainEqual({ do: 'record', patch: { queuedBehind: undefined } });
  });
});

describe('host agent lifecycle: follower', () => {
  it('a lost leader with restarts left: ranks stopped, slots kept, waits; the relaunched leader reached → ready, then go', () => {
    const cfg = follower();
    let r = fold(cfg, sampleState('follower', 'running'), { t: 'leader-msg', msg: { t: 'checkpoint', step: 30 } }, { t: 'leader-lost', why: 'connection closed' });
    expect(r.state.phase).toEqual({ k: 'awaiting-leader', leader: 'h1' });
    expect(find(r.effects, 'emit-restart')[0]).toMatchObject({ host: 'h1', resumeStep: 30, waitingFor: ['h1'] });
    expect(kinds(r.effects)).toContain('kill-ranks');
    r = fold(cfg, r.state, { t: 'leader-connected' });
    expect(r.state.phase.k).toBe('halted');
    expect(r.effects).toContainEqual({ do: 'send', to: 'leader', msg: { t: 'ready' } });
    r = fold(cfg, r.state, { t: 'leader-msg', msg: { t: 'go', attempt: 2, resume: true } });
    expect(r.state.phase.k).toBe('running');
    expect(r.state.restarts).toBe(1);
  });

  it('a lost leader on Slurm, before the first go, or with no restarts left: fails leader-lost', () => {
    for (const [cfg, s] of [
      [follower({ scheduler: { requeueable: true } }), sampleState('follower', 'running')],
      [follower(), sampleState('follower', 'rendezvous')],
      [follower({ maxRestarts: 0 }), sampleState('follower', 'running')],
    ] as const) {
      expect(transition(cfg, s, { t: 'leader-lost', why: 'x' }).state.phase).toMatchObject({ k: 'stopping', error: { code: 'leader-lost' } });
    }
  });

  it('a pre-launch refusal is told to the leader once connected, then the follower ends (Slurm too: a follower with a control endpoint and no leader to wait for)', () => {
    const slurm = fold(follower({ scheduler: { requeueable: true }, leaderHost: undefined }), initialState(), { t: 'refused', error: { host: 'h2', rank: -1, message: 'no GPU', code: 'gpu-missing' } });
    expect(kinds(slurm.effects)).toEqual(['connect']);
    const r = fold(follower(), initialState(), { t: 'refused', error: { host: 'h2', rank: -1, message: 'no GPU', code: 'gpu-missing' } }, { t: 'leader-connected' });
    expect(r.effects).toContainEqual(expect.objectContaining({ do: 'send', to: 'leader', msg: expect.objectContaining({ t: 'error' }) }));
    expect(r.state.phase).toMatchObject({ k: 'stopping', error: { code: 'gpu-missing' } });
  });
});

describe('issue 24 defects, agent side', () => {
  it('defect 3: a record write error (ENOSPC) keeps the run going and is said once', () => {
    const io: AgentInput = { t: 'io-error', what: 'state.json', message: 'ENOSPC: no space left on device' };
    const r = fold(leader(), sampleState('leader', 'running'), io, io);
    expect(r.state.phase.k).toBe('running');
    expect(kinds(r.effects)).toEqual(['stderr']);
  });

  it('defect 10: a leader that refuses its start (no engine; busy slots wait for the hellos now: the claim order) answers a late follower hello with end at once', () => {
    const noEngine = { host: 'h1', rank: -1, message: '--engine torch: no Python with PyTorch found on this host', code: 'engine-unavailable' };
    let r = fold(leader(), initialState(), { t: 'begin' }, { t: 'refused', error: noEngine });
    expect(r.state.phase.k).toBe('stopping');
    expect(r.effects[0]).toEqual({ do: 'listen' }); // followers can reach it to hear the end
    r = fold(leader(), r.state, { t: 'hello', host: 'h2', ranks: 1, tokenOk: true, priorClosed: true });
    expect(r.effects).toEqual([{ do: 'accept-link', host: 'h2' }, { do: 'send', to: 'h2', msg: { t: 'end', state: 'failed', reason: noEngine.message } }]);
    expect(r.state.followers.h2).toBeDefined(); // the shell's linger stops once every follower rank was told
    expect(followersTold(leader(), r.state)).toBe(true);
    // the end is written, then the exit lingers for the followers (its slots released first: the shell)
    expect(fold(leader(), r.state, { t: 'stopped' }).effects).toContainEqual({ do: 'exit', status: 'failed', linger: true });
    // no linger: a one-host run, a relaunched leader, an end after the first start, an end not failed
    expect(fold(leader({ followerRanks: 0 }), initialState(), { t: 'begin' }, { t: 'refused', error: noEngine }, { t: 'stopped' }).effects).toContainEqual({ do: 'exit', status: 'failed' });
    const relaunched = fold(leader(), initialState(), { t: 'begin', relaunched: { state: 'running', lastStep: 3 } }, { t: 'fatal', error: noEngine }, { t: 'stopped' });
    expect(relaunched.effects).toContainEqual({ do: 'exit', status: 'failed' });
    expect(fold(leader(), sampleState('leader', 'stopping'), { t: 'stopped' }).effects).toContainEqual({ do: 'exit', status: 'failed' });
    expect(fold(leader(), initialState(), { t: 'begin' }, { t: 'signal', why: 'SIGTERM' }, { t: 'stopped' }).effects).toContainEqual({ do: 'exit', status: 'cancelled' });
    // and the follower, queued or waiting for go, ends on it (its exit releases its leases)
    for (const k of ['starting', 'queued', 'rendezvous'] as const) expect(transition(follower(), sampleState('follower', k), { t: 'leader-msg', msg: { t: 'end', state: 'failed', reason: 'x' } }).state.phase.k).toBe('stopping');
  });

  it('a spec without the control endpoint its hosts need fails bad-spec at prepared, naming the host; nothing listens or connects', () => {
    const l = fold(leader({ controlled: false }), initialState(), { t: 'begin' }, { t: 'prepared' });
    expect(l.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { host: 'h1', code: 'bad-spec', message: 'the spec has 1 rank(s) on other hosts but no control endpoint' } });
    expect(find(l.effects, 'listen')).toEqual([]);
    const f = fold(follower({ controlled: false }), initialState(), { t: 'begin' }, { t: 'prepared' });
    expect(f.state.phase).toMatchObject({ k: 'stopping', status: 'failed', error: { host: 'h2', code: 'bad-spec' } });
    expect(find(f.effects, 'connect')).toEqual([]);
    // a one-host run needs none, and listens for nobody
    const one = fold(leader({ controlled: false, followerRanks: 0 }), initialState(), { t: 'begin' }, { t: 'prepared' });
    expect(one.state.phase.k).toBe('starting');
    expect(kinds(one.effects)).toEqual(['claim']);
  });

  it('defect 6: an agent started over a stop marker ends cancelled without claiming or spawning', () => {
    const r = fold(leader(), initialState(), { t: 'begin', stopMarker: true }, { t: 'prepared' }, { t: 'stopped' });
    expect(r.state.phase).toMatchObject({ k: 'done', status: 'cancelled' });
    expect(kinds(r.effects)).not.toContain('claim');
    expect(kinds(r.effects)).not.toContain('spawn');
  });

  it('defect 12: checkpoint temp files whose writer is dead are removed; a live writer\'s and the checkpoints stay', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-temps-'));
    try {
      const dead = 2 ** 22 + 12345; // above pid_max's default: no such process
      for (const n of [`.ckpt-00000010.bin.${dead}.0a1b2c3d.tmp`, `torch-step00000010.pt.${dead}.tmp`, `.ckpt-00000020.bin.${process.pid}.ffee0011.tmp`, 'ckpt-00000010.bin']) writeFileSync(join(dir, n), 'x');
      expect(cleanStaleTemps(dir).sort()).toEqual([`.ckpt-00000010.bin.${dead}.0a1b2c3d.tmp`, `torch-step00000010.pt.${dead}.tmp`]);
      expect(readdirSync(dir).sort()).toEqual([`.ckpt-00000020.bin.${process.pid}.ffee0011.tmp`, 'ckpt-00000010.bin']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
