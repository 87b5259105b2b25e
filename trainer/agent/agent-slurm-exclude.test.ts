// Bad node out under Slurm (issue 21 item 5), the leader agent's part, folded through the pure
// transition: a rank fails on a node that stays up, with restarts left, under a requeueing scheduler
// → the shell is asked to run the job again without that node (requeue-excluding); no idle node
// (requeue-refused) → the restart inside the allocation, as before; the next run of the job (begin
// with requeued.excluded) tells the restart with `excluded` and `replacement`. The real Slurm side:
// test/slurm/slurm-bad-node.test.ts.
import { describe, expect, it } from 'vitest';
import { errorEvent, type AgentConfig, type AgentInput } from './agent-lifecycle';
import { effectsOf, fold, sampleConfig, sampleState } from './agent-table';

const slurm = (requeueable = true): AgentConfig => ({ ...sampleConfig('leader'), host: 'n1', scheduler: { requeueable } });
const rank1Failed: AgentInput[] = [
  { t: 'follower-msg', host: 'h2', msg: { t: 'error', event: errorEvent({ host: 'n2', rank: 1, message: 'rank 1 on n2 exited with code 137', code: 'rank-exited' }) } },
  { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: false, silentMs: 100 }] },
];

describe('bad node out under Slurm: a failed rank\'s node left out of the next run of the job', () => {
  it('a rank fails on n2 (node up): the shell is asked to requeue without n2; the leader awaits Slurm', () => {
    const r = fold(slurm(), sampleState('leader', 'running'), ...rank1Failed);
    expect(r.state.phase).toMatchObject({ k: 'awaiting-scheduler', excluding: { host: 'n2', rank: 1 } });
    expect(effectsOf(r.effects, 'requeue-excluding')).toMatchObject([{ node: 'n2', cause: { rank: 1, code: 'rank-exited' } }]);
    expect(effectsOf(r.effects, 'emit-restart')).toEqual([]);
    expect(effectsOf(r.effects, 'spawn')).toEqual([]);
  });

  it('a rank on n2 hung, says rank 0 on the leader\'s node, while rank 0 on n1 lost its peer: the hung rank\'s node is the one left out', () => {
    const r = fold(
      slurm(),
      sampleState('leader', 'running'),
      { t: 'rank-error', event: errorEvent({ host: 'n1', rank: 0, message: 'rank 0 on n1: peer rank 1 closed its connection', code: 'peer-lost' }), fromExit: false },
      { t: 'rank-error', event: errorEvent({ host: 'n2', rank: 1, message: 'rank 1 on n2 hung: silent for 10.2 s', code: 'rank-hung' }), fromExit: false },
      { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: false, silentMs: 100 }] },
    );
    expect(effectsOf(r.effects, 'requeue-excluding')).toMatchObject([{ node: 'n2', cause: { rank: 1, code: 'rank-hung' } }]);
  });

  it('no idle node (requeue-refused): restarts inside the allocation once the ranks exited, as before', () => {
    let r = fold(slurm(), sampleState('leader', 'running'), ...rank1Failed, { t: 'ranks-exited', attempt: 1, ok: false }, { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: false } });
    r = fold(slurm(), r.state, { t: 'requeue-refused', why: "no idle node in partition debug to take n2's place" });
    expect(effectsOf(r.effects, 'log').map((l) => l.message)).toContain("restarting inside the allocation, on n2 again: no idle node in partition debug to take n2's place");
    const [restart] = effectsOf(r.effects, 'emit-restart');
    expect(restart).toMatchObject({ attempt: 1, host: 'n2', rank: 1 });
    expect(restart).not.toHaveProperty('excluded');
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
  });

  it('not requeueable (--max-restarts 0 submits --no-requeue; or no scheduler): no requeue asked', () => {
    for (const cfg of [slurm(false), sampleConfig('leader')]) {
      const r = fold({ ...cfg, maxRestarts: 1 }, sampleState('leader', 'running'), ...rank1Failed);
      expect(effectsOf(r.effects, 'requeue-excluding')).toEqual([]);
      expect(r.state.phase.k).toBe('restarting');
    }
  });

  it('the next run of the job (requeued without n2, n3 in its place): the restart names both and the failed rank', () => {
    const requeued = { restarts: 1, host: 'n2', rank: 1, reason: 'Slurm requeued job 7 (run 2) without node n2 (n3 in its place): rank 1 on n2 failed', excluded: 'n2', replacement: 'n3' };
    let r = fold(slurm(), sampleState('leader', 'starting'), { t: 'begin', requeued }, { t: 'hello', host: 'n3', ranks: 1, tokenOk: true, priorClosed: false, key: 'm3:/w' }, { t: 'slots-held' });
    r = fold(slurm(), r.state, { t: 'follower-msg', host: 'n3', msg: { t: 'ready' } });
    const [restart] = effectsOf(r.effects, 'emit-restart');
    expect(restart).toMatchObject({ attempt: 1, host: 'n2', rank: 1, code: 'slurm-requeued', excluded: 'n2', replacement: 'n3' });
    expect(r.effects).toContainEqual({ do: 'spawn', attempt: 2, resume: true });
  });
});
