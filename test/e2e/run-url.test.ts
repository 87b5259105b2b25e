// "A way back to a run" (issue 22 item 4) in Chromium against the real `cohort serve`, over runs the
// real CLI makes in the same data directory: a fresh page's Live run shows the latest run (never
// "No run yet" beside a full History); the address names the view and Live's run (#/runs/ID), so a
// reload or a new tab on it comes back to that run, not to the latest one; and a run started from
// the CLI with --detach while the page is open appears in Live by itself. Screenshot at 1280×800 in
// test-artifacts/run-url-live.png.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tinyRun } from '../helpers/tiny';
import { useDashboard, type Dashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, ROOT, type ServeProcess } from './serve-process';

const TINY = tinyRun({ warmupSteps: 0 });

describe.skipIf(!existsSync(CHROMIUM))('a URL per run, and Live following any client', () => {
  let serve: ServeProcess;
  let page: Page;
  let dash: Dashboard | undefined;
  let env: NodeJS.ProcessEnv;
  let older = '';
  let latest = '';
  let detached = '';

  /** The real CLI against the dashboard's data and config directories. */
  const cohort = (args: string[], timeout = 180_000) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env, encoding: 'utf8', timeout });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const finishedRun = (): string => {
    const r = cohort(['run', '--local', ...TINY, '--steps', '3']);
    expect(r.code, r.stderr).toBe(0);
    return /run (\S+) recorded in/.exec(r.stderr)?.[1] ?? '';
  };
  const shownRun = (p: Page = page) => p.getByTestId('run-id').textContent({ timeout: 1000 }).catch(() => null);
  const currentView = (p: Page = page) => p.locator('nav [aria-current=page]').getAttribute('data-testid', { timeout: 1000 }).catch(() => null);

  const ui = useDashboard();
  beforeAll(async () => {
    ({ serve, page } = dash = ui());
    env = { ...serve.env, NO_COLOR: '1' };
    older = finishedRun();
    latest = finishedRun();
    expect(older).not.toBe('');
    expect(latest).not.toBe(older);
  }, 400_000);

  afterAll(async () => {
    if (detached) cohort(['stop', detached], 60_000);
  });

  it("a fresh page's Live run shows the latest run", async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-live').click();
    await expect.poll(() => shownRun(), { timeout: 30_000 }).toBe(latest);
    expect(await page.getByText('No run yet').count()).toBe(0);
    expect(new URL(page.url()).hash).toBe(`#/runs/${latest}`);
  });

  it('the address keeps the run and the view across a reload and in a new tab', async () => {
    // A new tab on an older run's address opens that run, not the latest.
    const tab = await dash!.ctx.newPage();
    try {
      await tab.goto(`${serve.url}#/runs/${older}`);
      await expect.poll(() => shownRun(tab), { timeout: 30_000 }).toBe(older);
      expect(await currentView(tab)).toBe('nav-live');
      await tab.reload();
      await expect.poll(() => shownRun(tab), { timeout: 30_000 }).toBe(older);
      expect(await currentView(tab)).toBe('nav-live');
      expect(new URL(tab.url()).hash).toBe(`#/runs/${older}`);
      // The view is in the address too.
      await tab.getByTestId('nav-history').click();
      await expect.poll(() => new URL(tab.url()).hash).toBe('#/history');
      await tab.reload();
      await expect.poll(() => currentView(tab), { timeout: 30_000 }).toBe('nav-history');
      // Back returns to the run.
      await tab.goBack();
      await expect.poll(() => shownRun(tab), { timeout: 30_000 }).toBe(older);
    } finally {
      await tab.close();
    }
  });

  it('a run started from the CLI with --detach while the page is open appears in Live', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-live').click();
    await expect.poll(() => shownRun(), { timeout: 30_000 }).toBe(latest);
    const started = cohort(['run', '--local', ...TINY, '--steps', '5000', '--detach']);
    expect(started.code, started.stderr).toBe(0);
    detached = started.stdout.trim();
    await expect.poll(() => shownRun(), { timeout: 60_000 }).toBe(detached);
    // Training is the signal that the page follows the run live; Stop is offered then (not a guess
    // at how long a loaded machine takes to start it).
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 180_000 }).toBe('training');
    expect(await page.getByTestId('stop-run').count()).toBe(1);
    expect(new URL(page.url()).hash).toBe(`#/runs/${detached}`);
    await page.screenshot({ path: join(ARTIFACTS, 'run-url-live.png') });
    expect(cohort(['stop', detached], 60_000).code).toBe(0);
    detached = '';
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 60_000 }).toBe('cancelled');
  });

  it('a run opened from an address stays; a run starting meanwhile is offered, not forced', async () => {
    await page.goto(`${serve.url}#/runs/${older}`);
    await expect.poll(() => shownRun(), { timeout: 30_000 }).toBe(older);
    const started = cohort(['run', '--local', ...TINY, '--steps', '5000', '--detach']);
    expect(started.code, started.stderr).toBe(0);
    detached = started.stdout.trim();
    await expect.poll(() => page.getByTestId('newer-run').textContent({ timeout: 1000 }).catch(() => null), { timeout: 60_000 }).toContain(detached);
    expect(await shownRun()).toBe(older);
    await page.screenshot({ path: join(ARTIFACTS, 'run-url-newer.png') });
    await page.getByTestId('show-newer-run').click();
    await expect.poll(() => shownRun(), { timeout: 30_000 }).toBe(detached);
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 180_000 }).toBe('training');
    expect(await page.getByTestId('stop-run').count()).toBe(1);
    expect(await page.getByTestId('newer-run').count()).toBe(0);
    expect(cohort(['stop', detached], 60_000).code).toBe(0);
    detached = '';
  });
});
