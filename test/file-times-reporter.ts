// A vitest reporter that writes test-artifacts/file-times.json: each test file's whole time, hooks
// included. Why: the JSON reporter's startTime..endTime and its tests' durations leave out beforeAll
// (seen: test/e2e/system-compare.test.ts, whose beforeAll makes two real runs for ~45 s, was 1.9 s
// there; so test/longest-first.ts started it last, and the serial tier waited ~45 s on it alone in
// every fresh-clone CI, ci17–ci19). Per file: `seconds` = import + every test and hook (what
// longest-first wants), `setup` = the setup files' import (the slow tier's CPU-token wait is in it:
// test/cpu-lane-setup.ts), and wall-clock `queued`/`ended` (ms since the run's start) for a timeline.
// scripts/test-durations.mjs prefers this file to the JSON report.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const root = join(import.meta.dirname, '..');

export default class FileTimesReporter implements Reporter {
  private readonly started = Date.now();
  private readonly queued = new Map<string, number>();
  private readonly rows: Record<string, { project: string; seconds: number; setup: number; queued: number; ended: number; state: string }> = {};

  onTestModuleQueued(m: TestModule): void {
    this.queued.set(m.moduleId, Date.now() - this.started);
  }

  onTestModuleEnd(m: TestModule): void {
    const d = m.diagnostic();
    const s = (ms: number) => Math.round(ms / 100) / 10;
    this.rows[relative(root, m.moduleId)] = {
      project: m.project.name,
      seconds: s(d.collectDuration + d.duration),
      setup: s(d.setupDuration),
      queued: this.queued.get(m.moduleId) ?? -1,
      ended: Date.now() - this.started,
      state: m.state(),
    };
  }

  onTestRunEnd(): void {
    const dir = join(root, 'test-artifacts');
    mkdirSync(dir, { recursive: true });
    const sorted = Object.fromEntries(Object.entries(this.rows).sort(([a], [b]) => (a < b ? -1 : 1)));
    writeFileSync(join(dir, 'file-times.json'), JSON.stringify(sorted, null, 1) + '\n');
  }
}
