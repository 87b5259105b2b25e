// Issue 12, restart after a lost host, with the dashboard's server as the only client (Chromium
// against the real `cohort serve`, 3 real sshd hosts in network namespaces). A run with max
// restarts 1 that no CLI follows: launched from the Launch view, or started by `cohort run
// --detach` (which returns) and opened from History (the server attaches to it). The follower
// host h3 dies after a checkpoint (link down, sshd and every process SIGKILLed, workdir kept) and
// comes back: the server's RunController relaunches its agent (`run-rejoin`), which the page's log
// and the server's history say; the live view shows the restart (Restarts row, a marker on every
// chart), the run ends ok, and 0 processes are left on every host.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEvent, type CohortEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, leftovers, SSHD_MISSING, startHosts, trainerProcesses, type SshdCluster } from '../harness/sshd-hosts';
import { runCli } from '../helpers/cli';
import { QUICK_HOST_TIMINGS } from '../helpers/tiny';
import { fillLaunch, openDashboard, type Dashboard } from './open-dashboard';
import { CHROMIUM, type ServeProcess } from './serve-process';

const NETNS = !SSHD_MISSING && existsSync(CHROMIUM) && (await harnessMode()) === 'netns';

describe.skipIf(!NETNS)("the dashboard's server relaunches a lost host's agent, 3 real sshd hosts", () => {
  let cluster: SshdCluster | undefined;
  let dash: Dashboard | undefined;
  let serve: ServeProcess;
  let page: Page;
  let dir = '';
  let cliEnv: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    cluster = await startHosts(3);
    dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-host-restart-'));
    const kh = join(dir, 'known_hosts');
    copyFileSync(cluster.knownHostsPath, kh);
    dash = await openDashboard({ env: { COHORT_KNOWN_HOSTS: kh, SSH_AUTH_SOCK: '' } });
    ({ serve, page } = dash);
    const env = { COHORT_CONFIG_DIR: join(serve.dataDir, '..', 'config'), COHORT_DATA_DIR: serve.dataDir, HOME: join(serve.dataDir, '..', 'home'), COHORT_KNOWN_HOSTS: kh, SSH_AUTH_SOCK: '' };
    const c = cluster;
    // every agent takes a silent peer for lost after 6 s, not the product's 20 s (QUICK_HOST_TIMINGS)
    const hosts = c.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: c.user, identityFile: c.clientKeyPath, slots: 1, workdir: h.workdir, env: { ...QUICK_HOST_TIMINGS } }));
    const file = join(dir, 'trio.json');
    writeFileSync(file, JSON.stringify({ name: 'trio', hosts }));
    cliEnv = env;
    const r = runCli(['profiles', 'import', file], { env });
    expect((await r.exit).code, r.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    await dash?.dispose();
    const id = cluster?.id;
    await cluster?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
  });

  /** The run's record in the server's history (written by the server's controller, the only client). */
  const events = (id: string): CohortEvent[] => {
    const p = join(serve.dataDir, 'runs', id, 'events.jsonl');
    return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))) : [];
  };

  /** The hosts' own record of the run (the leader's, h1: the hosts share this machine's filesystem). */
  const hostEvents = (id: string): CohortEvent[] => {
    const p = join(cluster!.hosts[0]!.workdir, 'runs', id, 'events.jsonl');
    return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))) : [];
  };

  /** The run shown in the page, followed by the server alone: h3 dies after a checkpoint and comes back; the server relaunches it. */
  async function loseH3AndSeeTheServerRelaunch(id: string, steps: number): Promise<void> {
    const c = cluster!;
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
    await expect.poll(() => trainerProcesses(c), { timeout: 20_000, interval: 250 }).toEqual([]);
  }

  it('launched from the Launch view with max restarts 1, h3 killed after a checkpoint and back: the server relaunches its agent, the live view shows the restart, ok, 0 processes left', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'trio', stem: 'cifar', classes: 10, 'batch-size': 2, 'image-size': 8, steps: 14, 'warmup-steps': 0, 'log-steps': 1, 'max-restarts': 1 });
    await page.getByTestId('launch-start').click();
    await expect.poll(async () => ((await page.getByTestId('run-id').textContent().catch(() => '')) ?? '').trim(), { timeout: 120_000 }).toMatch(/\S/);
    // Restarts on and no interval given: the agent checkpoints every ~10 % of the run (every step here).
    await loseH3AndSeeTheServerRelaunch((await page.getByTestId('run-id').textContent())!.trim(), 14);
  }, 600_000);

  it('started by `cohort run --detach` (the CLI gone), opened from History: the server attaches, relaunches h3 after it comes back, ok, 0 processes left', async () => {
    const r = runCli(['run', '--profile', 'trio', '--steps', '14', '--checkpoint-every', '3', '--stem', 'cifar', '--image-size', '8', '--batch-size', '2', '--classes', '10', '--warmup-steps', '0', '--log-steps', '1', '--max-restarts', '1', '--detach', '--json'], { env: cliEnv });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(0);
    const id = (JSON.parse(r.stdout.split('\n')[0]!) as { runId?: string }).runId ?? '';
    expect(id).toMatch(/^\d{8}-\d{6}-/);
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    await page.locator(`[data-testid=history-row][data-run-id="${id}"]`).getByRole('button', { name: 'Open' }).click();
    await expect.poll(async () => ((await page.getByTestId('run-id').textContent().catch(() => '')) ?? '').trim(), { timeout: 30_000 }).toBe(id);
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 120_000, interval: 250 }).toMatch(/^(starting|training)$/);
    await loseH3AndSeeTheServerRelaunch(id, 14);
  }, 600_000);
});
