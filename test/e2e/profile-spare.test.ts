// Issue 21 item 5 in the dashboard's profile editor, in Chromium against the real `cohort serve`:
// each host row of an SSH profile has a Spare checkbox, saved through the one profile schema
// (decodeProfile): the saved profile (read back with the real CLI) has `spare: true` on that host
// only; the Launch view's world leaves the spare out; the first host as a spare is refused by the
// same decoder, its error under that host's checkbox. No host is contacted (nothing is run).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM))('profile editor: the Spare checkbox', () => {
  const ui = useDashboard();

  it('a host marked Spare is saved with spare: true, left out of the Launch world; the first host cannot be a spare', async () => {
    const { page, serve, cli } = ui();
    await page.goto(serve.url);
    await page.getByTestId('new-profile').click();
    await page.getByTestId('profile-name').fill('lab');
    for (let i = 0; i < 3; i++) {
      if (i > 0) await page.getByRole('button', { name: 'Add host' }).click();
      await page.getByTestId(`host-${i}-name`).fill(`h${i + 1}`);
      await page.getByTestId(`host-${i}-address`).fill(`10.77.0.${i + 1}`);
    }
    expect(await page.getByTestId('host-2-spare').isChecked()).toBe(false);
    await page.getByTestId('host-2-spare').check();

    // the first host as a spare: the decoder's error under its checkbox, once touched
    await page.getByTestId('host-0-spare').check();
    await expect.poll(() => page.getByTestId('error-h0.spare').textContent().catch(() => '')).toMatch(/the first host is the leader .* cannot be a spare/);
    await page.getByTestId('host-0-spare').uncheck();
    await expect.poll(() => page.getByTestId('error-h0.spare').count()).toBe(0);

    await page.screenshot({ path: join(ARTIFACTS, 'profile-spare-1280x800.png') });
    await page.getByTestId('save-profile').click();
    await page.getByTestId('profile-lab').waitFor();

    const shown = cli(['profiles', 'show', 'lab']);
    expect((await shown.exit).code, shown.stderr).toBe(0);
    const saved = JSON.parse(shown.stdout) as { hosts: { name: string; spare?: boolean }[] };
    expect(saved.hosts.map((h) => [h.name, h.spare ?? false])).toEqual([['h1', false], ['h2', false], ['h3', true]]);

    // edited again: the box comes back checked (draftFrom), and the Launch world is h1, h2
    await page.getByTestId('profile-lab').click();
    expect(await page.getByTestId('host-2-spare').isChecked()).toBe(true);
    await page.getByTestId('nav-launch').click();
    await page.getByTestId('launch-profile').selectOption('lab');
    await expect.poll(() => page.getByTestId('world-size').textContent()).toContain('2 host(s) × slots = 2 rank(s)');
  }, 120_000);
});
