// Hang location (issue 21 item 4) on a real run: three local ranks, one stopped with SIGSTOP (its
// process and sockets stay, it just makes no progress). The run's first error must name that rank
// (rank, host), say it hung (code rank-hung), who noticed it, the op and its sequence number, and
// each rank's last phase; the run exits non-zero and leaves no process. With the product's default
// hang settings (no COHORT_HANG_FLOOR_MS: the 10-s floor) the error comes ≤ 30 s after the stop
// (issue 21 item 4's goal, asserted; the measured seconds are printed). The floor knob reaching the
// ranks is proven by test/cluster/spare-host.test.ts's hung-host case, which sets it.
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { leftovers, rankPid } from '../helpers/run-procs';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

describe('hang location (tfjs)', () => {
  it('names the stopped rank in the first error, with the op, its sequence number and each rank\'s last phase', async () => {
    const r = runCli(['run', '--local', '--ranks', '3', ...tinyRun({ width: null, batchSize: 4, logSteps: 2, steps: 5000 }), '--json'], { env: { COHORT_DATA_DIR: data, COHORT_HANG_FLOOR_MS: undefined }, json: true });
    let pid: number | undefined;
    try {
      await r.waitFor((e) => e.type === 'step', 240_000);
      await r.waitFor((e) => e.type === 'step' && e.step >= 6, 120_000); // a few windows of gaps measured
      pid = rankPid(data, 2);
      expect(pid, 'rank 2 process').toBeDefined();
      process.kill(pid!, 'SIGSTOP');
      const stoppedAt = Date.now();
      const first = (await r.waitFor((e) => e.type === 'error', 120_000)) as ErrorEvent;
      const afterS = (first.time - stoppedAt) / 1000;
      console.log(`hang location (tfjs, 3 local ranks, default hang settings): first error ${afterS.toFixed(1)} s after SIGSTOP of rank 2: [${first.code}] rank ${first.rank}: ${first.message}`);
      expect(first).toMatchObject({ rank: 2, host: 'local', code: 'rank-hung', reportedBy: [0] });
      expect(first.message).toMatch(/at least 10 s, at most the peer timeout/); // the product's floor, not a test's
      expect(afterS, 'issue 21 item 4: the first error ≤ 30 s after the hang').toBeLessThanOrEqual(30);
      expect(first.collective).toBeTruthy();
      expect(first.seq).toBeGreaterThan(0);
      expect(first.lastPhases?.find((p) => p.rank === 2)?.phase).toMatch(/^(data|compute|exchange|optimizer)$/);
      expect(first.lastPhases?.map((p) => p.rank)).toEqual([0, 1, 2]);
      const exit = await r.exit;
      expect(exit.code).not.toBe(0);
    } finally {
      if (pid) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          /* gone */
        }
      }
      r.child.kill('SIGINT');
      await r.exit;
    }
    expect(await leftovers(data)).toEqual([]);
  });
});
