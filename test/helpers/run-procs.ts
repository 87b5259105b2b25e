// The processes of one test's run, found by the data dir in their environment (COHORT_DATA_DIR is
// the test's own temp dir, so other runs on the machine never count): ranks by RANK, and all of
// them for the "nothing left behind" checks.
import { readFileSync, readdirSync } from 'node:fs';
import { alive } from './cli';

function runProcs(dataDir: string): { pid: number; env: string; cmd: string[] }[] {
  const out: { pid: number; env: string; cmd: string[] }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const env = readFileSync(`/proc/${d}/environ`, 'latin1');
      if (!env.includes(`COHORT_DATA_DIR=${dataDir}\0`)) continue;
      const stat = readFileSync(`/proc/${d}/stat`, 'latin1');
      if (/\) Z /.test(stat)) continue; // a zombie is already dead
      out.push({ pid: Number(d), env, cmd: readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0') });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** The rank process of the run with RANK=`rank` (tfjs: `... rank`; torch: python). */
export function rankPid(dataDir: string, rank: number): number | undefined {
  return runProcs(dataDir).find((p) => `\0${p.env}`.includes(`\0RANK=${rank}\0`) && (p.cmd.includes('rank') || p.cmd.some((c) => c.endsWith('.py'))))?.pid;
}

/**
 * Slows a process for real, as a straggler: stopped 150 ms, running 30 ms, over and over until the
 * returned function is called (which leaves it running). For the slow-rank / straggler tests.
 */
export function throttle(pid: number): () => void {
  let on = true;
  void (async () => {
    while (on && alive(pid)) {
      process.kill(pid, 'SIGSTOP');
      await new Promise((res) => setTimeout(res, 150));
      process.kill(pid, 'SIGCONT');
      await new Promise((res) => setTimeout(res, 30));
    }
  })().catch(() => undefined);
  return () => {
    on = false;
    if (alive(pid)) process.kill(pid, 'SIGCONT');
  };
}

/** Every process of the run still there (agent, ranks), waiting up to `graceMs` for them to go; `except`: e.g. the `cohort serve` that is still meant to run. */
export async function leftovers(dataDir: string, graceMs = 5000, except: (number | undefined)[] = []): Promise<string[]> {
  const end = Date.now() + graceMs;
  for (;;) {
    const left = runProcs(dataDir).filter((p) => !except.includes(p.pid)).map((p) => `${p.pid} ${p.cmd.join(' ').slice(0, 120)}`);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 250));
  }
}
