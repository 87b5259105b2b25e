// History and Compare in Chromium against the real `cohort serve`, over runs the real CLI made in
// the same data directory: two tiny local runs that differ in batch size, one cancelled by
// `cohort stop` mid-run (it keeps what it measured), and a launch a host refused (recorded as
// failed). Checks: the columns; a rename persists across a reload; Compare overlays both runs'
// curves and shows only the differing settings, with the "x% faster" summary against the chosen
// baseline; Run again fills the Launch form; `cohort runs export` (summary and JSON) includes the
// cancelled and failed runs. Screenshots of History and Compare at 1024×700 and 1920×1080, light
// and dark, in test-artifacts/history-*.png.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { openDashboard, type Dashboard } from './open-dashboard';
import { CHROMIUM, ROOT, type ServeProcess } from './serve-process';

const ARTIFACTS = join(ROOT, 'test-artifacts');

/** One CSV line's cells (RFC 4180 quoting: the error column holds commas). */
function csvCells(line: string): string[] {
  const out: string[] = [];
  const re = /(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g;
  for (let m = re.exec(line); m && m.index < line.length; m = re.exec(line)) out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2]!);
  return out;
}
const TINY = ['--stem', 'cifar', '--image-size', '8', '--log-steps', '1', '--warmup-steps', '0'];

