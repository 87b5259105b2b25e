// Issue 22, the GUI parts, in Chromium against the real `cohort serve`, over runs the real CLI makes
// in the same data directory:
// - Compare's charts have the same smoothing slider and log-y toggles as Live run (one component,
//   ChartControls; one setting, chartSettings: set in Compare, Live's slider shows it);
// - a launch a host refuses is worded for the dashboard (error-wording.ts: the host, what, what to
//   do; no CLI flag) and links to the run it was recorded as (#/runs/ID), whose record Live shows;
//   its hint is on the page once, and the error stays with its launch (not over other views, another
//   profile's Launch form or another run's page: issue 22 item 9).
// Screenshots at 1280×800 and 1920×1080 in test-artifacts/r2gui-*.png (looked at by eye).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { guiWording, type RunMeta } from '../../electron/common';
import { fillLaunch, TINY_FORM, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM } from './serve-process';
import { tinyRun } from '../helpers/tiny';

const TINY = tinyRun({ batchSize: null, classes: null, warmupSteps: 0, steps: 6 });
const SIZES = [
  [1280, 800],
  [1920, 1080],
] as const;

/** Screenshots of what the page shows at both sizes, `beforeShot` bringing the subject into view. */
async function shots(page: Page, name: string, beforeShot: () => Promise<void>): Promise<void> {
  for (const [w, h] of SIZES) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(300); // the charts resize and redraw on the next frames
    await beforeShot();
    writeFileSync(join(ARTIFACTS, `r2gui-${name}-${w}x${h}.png`), await page.screenshot());
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe.skipIf(!existsSync(CHROMIUM))('Compare chart controls and a failed launch\'s run link (Chromium)', () => {
  const ui = useDashboard();
  const ids = { a: '', b: '' };
  const runIdOf = (stderr: string) => /run (\S+) recorded in/.exec(stderr)?.[1] ?? '';

  beforeAll(async () => {
    const { cli } = ui();
    // Two finished local runs that differ in batch size, side by side.
    const [a, b] = [cli(['run', '--local', ...TINY, '--batch-size', '2']), cli(['run', '--local', ...TINY, '--batch-size', '4'])];
    const [ea, eb] = await Promise.all([a.exit, b.exit]);
    expect(ea.code, a.stderr).toBe(0);
    expect(eb.code, b.stderr).toBe(0);
    ids.a = runIdOf(a.stderr);
    ids.b = runIdOf(b.stderr);
    // A profile whose one host refuses the connection (nothing listens on port 1).
    const add = cli(['profiles', 'add', 'refused', 'nobody@127.0.0.1:1']);
    expect((await add.exit).code, add.stderr).toBe(0);
  }, 300_000);

  it('Compare has the smoothing slider and a log y axis per chart, the same controls and setting as Live run', async () => {
    const { page, serve } = ui();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message)); // a log axis's unlabelled ticks once threw in yFmt
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    const row = (id: string) => page.locator(`[data-testid=history-row][data-run-id="${id}"]`);
    await expect.poll(() => row(ids.b).count(), { timeout: 30_000 }).toBe(1);
    await row(ids.a).locator('input[type=checkbox]').check();
    await row(ids.b).locator('input[type=checkbox]').check();
    await page.getByTestId('compare').click();
    const compare = page.getByTestId('comparison');
    await compare.waitFor();
    const charts = ['compare-chart-throughput', 'compare-chart-loss'];
    for (const c of charts) await expect.poll(() => page.getByTestId(c).getAttribute('data-points'), { timeout: 20_000 }).toBe('6');

    await compare.getByTestId('smoothing').fill('0.8', { timeout: 10_000 });
    for (const c of charts) await expect.poll(() => page.getByTestId(c).getAttribute('data-smoothing')).toBe('0.8');
    // Each run's raw curve stays, faint, behind its smoothed one.
    const labels = await page.locator('[data-testid=compare-chart-loss] .u-legend .u-series .u-label').allTextContents();
    expect(labels.filter((l) => l.endsWith('(raw)'))).toHaveLength(2);
    await page.getByTestId('compare-chart-loss-log').check();
    await expect.poll(() => page.getByTestId('compare-chart-loss').getAttribute('data-log-y')).toBe('true');
    expect(await page.getByTestId('compare-chart-throughput').getAttribute('data-log-y')).toBe('false');
    expect(await page.getByTestId('compare-chart-loss-summary').textContent()).toMatch(/^Loss per run \(mean over ranks\), plotted against step on a log scale, smoothed 0\.8: \d+ points\./);
    // The x axis switch is in the same control row.
    expect(await compare.getByTestId('chart-controls').getByTestId('x-time').count()).toBe(1);

    await shots(page, 'compare', async () => {
      // The control row at the top, below the sticky header, the charts under it.
      await page.getByTestId('chart-controls').evaluate((el) => {
        el.scrollIntoView({ block: 'start' });
        window.scrollBy(0, -(document.querySelector('header')?.getBoundingClientRect().height ?? 60) - 8);
      });
    });

    // One setting: Live run's slider shows what Compare set.
    await page.getByTestId('nav-live').click();
    await expect.poll(() => page.getByTestId('smoothing-value').textContent(), { timeout: 20_000 }).toBe('0.80');
    await page.getByTestId('smoothing').fill('0');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('a refused launch says which host, what and what to do in dashboard words, and links to its recorded run', async () => {
    const { page, cli } = ui();
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'refused', ...TINY_FORM, 'batch-size': 2, 'image-size': 8, steps: 2 });
    await page.getByTestId('launch-start').click();
    await expect.poll(() => page.getByTestId('launch-progress').getAttribute('data-state'), { timeout: 60_000 }).toBe('failed');

    const list = cli(['runs', 'list', '--json']);
    await list.exit;
    const failed = (JSON.parse(list.stdout) as RunMeta[]).find((r) => r.profile === 'refused');
    expect(failed?.status).toBe('failed');
    const host = failed!.hosts[0]!.name;
    // The host's row: core's message (which host, what) and the table's sentence for its code.
    const hostError = (await page.getByTestId(`launch-failed-${host}`).textContent({ timeout: 10_000 }))!;
    expect.soft(hostError).toContain(`hint: ${guiWording(failed!.errorCode!, host)}`);
    expect.soft(hostError).not.toMatch(/(^|\s)--[a-z]/);

    const link = page.getByTestId('launch-run-link');
    expect(await link.textContent({ timeout: 10_000 })).toBe(failed!.id);
    expect(await link.getAttribute('href')).toBe(`#/runs/${failed!.id}`);
    await shots(page, 'launch-failed', async () => {
      await page.getByTestId('launch-progress').scrollIntoViewIfNeeded();
    });
    // Issue 22 item 9: the hint once on the page (not again in a notice or the message), and the
    // error belongs to its launch: not over other views, nor over Launch with another profile.
    const hint = guiWording(failed!.errorCode!, host) ?? '';
    expect(hint).not.toBe('');
    const hintsShown = () => page.evaluate((h) => document.body.innerText.split(h).length - 1, hint);
    expect(await hintsShown()).toBe(1);
    expect(await page.getByTestId('notice').count()).toBe(0);
    for (const view of ['profiles', 'hosts', 'history']) {
      await page.getByTestId(`nav-${view}`).click();
      await expect.poll(() => page.evaluate(() => location.hash)).toBe(`#/${view}`);
      expect(await page.getByTestId('launch-progress').count(), view).toBe(0);
      expect(await page.getByTestId('notice').count(), view).toBe(0);
      expect(await hintsShown(), view).toBe(0);
    }
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'local' });
    expect(await page.getByTestId('launch-progress').count()).toBe(0);
    expect(await hintsShown()).toBe(0);
    await fillLaunch(page, { profile: 'refused' }); // its own launch's error is still there
    await expect.poll(() => page.getByTestId('launch-progress').getAttribute('data-state')).toBe('failed');
    expect(await hintsShown()).toBe(1);

    // One click: Live run shows the failed launch's record, its error worded the same way.
    await link.click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe(`#/runs/${failed!.id}`);
    await expect.poll(() => page.getByTestId('run-id').textContent(), { timeout: 20_000 }).toContain(failed!.id);
    expect(await page.getByTestId('phase').textContent()).toBe('failed');
    const banner = page.getByTestId('run-error');
    expect(await banner.textContent()).toContain(`${host} failed:`);
    expect(await page.getByTestId('run-error-code').textContent()).toBe(failed!.errorCode);
    expect(await page.getByTestId('run-error-hint').textContent()).toBe(guiWording(failed!.errorCode!, host));
    expect(await banner.textContent()).not.toMatch(/(^|\s)--[a-z]/);
    expect(await hintsShown()).toBe(1); // the banner's hint only: no launch panel repeating it
    await shots(page, 'failed-run', async () => {
      await page.evaluate(() => window.scrollTo(0, 0));
    });
    // Another run's page carries none of it.
    await page.goto(`${ui().serve.url}#/runs/${ids.a}`);
    await expect.poll(() => page.getByTestId('run-id').textContent(), { timeout: 20_000 }).toContain(ids.a);
    expect(await page.getByTestId('phase').textContent()).toBe('ok');
    expect(await page.getByTestId('run-error').count()).toBe(0);
    expect(await hintsShown()).toBe(0);
  }, 180_000);
});
