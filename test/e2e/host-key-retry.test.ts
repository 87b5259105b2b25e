// Issue 22 items 8 and 9 in Chromium against the real `cohort serve` and a real sshd host whose key
// is not in known_hosts yet:
// - a launch the host refuses (unknown host key) shows its failure with that launch (Launch, its
//   profile), worded for the dashboard (no `--accept-new-host-key` told to a GUI user), and not as a
//   notice over every other view;
// - "Test connection" meets the unknown key, the dialog shows it (screenshots at 1280×800 and
//   1920×1080), and "Trust and remember" tests the host again by itself: the red result gives way
//   to "connected" without another click (screenshots of that too, at both sizes).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SSHD_MISSING, startHosts, type SshdCluster } from '../harness/sshd-hosts';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, type ServeProcess } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM) || SSHD_MISSING)('unknown host key in the dashboard: errors with their launch, trust retries the test', () => {
  let hosts: SshdCluster;
  let serve: ServeProcess;
  let page: Page;
  let dir: string;
  let kh: string;

  beforeAll(async () => {
    hosts = await startHosts(1, { knownHosts: 'empty' });
    dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-host-key-'));
    kh = join(dir, 'known_hosts');
    writeFileSync(kh, '');
  }, 120_000);
  afterAll(async () => {
    await hosts?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  // Disposed before the hosts (after-hooks run in reverse order).
  const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: kh, SSH_AUTH_SOCK: '' }) });
  beforeAll(async () => {
    ({ serve, page } = ui());
    const h = hosts.hosts[0]!;
    const file = join(dir, 'lab.json');
    writeFileSync(file, JSON.stringify({ name: 'lab', hosts: [{ name: 'h1', address: h.address, port: h.port, user: hosts.user, identityFile: hosts.clientKeyPath, slots: 1, workdir: h.workdir }] }));
    const r = ui().cli(['profiles', 'import', file]);
    expect((await r.exit).code, r.stderr).toBe(0);
  }, 120_000);

  it('a refused launch: its error stays with it, in GUI words, never over the other views', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'lab', ...TINY_FORM, 'batch-size': 2, 'image-size': 8, steps: 2 });
    await page.getByTestId('launch-start').click();
    await expect.poll(() => page.getByTestId('launch-progress').getAttribute('data-state'), { timeout: 60_000 }).toBe('failed');
    const failed = await page.getByTestId('launch-failed-h1').textContent();
    expect(failed).toMatch(/unknown host key/);
    expect(failed).toContain('Trust and remember');
    expect(failed).not.toContain('--accept-new-host-key');
    expect(await page.getByTestId('notice').count()).toBe(0);
    for (const view of ['history', 'live', 'profiles']) {
      await page.getByTestId(`nav-${view}`).click();
      expect(await page.getByTestId('notice').count(), `a notice over ${view}`).toBe(0);
    }
    // Back in Launch: still there for its profile, not for another.
    await page.getByTestId('nav-launch').click();
    expect(await page.getByTestId('launch-progress').getAttribute('data-state')).toBe('failed');
    await fillLaunch(page, { profile: 'local' });
    expect(await page.getByTestId('launch-progress').count()).toBe(0);
  }, 120_000);

  it('Trust and remember tests the host again by itself: the red result gives way to "connected"', async () => {
    await page.getByTestId('nav-profiles').click();
    await page.getByTestId('profile-lab').click();
    await page.getByRole('button', { name: 'Test connection' }).click();
    const prompt = page.getByTestId('host-key-prompt');
    await prompt.waitFor({ timeout: 30_000 });
    const result = page.getByTestId('test-result-0');
    expect(await result.textContent()).toMatch(/unknown host key/);
    expect(await result.getAttribute('title')).not.toContain('--accept-new-host-key');
    expect(await page.getByTestId('test-hint-0').textContent()).toContain('Trust and remember');
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      writeFileSync(join(ARTIFACTS, `host-key-dialog-${w}x${h}.png`), await page.screenshot());
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    await prompt.getByRole('button', { name: 'Trust and remember' }).click();
    await expect.poll(() => prompt.count()).toBe(0);
    // No second click on Test connection.
    await expect.poll(() => result.textContent(), { timeout: 30_000 }).toMatch(/connected/);
    expect(await result.getAttribute('class')).toContain('ok');
    expect(await page.getByTestId('test-hint-0').count()).toBe(0);
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      writeFileSync(join(ARTIFACTS, `host-key-trusted-${w}x${h}.png`), await page.screenshot());
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  }, 120_000);
});