describe.skipIf(!existsSync(CHROMIUM))('History and Compare in Chromium', () => {
  let serve: ServeProcess;
  let page: Page;
  let dash: Dashboard | undefined;
  let env: NodeJS.ProcessEnv;
  const ids: { a: string; b: string; cancelled: string; failed: string } = { a: '', b: '', cancelled: '', failed: '' };

  /** The real CLI against the dashboard's data and config directories. */
  const cohort = (args: string[], timeout = 120_000) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env, encoding: 'utf8', timeout });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const cohortAsync = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (d) => (stdout += d));
      c.stderr.on('data', (d) => (stderr += d));
      c.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  const meta = (id: string) => JSON.parse(readFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), 'utf8')) as RunMeta;
  const runIdOf = (stderr: string) => /run (\S+) recorded in/.exec(stderr)?.[1] ?? '';

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    ({ serve, page } = dash = await openDashboard());
    env = { ...process.env, COHORT_DATA_DIR: serve.dataDir, COHORT_CONFIG_DIR: join(serve.dataDir, '..', 'config'), HOME: join(serve.dataDir, '..', 'home'), NO_COLOR: '1' };
    // Two finished runs that differ only in batch size (both single-rank, side by side).
    const [a, b] = await Promise.all([cohortAsync(['run', '--local', ...TINY, '--batch-size', '2', '--steps', '6']), cohortAsync(['run', '--local', ...TINY, '--batch-size', '4', '--steps', '6'])]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    ids.a = runIdOf(a.stderr);
    ids.b = runIdOf(b.stderr);
    // One stopped mid-run from another terminal.
    const started = cohort(['run', '--local', ...TINY, '--batch-size', '2', '--steps', '5000', '--detach']);
    expect(started.code, started.stderr).toBe(0);
    ids.cancelled = started.stdout.trim();
    const hostEvents = join(serve.dataDir, 'local', 'runs', ids.cancelled, 'events.jsonl');
    const hostSteps = () => (existsSync(hostEvents) ? readFileSync(hostEvents, 'utf8').split('"type":"step"').length - 1 : 0);
    for (const t0 = Date.now(); hostSteps() < 3; await new Promise((r) => setTimeout(r, 250))) if (Date.now() - t0 > 120_000) throw new Error('the detached run reported no 3 steps in 120 s');
    expect(cohort(['stop', ids.cancelled]).code).toBe(0);
    // A launch the host refuses (no usable key): it never starts, and is history all the same.
    expect(cohort(['profiles', 'add', 'refused', 'nobody@127.0.0.1:1']).code).toBe(0);
    const failed = cohort(['run', '--profile', 'refused', ...TINY, '--steps', '2']);
    expect(failed.code).not.toBe(0);
    ids.failed = (JSON.parse(cohort(['runs', 'list', '--json']).stdout) as RunMeta[]).find((r) => r.profile === 'refused')?.id ?? '';
  }, 300_000);

  afterAll(async () => {
    await dash?.dispose();
  });

  it('records what cancelled and failed runs measured', () => {
    const c = meta(ids.cancelled);
    expect(c.status).toBe('cancelled');
    expect(c.steps).toBeGreaterThanOrEqual(3);
    expect(c.medianGlobalSamplesPerSec).toBeGreaterThan(0);
    expect(c.throughput?.windows).toBeGreaterThanOrEqual(3);
    expect(existsSync(join(serve.dataDir, 'runs', ids.cancelled, 'series.json'))).toBe(true);
    const f = meta(ids.failed);
    expect(f).toMatchObject({ status: 'failed', profile: 'refused', worldSize: 1, steps: 0, errorCode: 'ssh-auth' });
    expect(f.error).toMatch(/^launch failed: .*127\.0\.0\.1/);
  });

  const row = (id: string) => page.locator(`[data-testid=history-row][data-run-id="${id}"]`);

  it('shows the columns; a rename persists across a reload', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    await expect.poll(() => page.getByTestId('history-row').count(), { timeout: 30_000 }).toBe(4);
    const text = await row(ids.a).textContent();
    expect(text).toContain(ids.a);
    expect(text).toContain('cifar');
    expect(text).toContain('synthetic');
    expect(await row(ids.a).getByTestId('duration').textContent()).toMatch(/\d+(\.\d)? s/);
    expect(await row(ids.cancelled).textContent()).toMatch(/cancelled/);
    expect(await row(ids.failed).textContent()).toContain('ssh-auth');

    await row(ids.a).getByTestId('run-name').click();
    await row(ids.a).getByTestId('run-name-input').fill('bs2 baseline');
    await row(ids.a).getByTestId('run-name-input').press('Enter');
    await expect.poll(() => row(ids.a).getByTestId('run-name').textContent()).toBe('bs2 baseline');
    await page.reload();
    await page.getByTestId('nav-history').click();
    await expect.poll(() => row(ids.a).getByTestId('run-name').textContent(), { timeout: 30_000 }).toBe('bs2 baseline');
    expect(cohort(['runs', 'list']).stdout).toContain('bs2 baseline');
  });

  it('compares two runs: overlaid curves, only the differing settings, x% faster against the chosen baseline', async () => {
    await row(ids.a).locator('input[type=checkbox]').check();
    await row(ids.b).locator('input[type=checkbox]').check();
    await page.getByTestId('compare').click();
    await page.getByTestId('comparison').waitFor();
    // Both runs' windows on one step axis: 6 steps, one series per run with a value at each.
    for (const chart of ['compare-chart-throughput', 'compare-chart-loss']) {
      await expect.poll(() => page.getByTestId(chart).getAttribute('data-points'), { timeout: 20_000 }).toBe('6');
      const labels = await page.locator(`[data-testid=${chart}] .u-legend .u-series .u-label`).allTextContents();
      expect(labels.slice(1)).toEqual(['bs2 baseline', ids.b]);
    }
    const over = page.locator('[data-testid=compare-chart-throughput] .u-over');
    await over.scrollIntoViewIfNeeded();
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2);
    await expect.poll(async () => (await page.locator('[data-testid=compare-chart-throughput] .u-legend .u-value').allTextContents()).slice(1).every((v) => /^\d/.test(v))).toBe(true);
    await page.mouse.move(0, 0);

    const diff = await page.locator('[data-testid=config-diff] tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent!.trim())));
    expect(diff).toEqual([
      ['global batch', '2', '4'],
      ['batchSize', '2', '4'],
    ]);
    expect(await page.getByTestId('compare-summary').textContent()).toMatch(new RegExp(`${ids.b} is \\d+\\.\\d% (faster|slower) than bs2 baseline \\(median [\\d.]+ vs [\\d.]+ samples/s, 6 windows\\)`));
    expect(await page.getByTestId('spread-row').count()).toBe(2);

    await page.getByTestId('compare-baseline').selectOption(ids.b);
    await expect.poll(() => page.locator(`[data-testid=spread-row][data-run-id="${ids.b}"] [data-testid=speedup]`).textContent()).toContain('baseline');
    expect(await page.getByTestId('compare-summary').textContent()).toMatch(/^bs2 baseline is \d+\.\d% (faster|slower) than /);
  });

  it('screenshots History and Compare at two sizes in both themes', async () => {
    for (const theme of ['light', 'dark'] as const) {
      if ((await page.evaluate(() => document.documentElement.dataset.theme ?? 'light')) !== theme) {
        await page.getByRole('button', { name: 'Toggle light/dark theme' }).click();
        await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      }
      for (const [w, h] of [
        [1024, 700],
        [1920, 1080],
      ] as const) {
        await page.setViewportSize({ width: w, height: h });
        await page.waitForTimeout(300); // charts resize on the next frame
        await page.evaluate(() => window.scrollTo(0, 0));
        // Nothing may widen the page past the window (wide tables scroll inside their panel).
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(w);
        writeFileSync(join(ARTIFACTS, `history-${w}x${h}-${theme}.png`), await page.screenshot());
        writeFileSync(join(ARTIFACTS, `compare-${w}x${h}-${theme}.png`), await page.screenshot({ fullPage: true }));
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('Run again opens the Launch form filled with that run', async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    await row(ids.b).getByTestId('run-again').click();
    await page.getByTestId('run-again-note').waitFor();
    expect(await page.getByTestId('run-again-note').textContent()).toContain(ids.b);
    expect(await page.getByTestId('launch-profile').inputValue()).toBe('local');
    expect(await page.getByTestId('launch-ranks').inputValue()).toBe('1');
    expect(await page.getByTestId('launch-batch-size').inputValue()).toBe('4');
    expect(await page.getByTestId('launch-image-size').inputValue()).toBe('8');
    expect(await page.getByTestId('launch-steps').inputValue()).toBe('6');
    expect(await page.getByTestId('launch-warmup-steps').inputValue()).toBe('0');
    // Editable before launch.
    await page.getByTestId('launch-batch-size').fill('8');
    expect(await page.getByTestId('launch-start').isDisabled()).toBe(false);
  });

  it('cohort runs export: summary CSV and JSON hold every run, cancelled and failed ones with what they measured', () => {
    const all = [ids.a, ids.b, ids.cancelled, ids.failed];
    const csv = cohort(['runs', 'export', ...all, '--format', 'summary', '--baseline', ids.b]);
    expect(csv.code, csv.stderr).toBe(0);
    const [header, ...lines] = csv.stdout.trim().split('\n');
    const cols = header!.split(',');
    const rows = lines.map((l) => Object.fromEntries(cols.map((k, i) => [k, csvCells(l)[i] ?? ''])));
    expect(rows.map((r) => [r.id, r.status, r.baseline])).toEqual([
      [ids.a, 'ok', ids.b],
      [ids.b, 'ok', ids.b],
      [ids.cancelled, 'cancelled', ids.b],
      [ids.failed, 'failed', ids.b],
    ]);
    expect(rows[0]!.name).toBe('bs2 baseline');
    expect(rows[1]!.speedupVsBaselinePct).toBe('0.0');
    expect(Number(rows[2]!.medianGlobalSamplesPerSec)).toBeGreaterThan(0);
    expect(Number(rows[2]!.windows)).toBeGreaterThanOrEqual(3);
    expect(Number(rows[2]!.durationSec)).toBeGreaterThan(0);
    expect(rows[3]!.medianGlobalSamplesPerSec).toBe('');
    const json = cohort(['runs', 'export', ...all, '--format', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const j = JSON.parse(json.stdout) as { baseline: string; runs: (RunMeta & { speedupVsBaselinePct: number | null })[] };
    expect(j.baseline).toBe(ids.a);
    expect(j.runs.map((r) => r.status)).toEqual(['ok', 'ok', 'cancelled', 'failed']);
    expect(j.runs[2]!.throughput!.windows).toBeGreaterThanOrEqual(3);
    expect(j.runs[3]!.error).toMatch(/launch failed/);
    expect(json.stdout).not.toContain('profileSnapshot');
    expect(cohort(['runs', 'export', ids.a, '--format', 'json', '--baseline', ids.b]).stderr).toMatch(/not one of the exported runs/);
  });
});
