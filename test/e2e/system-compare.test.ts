// System metrics in the dashboard (issue 22 items 3, 5, 12), in Chromium against the real `cohort
// serve`, over two real local runs the real CLI made with identical settings: one quiet, one with a
// CPU hog beside it (busy-loop processes this test starts and kills). Compare says the difference
// comes from the machines, quoting each run's load and its ranks' CPU share (never "x% faster" over a
// "noise" panel), and flags the hogged run's busy windows; Live shows the system panel and a memory
// chart scaled on what the rank uses (not the host's RAM), its ticks in one unit, tensors and peak.
// Screenshots at 1280×800 and 1920×1080 in test-artifacts/system-*.png (looked at by eye).
//
// Under load (CI's other worker; other sessions here). Seen failing beside `load.sh 4` with five other
// sessions (load 30–37), the two runs one after the other: "within run-to-run noise (median 2.8 vs 2.5
// samples/s)", once the hogged run the faster (4.2 vs 2.3: its rank got 14 % of the machine, the
// quiet one's 9 %). Why: this kernel schedules by autogroup (sched_autogroup_enabled = 1: one group
// per session, each group a fair share of a CPU, spread over the CPUs as its own runnable load is),
// so the hogs pinned beside the rank pulled this file's group weight onto CPU 0 and the rank lost far
// less than 8/9, while other sessions set each run's share as much as the hog did, and changed
// between the two runs. (The runs and hog at nice -10 did not help either: nice acts within a group.)
// So now the two runs train at the same time, each in its own session (its own group): the hogged one
// pinned to CPU 0 with its eight loops in its session, the quiet one pinned to CPU 1 alone. Both meet
// the same neighbours at the same moments, each group gets its CPU's fair share, and the hogged rank
// 1/9 of its group's: about 9× less CPU than the quiet rank however loaded the machine is. Without
// autogroup the same holds less strongly (neighbours the scheduler moves to CPU 1 slow the quiet run).
// The hogged run trains in its own data dir (a second local run in the same one would queue for the
// local slot) and its record is copied into the server's history before the cases look.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { useDashboard } from './open-dashboard';
import { CHROMIUM, ROOT, type ServeProcess } from './serve-process';

const ARTIFACTS = join(ROOT, 'test-artifacts');
const SAME = ['run', '--local', '--stem', 'cifar', '--image-size', '8', '--batch-size', '2', '--classes', '10', '--steps', '12', '--log-steps', '2', '--warmup-steps', '1'];
const GiB = 2 ** 30;

