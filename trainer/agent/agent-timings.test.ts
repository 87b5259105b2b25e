// The leader agent's silent-follower blame (issue 25): a follower agent silent longer than
// Timings.silentFollowerMs (COHORT_SILENT_FOLLOWER_MS from the host env, production 5 s, pinned in
// trainer/protocol/timings.test.ts) is taken for the lost host behind its ranks' peer-lost. Pure.
import { describe, expect, it } from 'vitest';
import { readTimings, type LaunchSpec } from '../protocol';
import { errorEvent, type AgentConfig } from './agent-lifecycle';
import { agentConfigOf } from './agent-opts';
import { effectsOf, fold, sampleConfig, sampleState } from './agent-table';

const peerLost = errorEvent({ host: 'h1', rank: 0, message: 'peer lost', code: 'peer-lost' });

/** The root cause the leader records after a peer-lost, with h2's agent silent `silentMs`. */
function rootAfter(cfg: AgentConfig, silentMs: number) {
  const r = fold(cfg, sampleState('leader', 'running'), { t: 'rank-error', event: peerLost, fromExit: false }, { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: false, silentMs }] });
  return effectsOf(r.effects, 'event')[0]!.event;
}

describe('silent follower blame: Timings.silentFollowerMs', () => {
  it('the production 5 s: a follower silent 3 s is not blamed; one silent 6 s is', () => {
    expect(rootAfter(sampleConfig('leader'), 3000)).toMatchObject({ host: 'h1', code: 'peer-lost' });
    expect(rootAfter(sampleConfig('leader'), 6000)).toMatchObject({ host: 'h2', code: 'host-lost' });
  });

  it('COHORT_SILENT_FOLLOWER_MS in the host env reaches the leader agent: 2 s blames a follower silent 3 s', () => {
    const spec = { runId: 'r1', host: 'h1', worldSize: 2, ranks: [{ rank: 0 }], role: 'leader', env: {} } as unknown as LaunchSpec;
    const opts = { trainerEntry: '', enginesDir: '', workdir: '/w', runId: 'r1' };
    const quick = agentConfigOf(spec, { ...opts, timings: readTimings({ COHORT_SILENT_FOLLOWER_MS: '2000' }).timings });
    expect(quick.silentFollowerMs).toBe(2000);
    expect(rootAfter({ ...sampleConfig('leader'), ...quick, followerRanks: 1 }, 3000)).toMatchObject({ host: 'h2', code: 'host-lost' });
    expect(agentConfigOf(spec, { ...opts, timings: readTimings({}).timings }).silentFollowerMs).toBe(5000);
  });
});

describe('the follower connect window: Timings.followerConnectMs', () => {
  const spec = (role: 'leader' | 'follower') => ({ runId: 'r1', host: role === 'leader' ? 'h1' : 'h2', worldSize: 2, ranks: [{ rank: role === 'leader' ? 0 : 1 }], role, env: {}, control: { addr: '10.0.0.1', port: 1, token: 't' }, leader: 'h1' }) as unknown as LaunchSpec;
  const opts = { trainerEntry: '', enginesDir: '', workdir: '/w', runId: 'r1' };
  const startOf = (cfg: AgentConfig) => fold(cfg, sampleState(cfg.role, 'starting'), { t: 'prepared' }).effects;

  it('the production 30 s: a follower tries to reach its leader 30 s, the leader waits 60 s for its followers', () => {
    const follower = agentConfigOf(spec('follower'), { ...opts, timings: readTimings({}).timings });
    expect(effectsOf(startOf({ ...sampleConfig('follower'), ...follower }), 'connect')[0]).toMatchObject({ withinMs: 30_000 });
    const leader = agentConfigOf(spec('leader'), { ...opts, timings: readTimings({}).timings });
    expect(effectsOf(startOf({ ...sampleConfig('leader'), ...leader, followerRanks: 1 }), 'timer').find((t) => t.name === 'followers-deadline')).toMatchObject({ ms: 60_000 });
  });

  it('COHORT_FOLLOWER_CONNECT_MS in the host env reaches both agents: 4 s to connect, 8 s for the leader, and the followers-missing error says 8 s', () => {
    const timings = readTimings({ COHORT_FOLLOWER_CONNECT_MS: '4000' }).timings;
    const follower = agentConfigOf(spec('follower'), { ...opts, timings });
    expect(follower.connectMs).toBe(4000);
    expect(effectsOf(startOf({ ...sampleConfig('follower'), ...follower }), 'connect')[0]).toMatchObject({ withinMs: 4000 });
    const leader = { ...sampleConfig('leader'), ...agentConfigOf(spec('leader'), { ...opts, timings }), followerRanks: 1 };
    expect(effectsOf(startOf(leader), 'timer').find((t) => t.name === 'followers-deadline')).toMatchObject({ ms: 8000 });
    const missing = fold(leader, sampleState('leader', 'starting'), { t: 'prepared' }, { t: 'timer', name: 'followers-deadline' });
    expect(effectsOf(missing.effects, 'event')[0]!.event).toMatchObject({ code: 'followers-missing', message: expect.stringMatching(/connected within 8 s$/) });
  });
});
