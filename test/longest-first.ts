// Test files start longest first (within each groupOrder, across its projects: the slow and wait
// projects share one pool, test/cpu-lane.ts; groups keep their order), by the
// per-file seconds in test/file-durations.json (scripts/test-durations.mjs writes it from a vitest
// JSON report). Why: with two files at a time, a 3-minute file that starts last leaves one worker
// idle while it runs. Vitest orders by its own cache, which a fresh CI clone does not have: there it
// kept the glob order, and the quiet baseline's slow tier took 1,056 s for 1,925 s of file time in
// two workers (ideal ~963 s). Files not in the table (new ones) go first, as vitest does with
// unknown files. Only the order changes, never which files run.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const root = join(import.meta.dirname, '..');

function durations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(join(root, 'test', 'file-durations.json'), 'utf8')) as Record<string, number>;
  } catch {
    return {}; // no table: every file is unknown, and the order is vitest's
  }
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = durations();
    const known = (f: TestSpecification) => seconds[relative(root, f.moduleId)];
    const byVitest = await super.sort(files);
    const rank = new Map(byVitest.map((f, i) => [f, i]));
    return [...byVitest].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      const [sa, sb] = [known(a), known(b)];
      if (sa === undefined || sb === undefined) return sa === sb ? rank.get(a)! - rank.get(b)! : sa === undefined ? -1 : 1;
      return sb - sa || rank.get(a)! - rank.get(b)!;
    });
  }
}
