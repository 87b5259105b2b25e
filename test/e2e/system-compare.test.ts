// System metrics in the dashboard (issue 22 items 3, 5, 12), in Chromium against the real `cohort
// serve`, over two real local runs the real CLI made with identical settings: one quiet, one with a
// CPU hog beside it (busy-loop processes this test starts and kills). Compare says the difference
// comes from the machines, quoting each run's load and its ranks' CPU share (never "x% faster" over a
// "noise" panel), and flags the hogged run's busy windows; Live shows the system panel and a memory
// chart scaled on what the rank uses (not the host's RAM), its ticks in one unit, tensors and peak.
// Screenshots at 1280×800 and 1920×1080 in test-artifacts/system-*.png (looked at by eye).
//
// Under load (CI's other worker; other sessions here). Seen failing beside `load.sh 4` with five
// other sessions (load 30–37): "within run-to-run noise (median 2.8 vs 2.5 samples/s)", once the
// hogged run the faster (4.2 vs 2.3: its rank got 14 % of the machine, the quiet one's 9 %). Why:
// this kernel schedules by autogroup (sched_autogroup_enabled = 1: one group per session, each group
// a fair share of a CPU), and the agent and its rank start sessions of their own (durable runs), so
// the eight hogs counted as ONE group against the rank's: the rank kept half of CPU 0, and every
// other session's group weighed as much as the hog. (Tried and dropped: nice -10, which acts only
// within a group; the two runs at once in sessions of their own, for the same reason.)
// So the runs and the hog share one cpu cgroup this file makes (cgroup v1 `cpu`, as root): a task in
// a cgroup is scheduled inside it, not by autogroup, and the agent and rank stay in it across their
// setsid. In it the rank and the eight loops have equal weights (the rank gets 1/9 of what the
// cgroup gets), and the cgroup as a whole gets CPU 0's fair share against the neighbours in both
// runs alike: the hog divides the rank's CPU by about 9 however loaded the machine is.
// Not alike, though, when the neighbours change between the two runs: CI's stop 38 failed with "within
// run-to-run noise (median 8.4 vs 12.1 samples/s)": the QUIET run had got a third of its usual speed.
// Reproduced (scripts/cpu0-neighbours.sh) with six busy loops in sessions of their own pinned to CPU 0
// while the quiet run trained (gone when the hog started): the cgroup weighed 1024 against their 6 × 1024, so the quiet
// rank got 6 % of the machine against the hogged one's 10 %, and Compare said "74.5 % faster" the
// wrong way round. So the cgroup weighs v1's maximum (cpu.shares 262144, ~98 % of CPU 0 against
// six such neighbours): CPU 0 is the cgroup's in both runs and only the hog tells them apart (same
// adversary, 3 of 3 green: quiet 35–46 samples/s, ranks 44–46 %; hogged 11–15, ranks 10–12 %). The
// neighbours lose only CPU 0, for the ~10 s of the two runs. Without a writable cpu cgroup (not root,
// cgroup v2 only) the file is skipped.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { useDashboard } from './open-dashboard';
import { CHROMIUM, ROOT, type ServeProcess } from './serve-process';
import { tinyRun } from '../helpers/tiny';

const ARTIFACTS = join(ROOT, 'test-artifacts');
const SAME = ['run', '--local', ...tinyRun({ steps: 12, logSteps: 2 })];
const GiB = 2 ** 30;

/** The cpu cgroup the runs and the hog share (the file's head says why); a fresh one per test process. */
const CPU_CGROUPS = '/sys/fs/cgroup/cpu';
const CGROUP = join(CPU_CGROUPS, `cohort-system-compare-${process.pid}`);
const CAN_CGROUP = (() => {
  try {
    accessSync(join(CPU_CGROUPS, 'cgroup.procs'), constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();
/** argv run inside CGROUP, pinned to CPU 0 (exec keeps the pid: killing it kills the command). */
const inCgroup = (argv: string[]) => ['sh', ['-c', `echo $$ > ${CGROUP}/cgroup.procs && exec taskset -c 0 "$@"`, 'sh', ...argv]] as const;

describe.skipIf(!existsSync(CHROMIUM) || !CAN_CGROUP)('system metrics in Compare and Live (Chromium)', () => {
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
    // Both runs on CPU 0 in the cgroup (the agent and rank inherit both), the hog below beside them there.
    mkdirSync(CGROUP);
    // The cgroup's weight far above any neighbour's (v1's maximum; a neighbour group or task weighs 1024):
    // CPU 0 is the cgroup's in both runs, whatever else was put on it meanwhile (see the file's head).
    writeFileSync(join(CGROUP, 'cpu.shares'), '262144');
    const cohort = (args: string[]) => spawnSync(...inCgroup([process.execPath, join(ROOT, 'bin', 'cohort.mjs'), ...args]), { env, encoding: 'utf8', timeout: 240_000 });
    const idOf = (stderr: string) => /run (\S+) recorded in/.exec(stderr)?.[1] ?? '';
    const a = cohort(SAME);
    expect(a.status, a.stderr).toBe(0);
    quiet = idOf(a.stderr);
    // The hog: eight busy loops on the same CPU 0, started before and killed after the second run.
    for (let i = 0; i < 8; i++) hogs.push(spawn(...inCgroup([process.execPath, '-e', 'for(;;){}']), { stdio: 'ignore' }));
    const b = cohort(SAME);
    for (const h of hogs) h.kill('SIGKILL');
    expect(b.status, b.stderr).toBe(0);
    hogged = idOf(b.stderr);
  }, 560_000);

  afterAll(async () => {
    for (const h of hogs) h.kill('SIGKILL');
    if (!existsSync(CGROUP)) return;
    // Whatever of the runs is left in the cgroup (a cut run's agent or rank), then the cgroup itself.
    for (let i = 0; i < 50; i++) {
      const pids = readFileSync(join(CGROUP, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
      if (!pids.length) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // (gone already)
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    rmdirSync(CGROUP);
  });

  it('records each run\'s machines in its History record', () => {
    const meta = (id: string) => JSON.parse(readFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), 'utf8')) as RunMeta;
    const q = meta(quiet).system!.hosts[0]!;
    const h = meta(hogged).system!.hosts[0]!;
    // The hog takes the rank's CPU: the ranks' share is what tells (the load and the whole host's CPU %
    // are the neighbours' as much as the hog's; the load is a 1-minute average that lags a short run).
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
