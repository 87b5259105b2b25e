// The slow-host warning on a real run (issue 14 item 15): two local ranks, rank 1 really slowed by
// SIGSTOP/SIGCONT bursts (it is stopped most of the time). The run must name rank 1 on its host,
// once, with its numbers, and never rank 0. No assertion on speed: only on which rank is named.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { LogEvent } from '../../trainer/protocol';
import { alive, runCli, tempDataDir } from '../helpers/cli';

const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

/** The rank process of this test's run with RANK=`rank` (found by its environment). */
function rankPid(rank: number): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const env = readFileSync(`/proc/${d}/environ`, 'latin1');
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0');
      if (env.includes(`COHORT_DATA_DIR=${data}\0`) && env.includes(`\0RANK=${rank}\0`) && cmd.includes('rank')) return Number(d);
    } catch {
      /* gone meanwhile */
    }
  }
  return undefined;
}

describe('slow-host warning', () => {
  it('names the rank that is really slowed (SIGSTOP bursts), with its host, once', async () => {
    const r = runCli(['run', '--local', '--ranks', '2', '--steps', '2000', '--log-steps', '2', '--warmup-steps', '1', '--stem', 'cifar', '--image-size', '8', '--batch-size', '4', '--classes', '10', '--json'], { env: { COHORT_DATA_DIR: data }, json: true });
    let pid: number | undefined;
    let throttling = true;
    try {
      await r.waitFor((e) => e.type === 'step', 180_000);
      pid = rankPid(1);
      expect(pid, 'rank 1 process').toBeDefined();
      // Throttle rank 1: stopped 150 ms, running 30 ms, until the warning comes.
      void (async () => {
        while (throttling && alive(pid!)) {
          process.kill(pid!, 'SIGSTOP');
          await new Promise((res) => setTimeout(res, 150));
          process.kill(pid!, 'SIGCONT');
          await new Promise((res) => setTimeout(res, 30));
        }
      })().catch(() => undefined);
      const warning = (await r.waitFor((e) => e.type === 'log' && (e as LogEvent).code === 'slow-rank', 240_000)) as LogEvent;
      expect(warning).toMatchObject({ level: 'warn', rank: 1, host: 'local', phase: 'compute' });
      expect(warning.message).toMatch(/^slow host: rank 1 on local: compute [\d.]+× its peers' median \(\d+ vs \d+ ms\/step, \d+ step windows in a row\)/);
    } finally {
      throttling = false;
      if (pid && alive(pid)) process.kill(pid, 'SIGCONT');
      r.child.kill('SIGINT'); // stops the run on its host
      await r.exit;
    }
    const slow = r.events.filter((e) => e.type === 'log' && (e as LogEvent).code === 'slow-rank') as LogEvent[];
    expect(slow.map((e) => e.rank)).toEqual([1]);
  });
});
