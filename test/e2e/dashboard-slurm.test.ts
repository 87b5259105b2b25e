// Issue 16 in the dashboard: Chromium against the real `cohort serve` and a real Slurm cluster
// (test/harness/slurm-cluster.ts: slurmctld + 2 slurmd in network namespaces, the login node an
// sshd host). A Slurm profile is made through the form (a bad field's error under that field),
// probed (version, partitions with idle/total nodes, workdir seen from a compute node), and a run
// launched while a blocker job holds every node shows "queued: Slurm reason …, position 1". Stop
// while queued cancels the job (scancel: it leaves squeue); a second run starts when the blocker
// ends, trains, and is stopped with nothing left on any node.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { SLURM_MISSING, nodeTrainerProcesses, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, screenshotsAllSizes, type ServeProcess } from './serve-process';

/** A Slurm command that cannot reach its controller is given up after 10 s here, not the product's 30 s (trainer/protocol/timings.ts). */
const LOGIN_COMMAND_TIMEOUT_S = 10;

describe.skipIf(!existsSync(CHROMIUM) || !!SLURM_MISSING)('dashboard with a real Slurm cluster', () => {
  let c: SlurmCluster;
  beforeAll(async () => {
    c = await startSlurmCluster({ nodes: 2 });
  }, 120_000);
  afterAll(async () => {
    await c?.dispose();
  });
  const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '', COHORT_LOGIN_COMMAND_TIMEOUT_MS: String(LOGIN_COMMAND_TIMEOUT_S * 1000) }) });
  let serve: ServeProcess;
  let page: Page;
  beforeEach(() => void ({ serve, page } = ui()));

  /** Cohort's jobs in squeue (the blocker is named "wrap"). */
  const cohortJobs = async () => (await c.login$(`squeue -h -o '%j %T'`)).stdout.split('\n').filter((l) => l.startsWith('cohort-'));
  const nodeTrainers = () => nodeTrainerProcesses(c);

  async function launch(): Promise<string> {
    // The run Live shows now, read without waiting (Launch has no run id: reading it there waited
    // out playwright's 30 s default for nothing, twice a file).
    const before = (await page.getByTestId('run-id').count()) ? ((await page.getByTestId('run-id').textContent()) ?? '').trim() : '';
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'hpc' });
    expect(await page.getByTestId('world-size').textContent()).toContain('Slurm: 2 node(s) × 1 task(s) per node = 2 rank(s)');
    await fillLaunch(page, { ...TINY_FORM, 'batch-size': 2, 'image-size': 8, steps: 100000, 'warmup-steps': 1, 'log-steps': 1 });
    await page.getByTestId('launch-start').click();
    const shown = async () => ((await page.getByTestId('run-id').textContent({ timeout: 1000 }).catch(() => '')) ?? '').trim();
    await expect.poll(async () => { const id = await shown(); return id !== before ? id : ''; }, { timeout: 60_000 }).toMatch(/\S/); // Live shows the new run
    return (await page.getByTestId('run-id').textContent())!.trim();
  }

  it('creates a Slurm profile in the form, probes its partitions, shows a queued run\'s reason and position, stops it, and starts the next when the nodes free', async () => {
    await page.goto(serve.url);
    await page.getByTestId('new-profile').click();
    await page.getByTestId('profile-name').fill('hpc');
    await page.getByTestId('profile-scheduler').selectOption('slurm');
    await page.getByTestId('slurm-partition').fill('debug');
    await page.getByTestId('slurm-nodes').fill('2');
    await page.getByTestId('slurm-tasks-per-node').fill('1');
    // A bad field: its error shows under it once left, from the one profile decoder.
    await page.getByTestId('slurm-time-limit').fill('two hours');
    await page.getByTestId('slurm-time-limit').blur();
    expect(await page.getByTestId('error-scheduler.timeLimit').textContent()).toMatch(/Slurm's time format/);
    expect(await page.getByTestId('error-scheduler.nodes').count()).toBe(0);
    await page.getByTestId('slurm-time-limit').fill('30');
    await expect.poll(() => page.getByTestId('error-scheduler.timeLimit').count()).toBe(0);
    const h = c.login;
    await page.getByTestId('host-0-name').fill('login');
    await page.getByTestId('host-0-address').fill(h.address);
    await page.getByTestId('host-0-port').fill(String(h.port));
    await page.getByTestId('host-0-user').fill(c.ssh.user);
    await page.getByTestId('host-0-auth').selectOption('key');
    await page.getByTestId('host-0-key').fill(c.ssh.clientKeyPath);
    await page.getByTestId('host-0-workdir').fill(join(c.sharedDir, 'work'));
    expect(await page.getByTestId('host-0-slots').count()).toBe(0); // the login node runs no ranks
    await page.getByTestId('save-profile').click();
    await page.getByTestId('profile-hpc').waitFor();
    expect(await page.getByTestId('profile-hpc').textContent()).toContain('Slurm · debug · 2 × 1 rank(s)');
    await screenshotsAllSizes(page, ARTIFACTS, 'slurm-profile-form');

    // Probe through the login node: the partitions with idle/total nodes, the workdir seen by a compute node.
    await page.getByTestId('nav-hosts').click();
    await page.getByTestId('hosts-profile').selectOption('hpc');
    await page.getByRole('button', { name: 'Probe' }).click();
    await page.getByTestId('slurm-version').waitFor({ timeout: 120_000 });
    expect(await page.getByTestId('slurm-version').textContent()).toBe((await c.login$('sinfo --version')).stdout.trim());
    expect(await page.getByTestId('slurm-partition-debug-nodes').textContent()).toBe('2 / 2');
    expect(await page.getByTestId('slurm-partition-debug').textContent()).toContain('up');
    expect(await page.getByTestId('slurm-nodes').textContent()).toMatch(/n1 .*n2/);
    expect(await page.getByTestId('slurm-workdir').textContent()).toContain('seen from a compute node');
    expect(await page.getByTestId('slurm-accounts').textContent()).toMatch(/\S/);
    await screenshotsAllSizes(page, ARTIFACTS, 'slurm-probe', { fullPage: true });

    // Fill the partition: a blocker job holds both nodes.
    const blocker = (await c.login$(`sbatch --parsable --exclusive -N2 -p debug --wrap 'sleep 300'`)).stdout.trim();
    expect(blocker).toMatch(/^\d+$/);
    await expect.poll(async () => (await c.login$(`squeue -h -j ${blocker} -o %T`)).stdout.trim(), { timeout: 60_000, interval: 500 }).toBe('RUNNING');

    // A run launched now waits in Slurm's queue: the Live view says why and where.
    const a = await launch();
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 90_000 }).toBe('queued');
    await expect.poll(() => page.getByTestId('queued-slurm').textContent().catch(() => ''), { timeout: 60_000 }).toMatch(/queued: Slurm reason (Resources|Priority), position 1 in debug \(job \d+\)/);
    expect((await cohortJobs()).map((l) => l.split(' ')[1])).toEqual(['PENDING']);
    await screenshotsAllSizes(page, ARTIFACTS, 'slurm-queued');
    // A reload re-attaches to the queued run: its record holds the queue state.
    await page.reload();
    await page.getByTestId('nav-live').click();
    await expect.poll(() => page.getByTestId('queued-slurm').textContent().catch(() => ''), { timeout: 30_000 }).toMatch(/queued: Slurm reason (Resources|Priority), position 1 in debug/);
    expect((await page.getByTestId('run-id').textContent())?.trim()).toBe(a);

    // Stop while queued: scancel, the job leaves squeue, the run ends cancelled.
    await page.getByTestId('stop-run').click();
    await page.getByTestId('stop-confirm-yes').click(); // Stop asks first
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 60_000 }).toBe('cancelled');
    await expect.poll(cohortJobs, { timeout: 30_000, interval: 500 }).toEqual([]);
    expect((await c.login$(`squeue -h -j ${blocker} -o %T`)).stdout.trim()).toBe('RUNNING');

    // The next run waits too, then starts when the blocker ends.
    const b = await launch();
    expect(b).not.toBe(a);
    await expect.poll(() => page.getByTestId('queued-slurm').textContent().catch(() => ''), { timeout: 90_000 }).toMatch(/position 1/);
    await c.login$(`scancel ${blocker}`);
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 120_000, interval: 250 }).toBe('training');
    expect(await page.getByTestId('queued-slurm').count()).toBe(0);
    expect((await cohortJobs()).map((l) => l.split(' ')[1])).toEqual(['RUNNING']);
    await page.getByTestId('stop-run').click();
    await page.getByTestId('stop-confirm-yes').click(); // Stop asks first
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 60_000 }).toBe('cancelled');
    await expect.poll(cohortJobs, { timeout: 30_000, interval: 500 }).toEqual([]);
    await expect.poll(nodeTrainers, { timeout: 30_000, interval: 500 }).toEqual([]);
  }, 300_000);

  it('a probe that fails says why, and a partition the cluster lacks is named with the ones it has', async () => {
    const probeAfterEdit = async (edit: () => Promise<void>) => {
      await page.getByTestId('nav-profiles').click();
      await page.getByTestId('profile-hpc').click();
      await edit();
      const saved = page.getByTestId('notice').filter({ hasText: 'Profile "hpc" saved' });
      await expect.poll(() => saved.count(), { timeout: 10_000 }).toBe(0); // the previous save's notice has gone (4 s)
      await page.getByTestId('save-profile').click();
      await saved.waitFor();
      await page.getByTestId('nav-hosts').click();
      await page.getByTestId('hosts-profile').selectOption('hpc');
      await page.getByRole('button', { name: 'Probe' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Probe' }).textContent(), { timeout: 120_000 }).toBe('Probe');
    };
    // The login node's Slurm commands cannot find the cluster (sinfo then waits, it does not fail):
    // the probe fails naming the command and where to look (it said only "login: cancelled" before).
    await probeAfterEdit(() => page.locator('label:has-text("Env") textarea').fill('SLURM_CONF=/nonexistent/slurm.conf'));
    const failed = page.getByTestId('slurm-probe-error');
    await failed.waitFor({ timeout: 60_000 });
    // The server's env set the login-command timeout (COHORT_LOGIN_COMMAND_TIMEOUT_MS): the message names it.
    expect(await failed.textContent()).toMatch(new RegExp(`Probe failed: (login: \`sinfo[^\`]*\` did not finish within ${LOGIN_COMMAND_TIMEOUT_S} s on the login node|sinfo failed on the login node \\(exit \\d+\\)).*SLURM_CONF`, 's'));
    expect(await page.getByTestId('slurm-partitions').count()).toBe(0);
    // A partition that does not exist: the probe works and says which partitions there are.
    await probeAfterEdit(async () => {
      await page.locator('label:has-text("Env") textarea').fill('');
      await page.getByTestId('slurm-partition').fill('nope');
    });
    await page.getByTestId('slurm-partitions').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('slurm-partition-missing').textContent()).toContain('Partition nope does not exist on this cluster: set the profile\'s partition to one of debug.');
  }, 180_000);
});
