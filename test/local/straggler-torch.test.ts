// The straggler with the torch engine (issue 21 item 2) on a real run: three local torch ranks
// (Debian's CPU torch, DDP over gloo), rank 1 really slowed by SIGSTOP/SIGCONT bursts. The run must
// name rank 1, in the compute phase (the DDP comm hook tells compute from waiting), once, and
// never another rank; the step windows carry the split. No assertion on speed.
// A step event every step (`--log-steps 1`; 2 until session 18): a window is then one throttled step
// (~5 s at full width, ~28 stop/run bursts, so its slowdown is steady) instead of two, and the three
// windows the rule needs took 17.9–19.2 s instead of 32.8 (the file alone 30 s, was 46; beside
// hang-location-torch and slow-rank at once, 48 s, still named after exactly 3 windows at 6.3×).
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { LogEvent, StepEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { leftovers, rankPid, throttle } from '../helpers/run-procs';
import { PYTHON, torchUnavailableReason } from '../torch/engine-process';
import { tinyRun } from '../helpers/tiny';

const skip = torchUnavailableReason();
const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

describe.skipIf(skip !== undefined)(`straggler (torch)${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('names the rank slowed for real, in the compute phase', async () => {
    const started = Date.now();
    const r = runCli(['run', '--local', '--engine', 'torch', '--ranks', '3', ...tinyRun({ width: null, batchSize: 4, logSteps: 1, steps: 5000 }), '--json'], { env: { COHORT_DATA_DIR: data, COHORT_PYTHON: PYTHON, COHORT_THREADS: '1' }, json: true });
    let pid: number | undefined;
    let stopThrottle = (): void => undefined;
    try {
      await r.waitFor((e) => e.type === 'step' && e.step >= 3, 300_000);
      pid = rankPid(data, 1);
      expect(pid, 'rank 1 process').toBeDefined();
      const since = Date.now();
      stopThrottle = throttle(pid!);
      const warning = (await r.waitFor((e) => e.type === 'log' && (e as LogEvent).code === 'slow-rank', 300_000)) as LogEvent;
      expect(warning).toMatchObject({ level: 'warn', rank: 1, host: 'local', phase: 'compute' });
      expect(warning.message).toMatch(/^slow host: rank 1 on local: compute [\d.]+× its peers' median/);
      const windows = r.events.filter((e): e is StepEvent => e.type === 'step' && e.time >= since && e.time <= warning.time);
      console.log(`torch straggler named after ${windows.length} step window(s) of throttling (${((warning.time - since) / 1000).toFixed(1)} s; step 3 after ${((since - started) / 1000).toFixed(1)} s); last: ${JSON.stringify(windows.at(-1)?.rankPhases)}`);
      expect(windows.length).toBeLessThanOrEqual(4);
    } finally {
      stopThrottle();
      r.child.kill('SIGINT');
      await r.exit;
    }
    const slow = r.events.filter((e) => e.type === 'log' && (e as LogEvent).code === 'slow-rank') as LogEvent[];
    expect(slow.map((e) => e.rank)).toEqual([1]);
    expect(await leftovers(data)).toEqual([]);
  });
});