describe.skipIf(!existsSync(CHROMIUM))('system metrics in Compare and Live (Chromium)', () => {
  const ui = useDashboard();
  let serve: ServeProcess;
  let page: Page;
  /** Process groups (= sessions) of the two runs, killed in afterAll if a run outlived a cut test. */
  const groups: number[] = [];
  let hoggedData = '';
  let quiet = '';
  let hogged = '';

  /** `cohort ARGS` pinned to `cpu`, in a session of its own (detached: setsid), with `hogs` busy loops beside it there. */
  const inSession = (cpu: number, hogs: number, args: string[], env: NodeJS.ProcessEnv) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const cli = [process.execPath, join(ROOT, 'bin', 'cohort.mjs'), ...args].map((a) => `'${a}'`).join(' ');
      const script = `pids=; for i in $(seq ${hogs}); do '${process.execPath}' -e 'for(;;){}' & pids="$pids $!"; done; ${cli}; rc=$?; [ -z "$pids" ] || kill -9 $pids; exit $rc`;
      const child = spawn('taskset', ['-c', String(cpu), 'sh', '-c', script], { env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      groups.push(child.pid!);
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });

  // After useDashboard's beforeAll (declared first): the runs go into the server's history.
  beforeAll(async () => {
    ({ serve, page } = ui());
    hoggedData = mkdtempSync(join(tmpdir(), 'cohort-hogged-'));
    const env = { ...serve.env, NO_COLOR: '1' };
    const idOf = (stderr: string) => /run (\S+) recorded in/.exec(stderr)?.[1] ?? '';
    const [a, b] = await Promise.all([inSession(1, 0, SAME, env), inSession(0, 8, SAME, { ...env, COHORT_DATA_DIR: hoggedData })]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    quiet = idOf(a.stderr);
    hogged = idOf(b.stderr);
    cpSync(join(hoggedData, 'runs', hogged), join(serve.dataDir, 'runs', hogged), { recursive: true });
  }, 560_000);

  afterAll(() => {
    for (const g of groups) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // (the group has ended)
      }
    }
    if (hoggedData) rmSync(hoggedData, { recursive: true, force: true });
  });

  it('records each run\'s machines in its History record', () => {
    const meta = (id: string) => JSON.parse(readFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), 'utf8')) as RunMeta;
    const q = meta(quiet).system!.hosts[0]!;
    const h = meta(hogged).system!.hosts[0]!;
    // The hog takes the rank's CPU: the ranks' share is what tells (both runs trained at the same time
    // on the same machine, so its load and CPU % were both runs' alike).
    expect(h.ranksCpuPercent).toBeLessThan(q.ranksCpuPercent!);
    expect(h.busyWindows).toBeGreaterThan(0);
  });

  it('Compare: identical settings → the difference comes from the machines, with each run\'s load; the hogged run\'s windows flagged', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    const row = (id: string) => page.locator(`[data-testid=history-row][data-run-id="${id}"]`);
    await row(quiet).locator('input[type=checkbox]').check();
    await row(hogged).locator('input[type=checkbox]').check();
    await page.getByTestId('compare').click();
    await page.getByTestId('comparison').waitFor();
    const summary = (await page.getByTestId('compare-summary').textContent())!;
    const load = (id: string) => `${id} — local: load \\d+\\.\\d\\d/\\d+ CPUs, CPU \\d+% \\(ranks \\d+%, others \\d+%\\)`;
    expect(summary).toMatch(new RegExp(`ran \\d+\\.\\d% (faster|slower) than ${quiet} with the same settings \\(median [\\d.]+ vs [\\d.]+ samples/s\\): the difference comes from the machines\\. ${load(hogged)}; ${load(quiet)}`));
    // The panel under it says the same, never "noise".
    expect(await page.getByTestId('config-same').textContent()).toContain('the difference comes from the machines');
    expect(await page.locator(`[data-testid=spread-row][data-run-id="${hogged}"] [data-testid=speedup]`).textContent()).toContain('(machines)');
    expect(await page.getByTestId('compare-flags').textContent()).toMatch(new RegExp(`${hogged}: \\d+ of \\d+ windows on a busy local`));
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.getByTestId('comparison').scrollIntoViewIfNeeded();
      writeFileSync(join(ARTIFACTS, `system-compare-${w}x${h}.png`), await page.screenshot());
    }
  });

  it('Live: the system panel per host, and memory scaled on what the rank uses, one unit per axis, tensors and peak shown', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${serve.url}#/runs/${hogged}`);
    const mem = page.getByTestId('chart-memory');
    try {
      await expect.poll(() => mem.getAttribute('data-y-ticks'), { timeout: 30_000 }).toMatch(/\|/);
    } finally {
      writeFileSync(join(ARTIFACTS, 'system-live-first.png'), await page.screenshot({ fullPage: true }));
    }
    const [lo, hi] = (await mem.getAttribute('data-y-range'))!.split(',').map(Number);
    const events = readFileSync(join(serve.dataDir, 'runs', hogged, 'events.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"type":"step"')).map((l) => JSON.parse(l) as { memory: { rssBytes: number; hostTotalBytes: number }[] });
    const rss = Math.max(...events.map((e) => e.memory[0]!.rssBytes));
    // The axis tops out just above what the rank holds (RSS), far below the host's RAM.
    expect(lo).toBe(0);
    expect(hi).toBeGreaterThanOrEqual(rss);
    expect(hi).toBeLessThan(rss * 1.5);
    expect(hi).toBeLessThan(events[0]!.memory[0]!.hostTotalBytes / 4);
    const ticks = (await mem.getAttribute('data-y-ticks'))!.split('|');
    const units = new Set(ticks.map((t) => t.split(' ')[1]));
    expect(units.size, ticks.join(', ')).toBe(1);
    expect([...units][0]).toBe(hi >= GiB ? 'GiB' : 'MiB');
    expect(await page.getByTestId('mem-tensor').first().textContent()).toMatch(/^\d+(\.\d)? (KiB|MiB|GiB)$/);
    expect(await page.getByTestId('mem-peak').first().textContent()).toMatch(/^\d+(\.\d)? (KiB|MiB|GiB)$/);
    await expect.poll(() => page.getByTestId('system-panel').getAttribute('data-hosts')).toBe('local');
    for (const id of ['chart-system-cpu', 'chart-system-load', 'chart-system-net']) expect(Number(await page.getByTestId(id).getAttribute('data-points'))).toBeGreaterThanOrEqual(4);
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await mem.scrollIntoViewIfNeeded();
      writeFileSync(join(ARTIFACTS, `system-live-${w}x${h}.png`), await page.screenshot());
    }
  });
});
