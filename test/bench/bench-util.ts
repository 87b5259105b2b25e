// Shared helpers for `npm run bench` scripts: run the real CLI, take medians, write results.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLineDecoder, type CohortEvent } from '../../trainer/protocol';
import { until as untilHelper } from '../helpers/until';

export const ROOT = join(import.meta.dirname, '..', '..');
export const RESULTS = join(ROOT, 'bench', 'results');

export { median } from '../../trainer/util/stats';

/** `--name value` from the command line, or `dflt`. */
export function stringOption(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith('--')) {
    console.error(`--${name} needs a value`);
    process.exit(2);
  }
  return v;
}

/** `--name N` with N a whole number ≥ min, or `dflt`; anything else exits with a message. */
export function countOption(name: string, dflt: number, min = 1): number {
  const raw = stringOption(name, String(dflt));
  const v = Number(raw);
  if (!(Number.isInteger(v) && v >= min)) {
    console.error(`--${name} needs a whole number ≥ ${min}, got ${raw}`);
    process.exit(2);
  }
  return v;
}

/** Runs `cohort run --local ... --json` to completion and returns its events. */
type RunResult = { events: CohortEvent[]; code: number | null; stderr: string };

function runArgs(args: string[], root = ROOT): { argv: string[]; data: string } {
  return { argv: [join(root, 'bin', 'cohort.mjs'), 'run', '--local', ...args, '--json'], data: mkdtempSync(join(tmpdir(), 'cohort-bench-')) };
}

function decodeRun(stdout: string, code: number | null, stderr: string): RunResult {
  const d = new EventLineDecoder();
  const events = [...d.push(stdout), ...d.end()].flatMap((x) => (x.kind === 'event' ? [x.event] : []));
  return { events, code, stderr };
}

export function cohortRun(args: string[]): RunResult {
  const { argv, data } = runArgs(args);
  try {
    const r = spawnSync(process.execPath, argv, { env: { ...process.env, COHORT_DATA_DIR: data }, encoding: 'utf8', maxBuffer: 1 << 28 });
    return decodeRun(r.stdout, r.status, r.stderr);
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}

/** The same, without blocking: for runs that must overlap in time. `root`: another built checkout's CLI (an A/B bench's base). */
export function cohortRunAsync(args: string[], root = ROOT): Promise<RunResult> {
  const { argv, data } = runArgs(args, root);
  return new Promise((resolve) => {
    const p = spawn(process.execPath, argv, { env: { ...process.env, COHORT_DATA_DIR: data } });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    p.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    p.on('close', (code) => {
      rmSync(data, { recursive: true, force: true });
      resolve(decodeRun(out, code, err));
    });
  });
}

export function writeResults(name: string, json: unknown, markdown: string): void {
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, `${name}.json`), JSON.stringify(json, null, 2) + '\n');
  writeFileSync(join(RESULTS, `${name}.md`), markdown + '\n');
  console.log(markdown);
}

export function machine(): Record<string, unknown> {
  return { node: process.versions.node, cpus: (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency, date: new Date().toISOString() };
}

/** `cohort ARGS` with `env`, its output captured (the cluster benches drive the real CLI). */
export function cohortCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    p.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    p.on('close', (code) => resolve({ code, stdout: out, stderr: err }));
  });
}

/** Polls `fn` every 50 ms until it returns a value (not false/undefined), or throws after `ms`: test/helpers/until.ts's, with the benches' defaults. */
export const until = <T>(what: string, fn: () => T | undefined | false, ms = 180_000): Promise<T> => untilHelper(what, fn, ms, 50);
