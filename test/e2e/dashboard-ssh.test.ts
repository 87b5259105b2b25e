// The dashboard against a real sshd host (test/harness): a profile made in the UI, "Test
// connection" meeting an unknown host key, the trust prompt showing the SHA256 fingerprint that
// ssh-keygen computes from the host's key, trusting it, then connecting and probing.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHosts, type SshdCluster } from '../harness/sshd-hosts';
import { useDashboard } from './open-dashboard';
import { CHROMIUM, ROOT, type ServeProcess } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM) || !existsSync('/usr/sbin/sshd'))('dashboard with a real SSH host', () => {
  let hosts: SshdCluster;
  let serve: ServeProcess;
  let page: Page;
  let dir: string;

  beforeAll(async () => {
    hosts = await startHosts(1, { knownHosts: 'empty' });
    dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-ssh-'));
    writeFileSync(join(dir, 'known_hosts'), '');
  });
  afterAll(async () => {
    await hosts?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: join(dir, 'known_hosts'), SSH_AUTH_SOCK: '' }) });
  beforeAll(() => void ({ serve, page } = ui()));

  it('prompts with the SHA256 fingerprint and sends the trust to core', async () => {
    const h = hosts.hosts[0]!;
    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${h.hostKeyPath}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
    expect(fingerprint).toMatch(/^SHA256:/);
    await page.goto(serve.url);
    await page.getByTestId('new-profile').click();
    await page.getByTestId('profile-name').fill('lab');
    await page.getByTestId('host-0-name').fill('h1');
    await page.getByTestId('host-0-address').fill(h.address);
    await page.locator('label:has-text("Port") input').fill(String(h.port));
    await page.locator('label:has-text("User") input').fill(h.user);
    await page.locator('label:has-text("Auth") select').selectOption('key');
    await page.locator('label:has-text("Key file") input').fill(hosts.clientKeyPath);
    await page.getByTestId('save-profile').click();
    await page.getByTestId('profile-lab').waitFor();

    await page.getByRole('button', { name: 'Test connection' }).click();
    const prompt = page.getByTestId('host-key-prompt');
    await prompt.waitFor({ timeout: 30_000 });
    expect(await prompt.textContent()).toContain(fingerprint);
    writeFileSync(join(ROOT, 'test-artifacts', '08-host-key-prompt.png'), await page.screenshot());
    await prompt.getByRole('button', { name: 'Trust and remember' }).click();
    await expect.poll(() => prompt.count()).toBe(0);
    expect(await page.getByTestId('notice').filter({ hasText: 'Trusted h1' }).count()).toBe(1);
  });

  // Trust records the key (core compares the presented fingerprint with the confirmed one first),
  // so the next connection is verified against it.
  it('after trusting: connects and probes the host', async () => {
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => page.locator('.badge.ok').filter({ hasText: 'connected' }).count(), { timeout: 10_000 }).toBe(1);

    await page.getByTestId('nav-hosts').click();
    await page.getByTestId('hosts-profile').selectOption('lab');
    await page.getByRole('button', { name: 'Probe' }).click();
    await expect.poll(() => page.locator('.badge.ok').filter({ hasText: 'reachable' }).count(), { timeout: 60_000 }).toBe(1);
    writeFileSync(join(ROOT, 'test-artifacts', '09-hosts-probe.png'), await page.screenshot());
  });
});
