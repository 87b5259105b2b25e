// Spawns real rank processes (node --import tsx) on loopback and cleans every one up.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Scenario } from './scenario';
import { ROOT } from '../helpers/cli';
import { freePort } from '../helpers/free-port';

const WORKER = join(import.meta.dirname, 'rank-worker.ts');

export interface Line {
  type: string;
  time: number;
  [k: string]: unknown;
}

export interface RankProc {
  rank: number;
  child: ChildProcess;
  lines: Line[];
  stderr: string;
  exited: Promise<number | null>;
  /** Resolves with the first line of `type` (rejects if the process exits first or after `ms`). */
  waitFor(type: string, ms?: number): Promise<Line>;
}

export { freePort };

export class RankGroup {
  readonly procs: RankProc[] = [];

  spawn(rank: number, env: Record<string, string>, scenario: Scenario): RankProc {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      cwd: ROOT,
      env: { ...process.env, ...env, RANK: String(rank), COHORT_TEST_SCENARIO: JSON.stringify(scenario) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Line[] = [];
    const subs = new Set<() => void>();
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          lines.push(JSON.parse(text) as Line);
        } catch {
          lines.push({ type: 'raw', time: Date.now(), text });
        }
        subs.forEach((f) => f());
      }
    });
    const proc: RankProc = {
      rank, child, lines, stderr: '',
      exited: new Promise((resolve) => child.on('exit', (code) => { subs.forEach((f) => f()); resolve(code); })),
      waitFor: (type, ms = 60_000) =>
        new Promise((resolve, reject) => {
          const check = (): void => {
            const hit = lines.find((l) => l.type === type);
            if (hit) return done(() => resolve(hit));
            if (child.exitCode !== null || child.signalCode !== null) done(() => reject(new Error(`rank ${rank} exited before '${type}': ${JSON.stringify(lines)}\n${proc.stderr}`)));
          };
          const timer = setTimeout(() => done(() => reject(new Error(`rank ${rank}: no '${type}' within ${ms} ms: ${JSON.stringify(lines)}\n${proc.stderr}`))), ms);
          const done = (f: () => void): void => {
            clearTimeout(timer);
            subs.delete(check);
            f();
          };
          subs.add(check);
          check();
        }),
    };
    child.stderr!.on('data', (d: Buffer) => (proc.stderr += d.toString()));
    this.procs.push(proc);
    return proc;
  }

  /**
   * Spawn ranks 0..n-1 with a shared rendezvous on a fresh loopback port. Each rank gets its own
   * COHORT_HOST (`host-<rank>`), so ring links use TCP as between machines; with `sameHost` they
   * all claim host 'local' and same-machine links use Unix sockets.
   */
  async start(n: number, scenario: Scenario, opts: { sameHost?: boolean } = {}): Promise<RankProc[]> {
    const port = await freePort();
    return Array.from({ length: n }, (_, r) =>
      this.spawn(r, { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), WORLD_SIZE: String(n), LOCAL_RANK: String(r), COHORT_HOST: opts.sameHost ? 'local' : `host-${r}` }, scenario),
    );
  }

  /** Kill whatever is still running (SIGCONT first, in case a test stopped one) and wait for exits. */
  async dispose(): Promise<void> {
    for (const p of this.procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGCONT');
        p.child.kill('SIGKILL');
      }
    }
    await Promise.all(this.procs.map((p) => p.exited));
  }
}
