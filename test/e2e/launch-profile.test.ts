// Issue 22 items 1, 10 and 11 (Launch half) in Chromium against the real `cohort serve` and a real
// sshd host: the Launch form starts from the profile's resolved config (its `defaults` over the
// built-in ones: what `cohort run --profile P` runs), so the same profile and settings started
// from the CLI and from the dashboard apply the same config (the run records' `config` and
// `applied` blocks are compared; the Width field included, prefilled from `defaults.width` and
// refused out of range with the CLI's error); the form remembers the last launch per profile across a reload;
// name, tags and notes typed in Launch are recorded as `cohort run --name/--tag/--notes` records
// them, refused by the same rule; Compare opens in sight at 1280×800 above a long History table.
// Screenshots of Launch and History+Compare at 1280×800 and 1920×1080 in test-artifacts/.
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { TRAIN_CONFIG_TABLE } from '../../trainer/protocol';
import { SSHD_MISSING, startHosts, type SshdCluster } from '../harness/sshd-hosts';
import { fillLaunch, useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM, type ServeProcess } from './serve-process';

/** The profile's run defaults: a tiny run, unlike the built-in defaults (imagenet stem, 100 classes, log every 10). */
const DEFAULTS = { stem: 'cifar', imageSize: 8, width: 0.25, batchSize: 2, classes: 10, steps: 3, logSteps: 1, warmupSteps: 0, lr: 0.05, seed: 7 };

