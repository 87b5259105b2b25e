// Shared helpers for `npm run bench` scripts: run the real CLI, take medians, write results.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLineDecoder, type CohortEvent } from '../../trainer/protocol';

export const ROOT = join(import.meta.dirname, '..', '..');
export const RESULTS = join(ROOT, 'bench', 'results');

export { median } from '../../trainer/util/stats';

/** Runs `cohort run --local ... --json` to completion and returns its events. */
export function cohortRun(args: string[]): { events: CohortEvent[]; code: number | null; stderr: string } {
  const data = mkdtempSync(join(tmpdir(), 'cohort-bench-'));
  try {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), 'run', '--local', ...args, '--json'], {
      env: { ...process.env, COHORT_DATA_DIR: data },
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    const d = new EventLineDecoder();
    const events = [...d.push(r.stdout), ...d.end()].flatMap((x) => (x.kind === 'event' ? [x.event] : []));
    return { events, code: r.status, stderr: r.stderr };
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
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
