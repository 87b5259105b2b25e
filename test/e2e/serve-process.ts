// Starts the real `cohort serve` (bin/cohort.mjs → dist/cli.mjs) with private config and data
// directories, reads the URL it prints, and stops it (and its runs) on dispose.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ROOT } from '../helpers/cli';

export { ROOT };
/**
 * The browser the UI tests drive: Chromium's headless shell (Debian package chromium-headless-shell,
 * the same Chromium release as the chromium package: Blink, V8, the compositor; what Playwright
 * itself runs for headless tests), without the full browser's UI layer that new-style `--headless`
 * still starts (a WebUI renderer, the browser's window machinery). Measured on live-charts alone,
 * quiet, 2 rounds each (bench/results/suite.md, "session 16"): Chromium's processes 8.8–9.0 → 5.4–5.6
 * CPU-s, the file 14.5–15.5 → 13.2 s. Where it is not installed, the full browser, as before; the
 * tests are the same. What the shell lacks, a file asks the full browser for (CHROMIUM_FULL).
 */
export const CHROMIUM_HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
/**
 * The full browser (Debian package chromium), new-style headless: for what the headless shell lacks.
 * Seen: the shell answers Notification.permission 'denied' whatever the context was granted, so the
 * alerts' permission flow (history-tools) runs here (`useDashboard({ browser: 'full' })`).
 */
export const CHROMIUM_FULL = '/usr/bin/chromium';
export const CHROMIUM = existsSync(CHROMIUM_HEADLESS_SHELL) ? CHROMIUM_HEADLESS_SHELL : CHROMIUM_FULL;
/** Where the e2e tests put their screenshots (useDashboard makes it). */
export const ARTIFACTS = join(ROOT, 'test-artifacts');
/** ../shared/ENV-NOTES.md: without the resolver rule Chromium still looks up Google hosts. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
];

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Builds dist/renderer when it is missing or older than any renderer source. */
export function ensureRendererBuilt(): void {
  const index = join(ROOT, 'dist', 'renderer', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(ROOT, 'renderer'))) return;
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-renderer.mjs'), 'renderer'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('building the renderer failed (node scripts/build-renderer.mjs renderer)');
}

/** Rebuilds dist/cli.mjs when electron/web changed (test/global-setup watches cli, core and trainer). */
export function ensureCliBuilt(): void {
  const cli = join(ROOT, 'dist', 'cli.mjs');
  if (existsSync(cli) && statSync(cli).mtimeMs >= newest(join(ROOT, 'electron', 'web'))) return;
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('building the CLI failed (node scripts/build.mjs)');
}

export interface ServeProcess {
  url: string;
  origin: string;
  token: string;
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  dataDir: string;
  /** The env the server runs with (its config, data and HOME dirs): a `cohort` CLI given it shares the server's history and profiles. */
  env: NodeJS.ProcessEnv;
  dispose(): Promise<void>;
}

export async function startServe(args: string[] = [], opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<ServeProcess> {
  ensureCliBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'cohort-e2e-'));
  const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), HOME: join(dir, 'home'), ...opts.env };
  // detached: its own process group, so dispose can kill the server and every rank it started.
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), 'serve', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let disposed: Promise<void> | undefined;
  const dispose = () =>
    (disposed ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM'); // serve stops following its runs and exits (the runs go on: a file stops its own)
        const t = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            /* already gone */
          }
        }, 10_000);
        await exited;
        clearTimeout(t);
      }
      try {
        process.kill(-child.pid!, 'SIGKILL'); // anything left in the group (should be nothing)
      } catch {
        /* group already empty */
      }
      rmSync(dir, { recursive: true, force: true });
    })());
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`cohort serve printed no URL within ${opts.timeoutMs ?? 20000} ms; stderr:\n${err}`)), opts.timeoutMs ?? 20_000);
    const check = () => {
      const m = /dashboard at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => {
      clearTimeout(t);
      reject(new Error(`cohort serve exited (code ${child.exitCode}); stderr:\n${err}`));
    });
  }).catch(async (e: unknown) => {
    await dispose();
    throw e;
  });
  const u = new URL(url);
  return { url, origin: u.origin, token: u.searchParams.get('token') ?? '', child, stdout: () => out, stderr: () => err, dataDir: join(dir, 'data'), env, dispose };
}

/** The window sizes and themes every view is checked at (issue 15): 1024×700 and 1920×1080, light and dark. */
export const SHOT_SIZES = [
  [1024, 700],
  [1920, 1080],
] as const;

/**
 * Switches the dashboard's theme the way a user does: through its own toggle button, so the app's
 * state follows (the button's label, the charts' colours), not only the document's attribute. The
 * click is dispatched to the button, so this works with a modal dialog open (which makes the page
 * behind it inert to pointer clicks). Resolves once the document and the button agree.
 */
export async function setTheme(page: import('playwright-core').Page, theme: 'light' | 'dark'): Promise<void> {
  const toggle = page.locator('button[aria-label="Toggle light/dark theme"]');
  const now = () => page.evaluate(() => document.documentElement.dataset.theme ?? 'light');
  if ((await now()) !== theme) await toggle.dispatchEvent('click');
  // The button offers the other theme: "☀ Light" in dark, "☾ Dark" in light.
  const label = theme === 'dark' ? /Light/ : /Dark/;
  for (const t0 = Date.now(); (await now()) !== theme || !label.test((await toggle.textContent()) ?? ''); await page.waitForTimeout(50)) {
    if (Date.now() - t0 > 5000) throw new Error(`the theme toggle did not switch to ${theme} (document: ${await now()}, button: ${await toggle.textContent()})`);
  }
}

/**
 * Screenshots of what `page` shows now at each SHOT_SIZES size (or `sizes`) in both themes, as
 * `<dir>/<name>-<w>x<h>-<theme>.png`. The theme is switched with the app's own toggle (setTheme),
 * so this works with a modal dialog open. Leaves the page at 1280×800 in its previous theme.
 */
export async function screenshotsAllSizes(page: import('playwright-core').Page, dir: string, name: string, opts: { fullPage?: boolean; beforeShot?: () => Promise<void>; sizes?: readonly (readonly [number, number])[] } = {}): Promise<string[]> {
  const { writeFileSync } = await import('node:fs');
  const before = await page.evaluate(() => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light'));
  const files: string[] = [];
  for (const theme of ['light', 'dark'] as const) {
    await setTheme(page, theme);
    for (const [w, h] of opts.sizes ?? SHOT_SIZES) {
      await page.setViewportSize({ width: w, height: h });
      await page.waitForTimeout(250); // charts resize and redraw on the next frames
      await opts.beforeShot?.();
      const file = join(dir, `${name}-${w}x${h}-${theme}.png`);
      writeFileSync(file, await page.screenshot({ fullPage: opts.fullPage ?? false }));
      files.push(file);
    }
  }
  await setTheme(page, before);
  await page.setViewportSize({ width: 1280, height: 800 });
  return files;
}
