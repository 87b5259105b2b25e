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
