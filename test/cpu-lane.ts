// CPU tokens for the slow tier: at most SLOW_WORKERS files that compute run at once, while the files
// that mostly wait (WAIT_TEST_FILES in vitest.config.ts: Slurm's scheduler loops, long timeouts) run
// in a further worker beside them without a token. Why not a vitest project of their own with its own
// maxWorkers: vitest 4 refuses two projects with different maxWorkers at one sequence.groupOrder
// ("Projects "slow" and "wait" have different 'maxWorkers' but same 'sequence.groupOrder'"), and one
// pool of SLOW_WORKERS + 1 would run that many busy files at once (session 5: worse, when the tier was CPU-bound).
// So the slow group's pool has SLOW_WORKERS + 1 workers and every busy file takes a token first.
//
// The tokens live in the main vitest process (test/global-setup.ts starts this server on a Unix
// socket; `provide` hands its path to the workers). A busy file's setup file (test/cpu-lane-setup.ts)
// connects and waits for "go" before its test file is even imported; the token is held by that
// connection, so it comes back when the file's afterAll hooks are done (the setup file closes it) or
// when its worker exits or dies (the kernel closes it): a crashed file can never keep a token.
// Tokens go out first come, first served, so the longest-first order (test/longest-first.ts) holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Busy slow-tier files at once (COHORT_TEST_SLOW_WORKERS, default 4 since session 9: why in vitest.config.ts). */
export const CPU_TOKENS = Number(process.env.COHORT_TEST_SLOW_WORKERS ?? 4);
/** Waiting files at once beside them, without a token (COHORT_TEST_WAIT_LANE, default 1; 0: none). */
export const WAIT_LANE = Number(process.env.COHORT_TEST_WAIT_LANE ?? 1);

export interface CpuLane {
  path: string;
  close(): Promise<void>;
}

/** Serves `tokens` CPU tokens on a fresh Unix socket. */
export async function startCpuLane(tokens: number): Promise<CpuLane> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-cpu-lane-'));
  const path = join(dir, 'tokens.sock');
  let free = tokens;
  const waiting: Socket[] = [];
  const holding = new Set<Socket>();
  const grant = () => {
    while (free > 0 && waiting.length > 0) {
      const s = waiting.shift()!;
      if (s.destroyed) continue;
      free--;
      holding.add(s);
      s.write('go\n');
    }
  };
  const server = createServer((s) => {
    s.on('error', () => s.destroy());
    s.on('close', () => {
      if (holding.delete(s)) free++;
      const at = waiting.indexOf(s);
      if (at >= 0) waiting.splice(at, 1);
      grant();
    });
    waiting.push(s);
    grant();
  });
  await new Promise<void>((res, rej) => server.once('error', rej).listen(path, () => res()));
  return {
    path,
    close: () =>
      new Promise<void>((res) => {
        for (const s of [...holding, ...waiting]) s.destroy();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          res();
        });
      }),
  };
}

/** Waits for a token; resolves to the function that gives it back. */
export function takeCpuToken(path: string): Promise<() => void> {
  return new Promise((res, rej) => {
    const s = createConnection(path);
    s.once('error', (e) => rej(new Error(`test/cpu-lane: cannot reach the CPU-token server at ${path} (${e.message}); it is test/global-setup.ts's, so run vitest with this repo's vitest.config.ts`)));
    s.once('data', () => {
      s.unref(); // a held token must not keep the worker alive
      res(() => s.destroy());
    });
  });
}
