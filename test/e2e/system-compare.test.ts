// System metrics in the dashboard (issue 22 items 3, 5, 12), in Chromium against the real `cohort
// serve`, over two real local runs the real CLI made with identical settings: one quiet, one with a
// CPU hog beside it (busy-loop processes this test starts and kills). Compare says the difference
// comes from the machines, quoting each run's load and its ranks' CPU share (never "x% faster" over a
// "noise" panel), and flags the hogged run's busy windows; Live shows the system panel and a memory
// chart scaled on what the rank uses (not the host's RAM), its ticks in one unit, tensors and peak.
// Screenshots at 1280×800 and 1920×1080 in test-artifacts/system-*.png (looked at by eye).
//
// On a loaded machine (CI: the other test worker; here: other sessions), the hog must make a
// difference the neighbours cannot blur. At equal priority it did not always: under load 25 the
// quiet run's rank already got ~1/12 of its CPU and the hog only halved that (IQRs 3.2–3.7 vs
// 1.6–2.3 samples/s, a hair from "within run-to-run noise"), and the whole machine's load and CPU %
// followed the neighbours as much as the hog. So both runs and the hog run pinned to CPU 0 at a raised
// priority (nice -10: weight 9548 against a default process's 1024, so a neighbour takes at most a
// few percent of CPU 0 from them and the scheduler moves it to CPU 1): the quiet rank has most of
// CPU 0 whatever runs beside it, the hogged rank 1/9 of it (eight loops and the rank, equal weights).
// That needs root (CAP_SYS_NICE), as the namespaced-host tests do; without it the file is skipped.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { useDashboard } from './open-dashboard';
import { CHROMIUM, ROOT, type ServeProcess } from './serve-process';

const ARTIFACTS = join(ROOT, 'test-artifacts');
const SAME = ['run', '--local', '--stem', 'cifar', '--image-size', '8', '--batch-size', '2', '--classes', '10', '--steps', '12', '--log-steps', '2', '--warmup-steps', '1'];
const GiB = 2 ** 30;

/** `nice -n -10` takes effect here (root, or CAP_SYS_NICE): GNU nice only warns when it cannot. */
const RAISED = spawnSync('nice', ['-n', '-10', 'nice'], { encoding: 'utf8' }).stdout.trim() === '-10';
/** Pinned to CPU 0 at the raised priority: the runs (their agent and rank inherit both) and the hog. */
const onCpu0 = (argv: string[]) => ['nice', ['-n', '-10', 'taskset', '-c', '0', ...argv]] as const;

describe.skipIf(!existsSync(CHROMIUM) || !RAISED)('system metrics in Compare and Live (Chromium)', () => {
  const ui = useDashboard();
  let serve: ServeProcess;
  let page: Page;
  const hogs: ChildProcess[] = [];
  let quiet = '';
  let hogged = '';

  // After useDashboard's beforeAll (declared first): the runs go into the server's history.
  beforeAll(async () => {
    ({ serve, page } = ui());
    // The server's env (its config, data and HOME dirs), as ui().cli() uses; spawned here under taskset.
    const env = { ...serve.env, NO_COLOR: '1' };
    // Both runs on CPU 0 at the raised priority (the file's head says why).
    const cohort = (args: string[]) => spawnSync(...onCpu0([process.execPath, join(ROOT, 'bin', 'cohort.mjs'), ...args]), { env, encoding: 'utf8', timeout: 240_000 });
    const idOf = (stderr: string) => /run (\S+) recorded in/.exec(stderr)?.[1] ?? '';
    const a = cohort(SAME);
    expect(a.status, a.stderr).toBe(0);
    quiet = idOf(a.stderr);
    // The hog: eight busy loops on the same CPU 0 at the same priority, started before and killed after the second run.
    for (let i = 0; i < 8; i++) hogs.push(spawn(...onCpu0([process.execPath, '-e', 'for(;;){}']), { stdio: 'ignore' }));
    const b = cohort(SAME);
    for (const h of hogs) h.kill('SIGKILL');
    expect(b.status, b.stderr).toBe(0);
    hogged = idOf(b.stderr);
  }, 560_000);

  afterAll(() => {
    for (const h of hogs) h.kill('SIGKILL');
  });

  it('records each run\'s machines in its History record', () => {
    const meta = (id: string) => JSON.parse(readFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), 'utf8')) as RunMeta;
    const q = meta(quiet).system!.hosts[0]!;
    const h = meta(hogged).system!.hosts[0]!;
    // The hog takes the rank's CPU: its share is what differs (the load and the whole host's CPU % are
    // the neighbours' as much as the hog's, and the load is a 1-minute average that lags a short run).
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
