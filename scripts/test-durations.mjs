#!/usr/bin/env node
// Writes test/file-durations.json from test-artifacts/file-times.json (test/file-times-reporter.ts;
// `.ci/run` and `npm test` write it) or, without it, a vitest JSON report (test-artifacts/vitest.json): each test file's seconds, which test/longest-first.ts uses to start
// the longest files first. Refresh it after a full run when files were added or got much slower or
// faster; a stale table only costs some balance between the workers, never a result.
//   node scripts/test-durations.mjs [test-artifacts/file-times.json | test-artifacts/vitest.json]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
// test-artifacts/file-times.json (test/file-times-reporter.ts) holds each file's whole time, its hooks
// included; the JSON report's startTime..endTime leaves beforeAll/afterAll out (a file whose beforeAll
// makes two runs read 1.9 s there for ~47 s), so it is the fallback only. A file named on the command
// line is read as what it is (a JSON report has `testResults`).
const artifacts = join(root, 'test-artifacts');
const source = process.argv[2] ?? (existsSync(join(artifacts, 'file-times.json')) ? join(artifacts, 'file-times.json') : join(artifacts, 'vitest.json'));
const data = JSON.parse(readFileSync(source, 'utf8'));
// Files this run did not time (a partial run: one tier) keep their old entry.
const table = join(root, 'test', 'file-durations.json');
const seconds = existsSync(table) ? JSON.parse(readFileSync(table, 'utf8')) : {};
if (!Array.isArray(data.testResults)) {
  for (const [file, t] of Object.entries(data)) seconds[file] = t.seconds;
  console.log(`from ${relative(process.cwd(), source) || source} (file times, hooks included)`);
} else {
  for (const t of data.testResults) {
    // The report names files by absolute path in the tree it ran in (a CI clone): keep the repo-relative part.
    const abs = String(t.name);
    const at = abs.search(/\/(test|trainer|electron|renderer)\//);
    const file = at >= 0 ? abs.slice(at + 1) : relative(root, abs);
    seconds[file] = Math.round((t.endTime - t.startTime) / 100) / 10;
  }
  console.log(`from ${relative(process.cwd(), source) || source} (a JSON report: hooks NOT included)`);
}
// (a file gone from the tree loses its entry)
const sorted = Object.fromEntries(Object.entries(seconds).filter(([f]) => existsSync(join(root, f))).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'test', 'file-durations.json'), JSON.stringify(sorted, null, 1) + '\n');
console.log(`test/file-durations.json: ${Object.keys(sorted).length} files, ${Object.values(sorted).reduce((s, v) => s + v, 0).toFixed(0)} s in all`);
