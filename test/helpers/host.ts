// Runs the built trainer bundle's host commands (run-start, run-follow, run-stop, run-status) the way
// core does on a host: a child process with cwd = a workdir, the LaunchSpec on stdin.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLineDecoder, decodeRunState, type CohortEvent, type LaunchSpec, type RunStateRecord } from '../../trainer/protocol';
import { afterAll } from 'vitest';
import { ROOT } from './cli';
import { slowCommandNode } from './slow-host';
import { tinyConfig } from './tiny';
import { until } from './until';

export { tinyConfig };
export { freePort } from './free-port';

export const BUNDLE = join(ROOT, 'resources', 'trainer', 'cohort-trainer.mjs');

export interface HostCmdResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export function hostCmd(workdir: string, args: string[], opts: { stdin?: string; onStdout?: (chunk: string) => void } = {}): Promise<HostCmdResult> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BUNDLE, ...args], { cwd: workdir, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    opts.onStdout?.(c);
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  if (opts.stdin !== undefined) child.stdin.end(opts.stdin);
  else child.stdin.end();
  return new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr, ms: Date.now() - t0 })));
}

export const tempWorkdir = (): string => mkdtempSync(join(tmpdir(), 'cohort-host-'));
export const removeDir = (d: string) => rmSync(d, { recursive: true, force: true });



export function spec(p: Partial<Omit<LaunchSpec, 'config'>> & Pick<LaunchSpec, 'runId' | 'host' | 'ranks' | 'worldSize' | 'masterPort'> & { config: Record<string, unknown> }): string {
  return JSON.stringify({ masterAddr: '127.0.0.1', env: {}, heartbeatTimeoutMs: 0, role: 'leader', ...p, config: { ...tinyConfig, ...p.config } });
}

export function readStateOf(workdir: string, runId: string): RunStateRecord | undefined {
  const path = join(workdir, 'runs', runId, 'state.json');
  return existsSync(path) ? decodeRunState(JSON.parse(readFileSync(path, 'utf8'))) : undefined;
}

/**
 * A run's events as its host record holds them so far. The protocol's own line decoder: `push` gives
 * only whole lines, so a live record's half-written last line waits for the next read (ci20 saw one
 * fail JSON.parse). A line that is not a known, valid event throws, as before.
 */
export function eventsOf(workdir: string, runId: string): CohortEvent[] {
  const path = join(workdir, 'runs', runId, 'events.jsonl');
  if (!existsSync(path)) return [];
  return new EventLineDecoder().push(readFileSync(path, 'utf8')).map((r) => {
    if (r.kind === 'event') return r.event;
    throw new Error(`${path}: ${r.kind === 'invalid' ? `line ${r.line}: ${r.error}: ${r.text}` : `unknown event type ${r.eventType}`}`);
  });
}

/** until() (test/helpers/until.ts) polling every 50 ms. */
export const waitUntil = <T>(what: string, fn: () => T | undefined | false, timeoutMs = 90_000, everyMs = 50): Promise<T> => until(what, fn, timeoutMs, everyMs);

export interface Proc {
  pid: number;
  ppid: number;
  args: string;
}

/** Every process whose command line names the run id (agents and ranks of that run). */
export function processesOf(runId: string): Proc[] {
  const out = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }))
    .filter((p) => (p.args.split(/\s+/).includes(runId) || p.args.includes(`cohort_run=${runId}`)) && /cohort-trainer\.mjs|cohort_run=/.test(p.args));
}

export const ranksOf = (runId: string) => processesOf(runId).filter((p) => / rank --run /.test(p.args));

/** Kills what a failed test left behind (by pid, only processes naming the test's run ids). */
export function killLeftovers(runIds: string[]): void {
  for (const id of runIds) for (const p of processesOf(id)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * Temp workdirs and run ids for one test file, all cleaned up after it (leftover processes of those
 * runs killed, the workdirs removed): `workdir()` makes one, `runId(name)` names a run uniquely.
 */
export function hostTestScope(): { workdir: () => string; runId: (name: string) => string } {
  const dirs: string[] = [];
  const ids: string[] = [];
  afterAll(() => {
    killLeftovers(ids);
    dirs.forEach(removeDir);
  });
  return {
    workdir: () => {
      const d = tempWorkdir();
      dirs.push(d);
      return d;
    },
    runId: (name) => {
      const id = `${name}-${process.pid}-${Date.now().toString(36)}`;
      ids.push(id);
      return id;
    },
  };
}

/** A `node` that answers run-status 3 s late (the command itself is the real one): a host slow to answer, as on a loaded machine. */
export function slowStatusNode(dir: string): string {
  return slowCommandNode(dir, 'run-status', 3);
}
