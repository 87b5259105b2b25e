// Issue 12, restart after a lost host, with the dashboard's server as the only client (Chromium
// against the real `cohort serve`, 3 real sshd hosts in network namespaces). A run with max
// restarts 1 that no CLI follows: launched from the Launch view, or started by `cohort run
// --detach` (which returns) and opened from History (the server attaches to it). The follower
// host h3 dies after a checkpoint (link down, sshd and every process SIGKILLed, workdir kept) and
// comes back: the server's RunController relaunches its agent (`run-rejoin`), which the page's log
// and the server's history say; the live view shows the restart (Restarts row, a marker on every
// chart), the run ends ok, and 0 processes are left on every host.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { decodeEvent, type CohortEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { CHROMIUM, type ServeProcess } from './serve-process';

const NETNS = !SSHD_MISSING && existsSync(CHROMIUM) && (await harnessMode()) === 'netns';
/**
 * Steps of each run: the crash comes after the first checkpoint, the run resumes from it and ends
 * here. The run launched from the form checkpoints every step (restarts on, no interval: ~10 % of
 * the run), each one gathered from 3 ranks: 8 steps leave 7 after the first checkpoint (at width
 * 1/4 a step is ~3× shorter than at 1, so the form's run has as many steps left as the CLI's).
 */
const STEPS = 8;
const FORM_STEPS = 8;

describe.skipIf(!NETNS)("the dashboard's server relaunches a lost host's agent, 3 real sshd hosts", () => {
  // every agent takes a silent peer for lost after 6 s, not the product's 20 s (QUICK_HOST_TIMINGS);
  // the profile is imported into the config dir the server uses; leftovers are checked when the hosts go.
  const quick = { env: { ...QUICK_HOST_TIMINGS } };
  const fx = useCohortCluster(3, { enabled: NETNS, profiles: { trio: [{ host: 0, ...quick }, { host: 1, ...quick }, { host: 2, ...quick }] } });
  const ui = useDashboard({ enabled: NETNS, env: () => ({ COHORT_CONFIG_DIR: fx().env.COHORT_CONFIG_DIR!, COHORT_KNOWN_HOSTS: fx().env.COHORT_KNOWN_HOSTS!, SSH_AUTH_SOCK: '' }) });
  let serve: ServeProcess;
  let page: Page;
  beforeEach(() => void ({ serve, page } = ui()));

  /** The run's record in the server's history (written by the server's controller, the only client). */
  const events = (id: string): CohortEvent[] => {
    const p = join(serve.dataDir, 'runs', id, 'events.jsonl');
    return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))) : [];
  };

  /** The hosts' own record of the run (the leader's, h1: the hosts share this machine's filesystem). */
  const hostEvents = (id: string): CohortEvent[] => {
    const p = join(fx().cluster.hosts[0]!.workdir, 'runs', id, 'events.jsonl');
    return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))) : [];
  };

  /** The run shown in the page, followed by the server alone: h3 dies after a checkpoint and comes back; the server relaunches it. */
  async function loseH3AndSeeTheServerRelaunch(id: string, steps: number): Promise<void> {
    const c = fx().cluster;
    await expect.poll(() => hostEvents(id).some((e) => e.type === 'checkpoint' && e.action === 'saved'), { timeout: 240_000, interval: 100 }).toBe(true);
    await crashHost(c, 2);
    await expect.poll(() => hostEvents(id).find((e) => e.type === 'restart'), { timeout: 90_000, interval: 200 }).toBeDefined();
    const restart = hostEvents(id).find((e) => e.type === 'restart')!;
    expect(restart).toMatchObject({ type: 'restart', host: 'h3', code: 'host-lost', waitingFor: ['h3'] });
    await new Promise((r) => setTimeout(r, 2000));
    await c.restartSshd(2);
    await c.setLink(2, true);

    // The server's controller, the run's only client, relaunched h3's agent: its log line is in the page and in the server's history.
    const relaunched = /h3 is back: its agent of run \S+ runs again/;
    await expect.poll(async () => (await page.getByRole('log').textContent()) ?? '', { timeout: 120_000, interval: 250 }).toMatch(relaunched);

    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 240_000, interval: 250 }).toBe('ok');
    // ...and in the server's history: checked once the run has ended, because an attaching client writes
    // its replay aside and renames it over events.jsonl only when complete (issue 24 defect 1), so
    // mid-run the file may still be the shorter copy (seen in a loaded CI run).
    await expect.poll(() => events(id).some((e) => e.type === 'log' && relaunched.test(e.message)), { timeout: 30_000 }).toBe(true);
    if (restart.type !== 'restart') return;
    expect(await page.getByTestId('restarts').textContent()).toContain(`resumed from step ${restart.resumeStep}`);
    for (const chart of ['chart-throughput', 'chart-loss']) expect(await page.getByTestId(chart).getAttribute('data-markers')).toBe('↻ restart 1');
    expect(hostEvents(id).find((e) => e.type === 'done')).toMatchObject({ status: 'ok', steps });
    expect(hostEvents(id).filter((e) => e.type === 'restart')).toHaveLength(1);
    await expect.poll(() => fx().trainerProcesses(), { timeout: 20_000, interval: 250 }).toEqual([]);
  }

  it('launched from the Launch view with max restarts 1, h3 killed after a checkpoint and back: the server relaunches its agent, the live view shows the restart, ok, 0 processes left', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'trio', ...TINY_FORM, 'batch-size': 2, 'image-size': 8, steps: FORM_STEPS, 'warmup-steps': 0, 'log-steps': 1, 'max-restarts': 1 });
    await page.getByTestId('launch-start').click();
    await expect.poll(async () => ((await page.getByTestId('run-id').textContent().catch(() => '')) ?? '').trim(), { timeout: 120_000 }).toMatch(/\S/);
    // Restarts on and no interval given: the agent checkpoints every ~10 % of the run (every step here).
    await loseH3AndSeeTheServerRelaunch((await page.getByTestId('run-id').textContent())!.trim(), FORM_STEPS);
  }, 600_000);

  it('started by `cohort run --detach` (the CLI gone), opened from History: the server attaches, relaunches h3 after it comes back, ok, 0 processes left', async () => {
    const r = ui().cli(['run', '--profile', 'trio', '--steps', String(STEPS), '--checkpoint-every', '2', ...tinyRun({ warmupSteps: 0 }), '--max-restarts', '1', '--detach', '--json']);
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(0);
    const id = (JSON.parse(r.stdout.split('\n')[0]!) as { runId?: string }).runId ?? '';
    expect(id).toMatch(/^\d{8}-\d{6}-/);
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    await page.locator(`[data-testid=history-row][data-run-id="${id}"]`).getByRole('button', { name: 'Open' }).click();
    await expect.poll(async () => ((await page.getByTestId('run-id').textContent().catch(() => '')) ?? '').trim(), { timeout: 30_000 }).toBe(id);
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 120_000, interval: 250 }).toMatch(/^(starting|training)$/);
    await loseH3AndSeeTheServerRelaunch(id, STEPS);
  }, 600_000);
});
