// Runs the real `cohort` CLI (the built dist/cli.mjs, which runs the built trainer bundle) as a
// child process, the way a user or a script would, and collects its output and events.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLineDecoder, type CohortEvent } from '../../trainer/protocol';

export const ROOT = join(import.meta.dirname, '..', '..');
export const COHORT = join(ROOT, 'bin', 'cohort.mjs');

export interface CliRun {
  child: ChildProcess;
  events: CohortEvent[];
  stdout: string;
  stderr: string;
  invalidLines: number;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  /** Resolves with the first event that matches. */
  waitFor(pred: (e: CohortEvent) => boolean, timeoutMs?: number): Promise<CohortEvent>;
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'cohort-test-data-'));
}

export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv; json?: boolean } = {}): CliRun {
  const started = Date.now();
  const child = spawn(process.execPath, [COHORT, ...args], { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const r: CliRun = {
    child,
    events: [],
    stdout: '',
    stderr: '',
    invalidLines: 0,
    // 'exit' can come before the last stdout/stderr chunks are read (fresh-clone CI saw `profiles -h` exit 0
    // with stdout still empty); 'close' comes after them. A process that left a child holding the pipes
    // open would never 'close', so after 'exit' at most 2 s are waited for it.
    exit: new Promise((resolve) => {
      let closed = false;
      child.on('close', () => (closed = true));
      child.on('exit', (code, signal) => {
        const ms = Date.now() - started;
        if (closed) return resolve({ code, signal, ms });
        const t = setTimeout(() => resolve({ code, signal, ms }), 2000);
        child.on('close', () => {
          clearTimeout(t);
          resolve({ code, signal, ms });
        });
      });
    }),
    waitFor: (pred, timeoutMs = 120_000) =>
      new Promise((resolve, reject) => {
        const found = r.events.find(pred);
        if (found) return resolve(found);
        const t = setTimeout(() => reject(new Error(`timed out waiting for an event; stderr:\n${r.stderr.slice(-2000)}`)), timeoutMs);
        waiters.push((e) => {
          if (!pred(e)) return false;
          clearTimeout(t);
          resolve(e);
          return true;
        });
        void r.exit.then(() => {
          clearTimeout(t);
          reject(new Error(`the CLI exited before the event arrived; stderr:\n${r.stderr.slice(-2000)}`));
        });
      }),
  };
  const waiters: ((e: CohortEvent) => boolean)[] = [];
  const decoder = new EventLineDecoder();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    r.stdout += chunk;
    if (!opts.json) return;
    for (const res of decoder.push(chunk)) {
      if (res.kind !== 'event') {
        r.invalidLines++;
        continue;
      }
      r.events.push(res.event);
      for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!(res.event)) waiters.splice(i, 1);
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (r.stderr += chunk));
  return r;
}

/** Is a process with this pid still alive? */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