describe.skipIf(!existsSync(CHROMIUM) || SSHD_MISSING)('Launch starts from the profile, as the CLI does', () => {
  let hosts: SshdCluster;
  let serve: ServeProcess;
  let page: Page;
  let dir: string;
  const ids = { cli: '', gui: '' };

  const cli = async (args: string[]) => {
    const r = ui().cli(args, { env: { NO_COLOR: '1' } });
    const exit = await r.exit;
    return { code: exit.code, stdout: r.stdout, stderr: r.stderr };
  };
  const meta = (id: string) => JSON.parse(readFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), 'utf8')) as RunMeta;
  const value = (name: string) => page.getByTestId(`launch-${name}`).inputValue();
  const shots = async (name: string) => {
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      writeFileSync(join(ARTIFACTS, `${name}-${w}x${h}.png`), await page.screenshot());
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  };

  beforeAll(async () => {
    hosts = await startHosts(1);
    dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-launch-profile-'));
    copyFileSync(hosts.knownHostsPath, join(dir, 'known_hosts'));
  }, 120_000);
  afterAll(async () => {
    await hosts?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  // A copy of the hosts' known_hosts as the server's; disposed before the hosts (after-hooks run in reverse order).
  const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: join(dir, 'known_hosts'), SSH_AUTH_SOCK: '' }) });
  beforeAll(async () => {
    ({ serve, page } = ui());
    const h = hosts.hosts[0]!;
    const file = join(dir, 'tuned.json');
    writeFileSync(file, JSON.stringify({ name: 'tuned', defaults: DEFAULTS, hosts: [{ name: h.name, address: h.address, port: h.port, user: hosts.user, identityFile: hosts.clientKeyPath, slots: 1, workdir: h.workdir }] }));
    const imported = await cli(['profiles', 'import', file]);
    expect(imported.code, imported.stderr).toBe(0);
  }, 120_000);

  it('the form holds the profile\'s defaults; the same settings from the CLI and the GUI apply the same config; name, tags and notes recorded', async () => {
    // Batch 4 and width 1/8 over the profile's 2 and 1/4, from both clients.
    const run = ui().cli(['run', '--profile', 'tuned', '--batch-size', '4', '--width', '0.125', '--json'], { json: true, env: { NO_COLOR: '1' } });
    const exit = await run.exit;
    expect(exit.code, run.stderr).toBe(0);
    ids.cli = (run.events[0] as { runId?: string }).runId ?? '';
    expect(ids.cli).not.toBe('');

    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'tuned' });
    // What `cohort run --profile tuned` runs, not the form's own values.
    expect({ batch: await value('batch-size'), image: await value('image-size'), stem: await value('stem'), width: await value('width'), classes: await value('classes'), steps: await value('steps'), log: await value('log-steps'), warmup: await value('warmup-steps') }).toEqual({ batch: '2', image: '8', stem: 'cifar', width: '0.25', classes: '10', steps: '3', log: '1', warmup: '0' });
    expect(await page.getByTestId('launch-source').textContent()).toContain('cohort run --profile tuned');
    await fillLaunch(page, { 'batch-size': 4, width: 0.125, name: 'from the gui', tags: 'ablation, bs4 fp32', notes: 'first line\nsecond line' });
    await shots('launch-profile');
    await page.getByTestId('launch-start').click();
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 240_000 }).toBe('ok');

    const list = JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as RunMeta[];
    ids.gui = list.find((r) => r.id !== ids.cli)?.id ?? '';
    expect(ids.gui).not.toBe('');
    const [a, b] = [meta(ids.cli), meta(ids.gui)];
    expect(b.config).toEqual(a.config);
    expect(b.config).toMatchObject({ ...DEFAULTS, batchSize: 4, width: 0.125 });
    expect(b.applied).toEqual(a.applied);
    // Recorded like --name/--tag/--notes: trimmed, tags split and kept in order.
    const user = JSON.parse(readFileSync(join(serve.dataDir, 'runs', ids.gui, 'user.json'), 'utf8')) as Record<string, unknown>;
    expect(user).toMatchObject({ name: 'from the gui', tags: ['ablation', 'bs4', 'fp32'], notes: 'first line\nsecond line' });
  }, 400_000);

  it('remembers the last launch on the profile across a reload; Reset goes back to the profile\'s', async () => {
    await page.reload();
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'local' });
    expect(await value('stem')).toBe('imagenet'); // the built-in profile: the CLI's built-in defaults
    await fillLaunch(page, { profile: 'tuned' });
    expect(await page.getByTestId('launch-source').textContent()).toMatch(/last launch/);
    expect(await value('batch-size')).toBe('4');
    expect(await value('name')).toBe(''); // a name is the run's own, not remembered
    await page.getByTestId('launch-reset').click();
    expect(await value('batch-size')).toBe('2');
    expect(await page.getByTestId('launch-source').textContent()).toContain('cohort run --profile tuned');
  });

  it('refuses a bad tag and a bad width in the form with the rules `cohort run --tag/--width` apply', async () => {
    await fillLaunch(page, { tags: 'fine bad/tag' });
    const shown = await page.getByTestId('launch-user-error').textContent();
    expect(await page.getByTestId('launch-start').isDisabled()).toBe(true);
    const r = await cli(['run', '--profile', 'tuned', '--tag', 'bad/tag']);
    expect(r.code).toBe(2);
    const reason = /--tag: (.*)/.exec(r.stderr)?.[1] ?? 'none';
    expect(shown).toBe(`Tags: ${reason}`);
    await fillLaunch(page, { tags: '' });
    expect(await page.getByTestId('launch-user-error').count()).toBe(0);
    // Width out of its range: the form shows, and refuses to start with, the error the CLI prints.
    await fillLaunch(page, { width: 8 });
    const widthShown = await page.getByTestId('launch-error').textContent();
    expect(await page.getByTestId('launch-start').isDisabled()).toBe(true);
    expect(await page.locator('[data-config-field=width]').getAttribute('title')).toBe(TRAIN_CONFIG_TABLE.width.help); // its help: `cohort run --help`'s line for --width
    const w = await cli(['run', '--profile', 'tuned', '--width', '8']);
    expect(w.code).toBe(2);
    expect(widthShown).toBe(/^cohort: (.*)$/m.exec(w.stderr)?.[1] ?? w.stderr);
    await fillLaunch(page, { width: 0.25 });
    expect(await page.getByTestId('launch-error').count()).toBe(0);
  });

  it('Compare opens in sight at 1280×800, above a long History table', async () => {
    // A long History: copies of the real runs' records under new ids (the table's length is what matters here).
    const real = (JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as RunMeta[]).map((r) => r.id);
    expect(real.length).toBeGreaterThan(0);
    for (let i = 0; i < 14; i++) {
      const src = real[i % real.length]!;
      const id = `20200101-0000${String(i).padStart(2, '0')}-c${i.toString(36)}`;
      cpSync(join(serve.dataDir, 'runs', src), join(serve.dataDir, 'runs', id), { recursive: true });
      writeFileSync(join(serve.dataDir, 'runs', id, 'meta.json'), JSON.stringify({ ...meta(src), id }));
    }
    await page.getByTestId('nav-history').click();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => page.getByTestId('history-row').count()).toBe(14 + real.length);
    // Select the last two rows (scrolled to, as a user would), then Compare.
    const rows = page.getByTestId('history-row');
    await rows.nth(12 + real.length).locator('input[type=checkbox]').check();
    await rows.nth(13 + real.length).locator('input[type=checkbox]').check();
    await page.getByTestId('compare').click();
    const summary = page.getByTestId('compare-summary');
    await summary.waitFor();
    const box = await summary.boundingBox();
    expect(box, 'Compare has no box').not.toBeNull();
    expect(box!.y, `Compare's summary at y=${box!.y}, outside the 800 px window`).toBeGreaterThanOrEqual(0);
    expect(box!.y + box!.height).toBeLessThanOrEqual(800);
    await shots('history-compare-open');
  }, 120_000);
});
