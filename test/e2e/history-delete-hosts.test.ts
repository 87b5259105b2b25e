// History's Delete "on their hosts too" (issue 22 item 11; the GUI side of `cohort runs rm --hosts`,
// test/cluster/runs-rm-hosts.test.ts is the CLI's), in Chromium against the real `cohort serve`
// with 2 real sshd hosts: runs made by the real CLI with the server's history. An ended run's
// records (events, logs, checkpoints) go from both hosts and the history, each host's answer shown;
// with a host down, the dialog names it, the run stays in the history until "Delete from this
// history anyway", and the down host keeps its record; a live run is refused in the dialog.
// Nothing is faked. Screenshots: test-artifacts/history-delete-hosts-*.png.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { duoRuns } from '../helpers/duo-runs';
import { useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, type ServeProcess } from './serve-process';

const ENABLED = !SSHD_MISSING && existsSync(CHROMIUM);

/**
 * The host's sshd goes down with its open sessions (SIGKILL): the server keeps a pooled connection
 * to each host, which killing only the listening daemon would leave working; with the sessions
 * gone that connection closes and a new one is refused.
 */
function sshdDown(daemon: number): void {
  const children = (pid: number) =>
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return Number(readFileSync(`/proc/${d}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]) === pid;
        } catch {
          return false; // gone meanwhile
        }
      })
      .map(Number);
  const tree = (pid: number): number[] => [pid, ...children(pid).flatMap(tree)];
  for (const pid of tree(daemon)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
}

describe.skipIf(!ENABLED)('History: Delete on the hosts too, 2 real sshd hosts', () => {
  const fx = useCohortCluster(2, { enabled: ENABLED, profiles: { duo: [0, 1] }, deploy: 'duo' });
  const ui = useDashboard({ enabled: ENABLED, page: 'case', env: () => ({ COHORT_CONFIG_DIR: fx().env.COHORT_CONFIG_DIR!, COHORT_KNOWN_HOSTS: fx().env.COHORT_KNOWN_HOSTS!, SSH_AUTH_SOCK: '' }) });
  let serve: ServeProcess;
  let page: Page;
  beforeEach(() => void ({ serve, page } = ui()));

  const { cli, hostRecord, endedRun, liveRun } = duoRuns((args) => ui().cli(args), () => fx().cluster);
  const localRecord = (runId: string) => join(serve.dataDir, 'runs', runId);
  const rows = () => page.getByTestId('history-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id') ?? ''));
  const hostResult = (host: string) => page.locator(`[data-testid="delete-host-result"][data-host="${host}"]`);
  const shoot = async (name: string) => {
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      writeFileSync(join(ARTIFACTS, `history-delete-hosts-${name}-${w}x${h}.png`), await page.screenshot());
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  };

  /** History with `runId` selected, the Delete dialog open and "on their hosts too" ticked. */
  async function askDelete(runId: string): Promise<void> {
    await page.goto(`${serve.url}#/history`);
    await expect.poll(rows, { timeout: 30_000 }).toContain(runId);
    await page.getByLabel(`select run ${runId}`).check();
    await page.getByTestId('delete-runs').click();
    await page.getByTestId('delete-runs-dialog').waitFor();
    await page.getByTestId('delete-runs-hosts').check();
    expect(await page.getByTestId('delete-runs-dialog').textContent()).toContain('events, logs and checkpoints');
  }

  it("removes an ended run's records on both hosts and from the history, each host's answer shown", async () => {
    const runId = await endedRun();
    expect(readdirSync(join(hostRecord(0, runId), 'checkpoints')).length).toBeGreaterThan(0);
    expect(existsSync(join(hostRecord(1, runId), 'events.jsonl'))).toBe(true);
    await askDelete(runId);
    await page.getByTestId('delete-runs-confirm').click();
    const [h1, h2] = fx().cluster.hosts.map((h) => h.name) as [string, string];
    await hostResult(h1).waitFor({ timeout: 60_000 });
    expect(await hostResult(h1).getAttribute('data-outcome')).toBe('removed');
    expect(await hostResult(h1).textContent()).toMatch(new RegExp(`removed ${hostRecord(0, runId)} \\(\\d+ files, [\\d.]+ [KM]iB, \\d+ checkpoint files?\\)`));
    expect(await hostResult(h2).getAttribute('data-outcome')).toBe('removed');
    expect(await hostResult(h2).textContent()).toContain(`removed ${hostRecord(1, runId)}`);
    const result = page.getByTestId('delete-run-result');
    expect(await result.getAttribute('data-deleted')).toBe('true');
    expect(await result.textContent()).toContain('deleted from this history');
    expect(await page.getByTestId('delete-runs-anyway').count()).toBe(0);
    await shoot('removed');
    expect(existsSync(hostRecord(0, runId)) || existsSync(hostRecord(1, runId)) || existsSync(localRecord(runId))).toBe(false);
    await page.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => page.getByTestId('delete-runs-dialog').count()).toBe(0);
    expect(await rows()).not.toContain(runId);
  }, 240_000);

  it('names a host it cannot reach and keeps the run until "Delete from this history anyway"; that host keeps its record', async () => {
    const runId = await endedRun();
    const { cluster } = fx();
    const [h1, h2] = cluster.hosts.map((h) => h.name) as [string, string];
    sshdDown(cluster.hosts[1]!.sshdPid); // h2 refuses connections from now on
    try {
      await askDelete(runId);
      await page.getByTestId('delete-runs-confirm').click();
      await hostResult(h2).waitFor({ timeout: 60_000 });
      expect(await hostResult(h1).getAttribute('data-outcome')).toBe('removed');
      expect(await hostResult(h2).getAttribute('data-outcome')).toBe('unreachable');
      const unreached = (await hostResult(h2).textContent()) ?? '';
      expect(unreached).toContain('not reached: ');
      // The SSH error's hint once (it was appended again after a message that already ends with it).
      expect(unreached.match(/is sshd running/g), unreached).toHaveLength(1);
      const result = page.getByTestId('delete-run-result');
      expect(await result.getAttribute('data-deleted')).toBe('false');
      expect(await result.textContent()).toContain('kept in this history: a host was not reached');
      expect(existsSync(localRecord(runId))).toBe(true);
      expect(existsSync(hostRecord(0, runId))).toBe(false);
      await shoot('unreached');
      await page.getByTestId('delete-runs-anyway').click();
      await expect.poll(() => result.getAttribute('data-deleted'), { timeout: 60_000 }).toBe('true');
      // h1's first answer stays (asked again, it has nothing left); h2 still not reached.
      expect(await hostResult(h1).getAttribute('data-outcome')).toBe('removed');
      expect(await hostResult(h2).getAttribute('data-outcome')).toBe('unreachable');
      expect(existsSync(localRecord(runId))).toBe(false);
      expect(existsSync(hostRecord(1, runId)), "the unreachable host's record is still there").toBe(true);
      await page.getByRole('button', { name: 'Close' }).click();
      expect(await rows()).not.toContain(runId);
    } finally {
      await cluster.restartSshd(1);
    }
  }, 240_000);

  it('refuses a live run in the dialog: nothing removed anywhere', async () => {
    const runId = await liveRun();
    try {
      await askDelete(runId);
      await page.getByTestId('delete-runs-confirm').click();
      const error = page.getByTestId('delete-runs-error');
      await error.waitFor({ timeout: 60_000 });
      expect(await error.textContent()).toContain(`run ${runId} (`);
      expect(await error.textContent()).toContain('stop it in Live run first');
      expect(await page.getByTestId('delete-host-result').count()).toBe(0);
      expect(existsSync(hostRecord(0, runId)) && existsSync(hostRecord(1, runId)) && existsSync(localRecord(runId))).toBe(true);
      await page.keyboard.press('Escape');
      expect(await rows()).toContain(runId);
    } finally {
      expect((await cli('stop', runId)).code).toBe(0);
    }
  }, 240_000);
});
