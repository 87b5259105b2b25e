// Host setup without traps (issue 15) and the passphrase dialog (issue 14 item 5), in Chromium
// against the real `cohort serve` and a real sshd host (test/harness):
// - an untouched new profile shows no error; errors appear under the field the user left;
// - "Test connection" on an UNSAVED form connects with the form's values (nothing is saved);
// - an encrypted key with no ssh-agent: the dashboard asks for the passphrase in a dialog (a wrong
//   one is asked again), connects, and the passphrase appears in no file or log of the server.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SSHD_MISSING, startHosts, type SshdCluster } from '../harness/sshd-hosts';
import { useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, screenshotsAllSizes, type ServeProcess } from './serve-process';

const PASSPHRASE = 'correct horse 7 battery';

/** Every file under dir (recursively) whose bytes contain needle. */
function filesContaining(dir: string, needle: string): string[] {
  const hits: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) hits.push(...filesContaining(p, needle));
    else if (e.isFile() && statSync(p).size < 64 * 2 ** 20 && readFileSync(p).includes(needle)) hits.push(p);
  }
  return hits;
}

describe.skipIf(!existsSync(CHROMIUM) || !!SSHD_MISSING)('host setup in the dashboard, real sshd host', () => {
  let hosts: SshdCluster;
  let serve: ServeProcess;
  let page: Page;
  let dir: string;
  let encKey: string;

  beforeAll(async () => {
    hosts = await startHosts(1);
    dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-hostsetup-'));
    encKey = join(dir, 'enc_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', PASSPHRASE, '-C', 'cohort-enc', '-f', encKey]);
    await hosts.authorize(readFileSync(`${encKey}.pub`, 'utf8'));
  });
  afterAll(async () => {
    await hosts?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  // No ssh-agent: the encrypted key can only be unlocked with its passphrase.
  const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: hosts.knownHostsPath, SSH_AUTH_SOCK: '' }) });
  beforeAll(() => void ({ serve, page } = ui()));

  async function fillHost(keyPath: string): Promise<void> {
    const h = hosts.hosts[0]!;
    await page.getByTestId('host-0-name').fill('h1');
    await page.getByTestId('host-0-address').fill(h.address);
    await page.getByTestId('host-0-port').fill(String(h.port));
    await page.getByTestId('host-0-user').fill(h.user);
    await page.getByTestId('host-0-auth').selectOption('key');
    await page.getByTestId('host-0-key').fill(keyPath);
  }

  it('an untouched form shows no error; a field left wrong shows its error under itself', async () => {
    await page.goto(serve.url);
    await page.getByTestId('new-profile').click();
    await page.getByTestId('host-0-address').waitFor();
    // The new host has no address yet (invalid), but nobody has touched it: no red anywhere.
    expect(await page.locator('[aria-invalid=true]').count()).toBe(0);
    expect(await page.locator('.field-error').count()).toBe(0);

    await page.getByTestId('host-0-port').fill('99999');
    await page.getByTestId('host-0-port').blur();
    const portError = page.locator('label', { has: page.getByTestId('host-0-port') }).getByTestId('error-h0.port');
    await expect.poll(() => portError.textContent()).toMatch(/65535/);
    // The address is still empty but untouched: its error waits.
    expect(await page.getByTestId('error-h0.address').count()).toBe(0);
    // Save reveals every error, each under its own field.
    await page.getByTestId('save-profile').click();
    const addressError = page.locator('label', { has: page.getByTestId('host-0-address') }).getByTestId('error-h0.address');
    await expect.poll(() => addressError.count()).toBe(1);
    expect(await page.locator('.field-error').filter({ hasText: '65535' }).count()).toBe(1);
    await screenshotsAllSizes(page, ARTIFACTS, 'profile-form-errors');
  });

  it('Test connection works on an unsaved form, with the values typed', async () => {
    await page.getByTestId('new-profile').click();
    await page.getByTestId('profile-name').fill('unsaved-lab');
    await fillHost(hosts.clientKeyPath);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => page.getByTestId('test-result-0').textContent(), { timeout: 30_000 }).toMatch(/^connected · \d+ ms$/);
    // Nothing was saved by testing.
    expect(await page.getByTestId('profile-unsaved-lab').count()).toBe(0);
    expect(existsSync(join(serve.dataDir, '..', 'config', 'profiles', 'unsaved-lab.json'))).toBe(false);
    await screenshotsAllSizes(page, ARTIFACTS, 'profile-test-unsaved');

    // The test uses the form as it is now, not a cached connection: a wrong port fails.
    await page.getByTestId('host-0-port').fill('1');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => page.getByTestId('test-result-0').getAttribute('class'), { timeout: 30_000 }).toContain('bad');
  });

  it('an encrypted key without ssh-agent: asks for the passphrase, retries a wrong one, connects, stores it nowhere', async () => {
    await page.getByTestId('new-profile').click();
    await page.getByTestId('profile-name').fill('enc-lab');
    await fillHost(encKey);
    await page.getByRole('button', { name: 'Test connection' }).click();

    const prompt = page.getByTestId('passphrase-prompt');
    await prompt.waitFor({ timeout: 30_000 });
    expect(await prompt.textContent()).toContain(encKey);
    await screenshotsAllSizes(page, ARTIFACTS, 'passphrase-dialog');
    await page.getByTestId('passphrase-input').fill('not the passphrase');
    await page.getByTestId('passphrase-submit').click();
    await expect.poll(() => page.getByTestId('passphrase-wrong').count(), { timeout: 15_000 }).toBe(1);
    await page.getByTestId('passphrase-input').fill(PASSPHRASE);
    await page.getByTestId('passphrase-submit').click();
    await expect.poll(() => page.getByTestId('test-result-0').textContent(), { timeout: 30_000 }).toMatch(/^connected/);
    expect(await prompt.count()).toBe(0);

    // Never stored or logged: not in the server's output, config, data or HOME.
    expect(serve.stdout() + serve.stderr()).not.toContain(PASSPHRASE);
    expect(filesContaining(join(serve.dataDir, '..'), PASSPHRASE)).toEqual([]);
  });

  it('cancelling the dialog fails the test with a clear error instead of hanging', async () => {
    // A new serve process has no decrypted key cached; this one has, so use a fresh copy of the key.
    const copy = join(dir, 'enc_copy');
    execFileSync('cp', [encKey, copy]);
    execFileSync('chmod', ['600', copy]);
    await page.getByTestId('host-0-key').fill(copy);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByTestId('passphrase-prompt').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByTestId('test-result-0').textContent(), { timeout: 30_000 }).toMatch(/encrypted and no passphrase was given/);
  });
});
