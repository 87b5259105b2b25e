// The ranks × time heat map of the Live view (issue 21 item 2), seen in Chromium: a real 4-rank
// local run started from the dashboard (real `cohort serve`, headless Chromium), rank 2 really
// slowed by SIGSTOP/SIGCONT bursts. The heat map has a row per rank, rank 2's cells are the
// darkest, and clicking a window's cell shows that window's split. Screenshots of Live's per-rank
// part at 1280×800 and 1920×1080 in test-artifacts/ (looked at when this test was written).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leftovers, rankPid, throttle } from '../helpers/run-procs';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM))('Live: ranks × time heat map', () => {
  const ui = useDashboard();

  it('4 ranks: a row per rank, the slowed rank darkest, a clicked window shows its split', async () => {
    const { page, serve } = ui();
    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    // The form starts from the profile's own config (issue 22 item 1): a tiny run sets the stem too.
    // Width 1, not the tiny runs' 1/4: the slowed rank is told by comparing step times (test/helpers/tiny.ts).
    await fillLaunch(page, { profile: 'local', ranks: 4, ...TINY_FORM, width: 1, 'batch-size': 2, 'image-size': 8, steps: 5000 });
    await page.getByTestId('launch-start').click();
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 300_000, interval: 500 }).toBe('training');
    const pid = rankPid(serve.dataDir, 2);
    expect(pid, 'rank 2 process').toBeDefined();
    const stopThrottle = throttle(pid!);
    try {
      await expect.poll(() => page.getByTestId('window-straggler').textContent().catch(() => ''), { timeout: 300_000, interval: 1000 }).toMatch(/rank 2 on local: compute [\d.]+× its peers' median/);
      const heat = page.getByTestId('rank-heatmap');
      await heat.waitFor({ timeout: 30_000 });
      expect(await heat.locator('.row-label').allTextContents()).toEqual(['rank 0 local', 'rank 1 local', 'rank 2 local', 'rank 3 local']);
      // The last window's column: rank 2's cell is the darkest (opacity ∝ its step without waiting).
      const lastCol = async () => {
        const cells = await heat.getByTestId('heat-cell').evaluateAll((els) => els.map((e) => ({ label: e.getAttribute('aria-label') ?? '', opacity: Number((e as HTMLElement).style.opacity) })));
        const perRow = cells.length / 4;
        return [0, 1, 2, 3].map((r) => cells[r * perRow + perRow - 1]!);
      };
      await expect.poll(async () => { const c = await lastCol(); return c.indexOf(c.reduce((a, b) => (b.opacity > a.opacity ? b : a))); }, { timeout: 60_000, interval: 1000 }).toBe(2);

      // Point at a window: its cell is outlined and the split table shows that window.
      const cells = heat.getByTestId('heat-cell');
      const n = await cells.count();
      const first = cells.nth(n / 4); // rank 1's row, the oldest window shown
      const step = /window at step (\d+)/.exec((await first.getAttribute('aria-label'))!)![1]!;
      await first.click();
      await expect.poll(() => page.getByTestId('rank-phases').textContent()).toContain(`window at step ${step} (`);
      expect(await page.locator('[data-testid=rank-phase-table] tbody tr').count()).toBe(4);
      expect(await heat.locator('.cell.picked').count()).toBe(4); // that window's column, every rank
      for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
        await page.setViewportSize({ width: w, height: h });
        await page.getByTestId('rank-phases').scrollIntoViewIfNeeded();
        writeFileSync(join(ARTIFACTS, `live-heatmap-${w}x${h}.png`), await page.screenshot());
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    } finally {
      stopThrottle();
    }
    await page.getByTestId('stop-run').click();
    await page.getByTestId('stop-confirm-yes').click(); // Stop asks first (issue 22 item 12)
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 120_000, interval: 500 }).toBe('cancelled');
    expect(await leftovers(serve.dataDir, 10_000, [serve.child.pid])).toEqual([]);
  }, 600_000);
});
