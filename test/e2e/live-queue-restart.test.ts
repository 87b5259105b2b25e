// Issue 12 in the dashboard (Chromium against the real `cohort serve`, real local runs): a run
// asked for on busy slots shows `queued behind RUN`, starts when the slots free, and a rank killed
// with SIGKILL after a checkpoint (max restarts 1) shows as a restart: the Restarts row, a marker
// on every chart at the step resumed from, the run finishing ok. Also the time x axis (issue 15).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeEvent, type CohortEvent } from '../../trainer/protocol';
import { killLeftovers, ranksOf } from '../helpers/host';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, screenshotsAllSizes } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM))('queued and restarted runs in the live view', () => {
  const ui = useDashboard();
  const runIds: string[] = [];
  afterAll(() => killLeftovers(runIds));

  const events = (id: string): CohortEvent[] => {
    const p = join(ui().serve.dataDir, 'runs', id, 'events.jsonl');
    return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))) : [];
  };

  /** The runs holding slot `n` of the local profile's workdir (the agents' lease files). */
  const leaseHolders = (n: number): string[] => {
    const dir = join(ui().serve.dataDir, 'local', 'leases', `slot-${n}`);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => /^held-.*\.json$/.test(f))
      .map((f) => {
        try {
          return (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { runId?: string }).runId ?? '';
        } catch {
          return ''; // being written
        }
      })
      .filter(Boolean);
  };

  async function launch(o: { ranks: number; steps: number; maxRestarts: number }): Promise<string> {
    const { page } = ui();
    // The run Live shows now, read without waiting (Launch has no run id: reading it there waited
    // out playwright's 30 s default for nothing, twice a file).
    const before = (await page.getByTestId('run-id').count()) ? ((await page.getByTestId('run-id').textContent()) ?? '').trim() : '';
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'local', ...TINY_FORM, ranks: o.ranks, 'batch-size': 2, 'image-size': 8, steps: o.steps, 'warmup-steps': 1, 'log-steps': 1, 'max-restarts': o.maxRestarts });
    await page.getByTestId('launch-start').click();
    const shown = async () => ((await page.getByTestId('run-id').textContent({ timeout: 1000 }).catch(() => '')) ?? '').trim();
    await expect.poll(async () => { const id = await shown(); return id !== before ? id : ''; }, { timeout: 30_000 }).toMatch(/\S/); // Live shows the new run
    const id = (await page.getByTestId('run-id').textContent())!.trim();
    runIds.push(id);
    return id;
  }

  it('shows a run queued behind the one holding its slots, then its restart after a rank is killed', async () => {
    const { page, serve } = ui();
    await page.goto(serve.url);
    const a = await launch({ ranks: 1, steps: 5000, maxRestarts: 0 });
    // A holds slot 0 once its agent's lease is there (trainer/agent/leases.ts): B is launched while
    // A's rank still starts, so the page's queue is shown during A's start-up, not after it.
    await expect.poll(() => leaseHolders(0), { timeout: 120_000, interval: 100 }).toEqual([a]);

    // B needs slot 0, which A holds. 24 steps (a checkpoint each, restarts on): at width 1/4 B is
    // still training when its rank is killed a step past its first checkpoint, below.
    const b = await launch({ ranks: 1, steps: 24, maxRestarts: 1 });
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 30_000 }).toBe('queued');
    expect(await page.getByTestId('queued-behind').textContent()).toContain(`queued behind ${a}`);
    await screenshotsAllSizes(page, ARTIFACTS, 'live-queued');
    // B stays queued while A trains (A's record has steps).
    await expect.poll(() => events(a).some((e) => e.type === 'step'), { timeout: 180_000, interval: 250 }).toBe(true);
    expect(await page.getByTestId('phase').textContent()).toBe('queued');

    // A ends (stopped from the CLI): B starts on the freed slot.
    const stop = ui().cli(['stop', a]);
    expect((await stop.exit).code, stop.stderr).toBe(0);
    await expect.poll(() => events(b).some((e) => e.type === 'checkpoint' && e.action === 'saved'), { timeout: 180_000, interval: 100 }).toBe(true);
    const ckpt = events(b).find((e) => e.type === 'checkpoint' && e.action === 'saved');
    expect(await page.getByTestId('queued-behind').count()).toBe(0);
    // Kill B's rank once it logged a step past that checkpoint (the case CI met by chance under
    // load): the run restarts from the last checkpoint, that step is redone as the restart's warm-up
    // step (not logged again) and the run finishes ok.
    const past = ckpt?.type === 'checkpoint' ? ckpt.step : 0;
    await expect.poll(() => events(b).some((e) => e.type === 'step' && e.step > past), { timeout: 120_000, interval: 50 }).toBe(true);
    const rank = ranksOf(b)[0]!;
    process.kill(rank.pid, 'SIGKILL');
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 240_000, interval: 250 }).toBe('ok');
    const restart = events(b).find((e) => e.type === 'restart');
    expect(restart?.type).toBe('restart');
    if (restart?.type !== 'restart') return;
    expect(await page.getByTestId('restarts').textContent()).toContain(`resumed from step ${restart.resumeStep}`);
    for (const chart of ['chart-throughput', 'chart-loss', 'chart-memory']) {
      expect(await page.getByTestId(chart).getAttribute('data-markers')).toBe('↻ restart 1');
    }
    // The redone steps are not drawn twice: the chart holds each step of the run as it ended once,
    // those logged up to the step resumed from, then those logged after the restart. A step the
    // killed rank logged past the checkpoint is redone as the restart's warm-up step, which is not
    // logged (as the first warm-up step is not), so its point goes and none comes back in its place.
    const record = events(b);
    const at = record.findIndex((e) => e.type === 'restart');
    const stepsOf = (es: CohortEvent[]) => es.flatMap((e) => (e.type === 'step' ? [e.step] : []));
    const before = stepsOf(record.slice(0, at)).filter((s) => s <= restart.resumeStep);
    const after = stepsOf(record.slice(at + 1));
    expect(after.length).toBeGreaterThan(0);
    const shown = [...new Set([...before, ...after])];
    const chart = page.getByTestId('chart-throughput');
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 10_000 }).toBe(String(shown.length));
    expect(await chart.getAttribute('data-x-range')).toBe(`${Math.min(...shown)},${Math.max(...shown)}`);
    // A CPU run: the GPU utilisation panel says so instead of drawing zeros.
    expect(await page.getByTestId('chart-gpu-util').getAttribute('data-state')).toBe('no-gpu');
    expect(await page.locator('[data-testid=chart-gpu-util] canvas').count()).toBe(0);
    await screenshotsAllSizes(page, ARTIFACTS, 'live-restart', { fullPage: true });

    // The time axis: same points, x in seconds since the run began.
    await page.getByTestId('x-time').click();
    await expect.poll(() => page.getByTestId('chart-throughput').getAttribute('data-x-axis')).toBe('time (s)');
    const over = page.locator('[data-testid=chart-throughput] .u-over');
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    const [x] = await page.locator('[data-testid=chart-throughput] .u-legend .u-value').allTextContents();
    expect(x).toMatch(/^\d+\.\d$/);
    await page.mouse.move(0, 0);
    await screenshotsAllSizes(page, ARTIFACTS, 'live-restart-time-axis', { fullPage: true });
    await page.getByTestId('x-step').click();
  }, 600_000);
});
