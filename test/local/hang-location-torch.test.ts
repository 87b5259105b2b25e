// Hang location and per-rank phases with the torch engine (issue 21 items 2 and 4), on a real
// run: three local torch ranks (Debian's CPU torch, /usr/bin/python3, DDP over gloo). Their step
// windows carry every rank's phases; then one rank is stopped with SIGSTOP: the run's first error
// must name it (rank, host, rank-hung, reportedBy, the heartbeat round, each rank's last phase),
// the run exits non-zero and leaves no process. The reporter (same host) sent it SIGUSR1: its agent
// continues it and ends it only once its Python stack is in rank-1.log (before: the halt's SIGTERM
// ended the stopped rank with the signal still pending, no stack). With the product's default hang
// settings the error comes ≤ 30 s after the stop (issue 21 item 4's goal, asserted; the measured
// seconds are printed).
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorEvent, StepEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { leftovers, rankPid } from '../helpers/run-procs';
import { PYTHON, torchUnavailableReason } from '../torch/engine-process';
import { tinyRun } from '../helpers/tiny';

const skip = torchUnavailableReason();
const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

describe.skipIf(skip !== undefined)(`hang location (torch)${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('phases per rank in every window; a stopped rank is named in the first error', async () => {
    const r = runCli(['run', '--local', '--engine', 'torch', '--ranks', '3', ...tinyRun({ width: null, batchSize: 4, logSteps: 2, steps: 5000 }), '--json'], { env: { COHORT_DATA_DIR: data, COHORT_PYTHON: PYTHON, COHORT_THREADS: '1', COHORT_HANG_FLOOR_MS: undefined }, json: true });
    let pid: number | undefined;
    try {
      const step = (await r.waitFor((e) => e.type === 'step' && e.step >= 5, 300_000)) as StepEvent;
      expect(step.rankPhases?.map((p) => p.rank)).toEqual([0, 1, 2]);
      for (const p of step.rankPhases!) expect(p.computeMs).toBeGreaterThan(0);
      expect(Math.min(...step.rankPhases!.map((p) => p.waitMs))).toBe(0); // the fastest rank's exchange is the exchange
      pid = rankPid(data, 1);
      expect(pid, 'rank 1 process').toBeDefined();
      process.kill(pid!, 'SIGSTOP');
      const stoppedAt = Date.now();
      const first = (await r.waitFor((e) => e.type === 'error', 120_000)) as ErrorEvent;
      const afterS = (first.time - stoppedAt) / 1000;
      console.log(`hang location (torch, 3 local ranks, default hang settings): first error ${afterS.toFixed(1)} s after SIGSTOP of rank 1: ${first.message}`);
      expect(first).toMatchObject({ rank: 1, host: 'local', code: 'rank-hung' });
      expect(first.reportedBy?.length).toBe(1);
      expect(first.reportedBy![0]).not.toBe(1);
      expect(first.collective).toMatch(/heartbeat/);
      expect(afterS, 'issue 21 item 4: the first error ≤ 30 s after the hang').toBeLessThanOrEqual(30);
      expect(first.lastPhases?.find((p) => p.rank === 1)?.phase).toMatch(/^(data|compute|exchange|optimizer)$/);
      expect((await r.exit).code).not.toBe(0);
      const runs = join(data, 'local', 'runs');
      const logs = readdirSync(runs).map((id) => join(runs, id, 'logs', 'rank-1.log')).filter((f) => existsSync(f));
      expect(logs.length, `rank-1.log under ${runs}`).toBe(1);
      expect(readFileSync(logs[0]!, 'utf8')).toMatch(/most recent call first\):\n\s+File ".*\.py", line \d+/);
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
