#!/usr/bin/env node
// Writes test/file-durations.json from a vitest JSON report (`.ci/run` writes one to
// test-artifacts/vitest.json): each test file's seconds, which test/longest-first.ts uses to start
// the longest files first. Refresh it after a full run when files were added or got much slower or
// faster; a stale table only costs some balance between the workers, never a result.
//   node scripts/test-durations.mjs [test-artifacts/vitest.json]
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const report = JSON.parse(readFileSync(process.argv[2] ?? join(root, 'test-artifacts', 'vitest.json'), 'utf8'));
const seconds = {};
for (const t of report.testResults) {
  // The report names files by absolute path in the tree it ran in (a CI clone): keep the repo-relative part.
  const abs = String(t.name);
  const at = abs.search(/\/(test|trainer|electron|renderer)\//);
  const file = at >= 0 ? abs.slice(at + 1) : relative(root, abs);
  seconds[file] = Math.round((t.endTime - t.startTime) / 100) / 10;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'test', 'file-durations.json'), JSON.stringify(sorted, null, 1) + '\n');
console.log(`test/file-durations.json: ${Object.keys(sorted).length} files, ${Object.values(sorted).reduce((s, v) => s + v, 0).toFixed(0)} s in all`);
