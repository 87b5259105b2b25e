// The Chromium e2e tests' common setup: the real `cohort serve` (private config and data dirs),
// a headless Chromium with its own profile at 1280×800, and one page, whose uncaught errors are
// logged. The page is not navigated: a test goes to `serve.url` (which carries the token) when it
// is ready. dispose() closes the browser, stops the server and its runs, and removes the profile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, ensureRendererBuilt, startServe, type ServeProcess } from './serve-process';

export interface Dashboard {
  serve: ServeProcess;
  ctx: BrowserContext;
  page: Page;
  dispose(): Promise<void>;
}

/** `serveArgs` and `env` go to `cohort serve` (e.g. `{ env: { COHORT_KNOWN_HOSTS: path } }`). */
export async function openDashboard(opts: { serveArgs?: string[]; env?: Record<string, string> } = {}): Promise<Dashboard> {
  ensureRendererBuilt();
  const serve = await startServe(opts.serveArgs ?? [], opts.env ? { env: opts.env } : {});
  const profileDir = mkdtempSync(join(tmpdir(), 'cohort-chromium-'));
  let ctx: BrowserContext | undefined;
  let disposed: Promise<void> | undefined;
  const dispose = () =>
    (disposed ??= (async () => {
      await ctx?.close();
      await serve.dispose();
      rmSync(profileDir, { recursive: true, force: true });
    })());
  try {
    ctx = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => console.error('[page error]', e.message));
    return { serve, ctx, page, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** The Launch form's fields, by the `launch-<name>` test id (profile, engine, stem, ranks, batch-size, …). */
export type LaunchFields = Record<string, string | number | boolean>;

/**
 * The settings a tiny test run needs beyond batch, image size and steps: the cifar stem (an 8 px
 * image), 10 classes, a step event every step, 1 warm-up step. The form starts from the profile's
 * resolved config (the CLI's defaults: imagenet stem, log every 10), so a test sets these itself.
 */
export const TINY_FORM: LaunchFields = { stem: 'cifar', classes: 10, 'log-steps': 1, 'warmup-steps': 1 };

/**
 * Types the Launch form, field by field in the order given (a profile first: it sets which fields
 * the form shows): a `<select>` gets selectOption, a checkbox check/uncheck (true/false), any other
 * input fill. Does not click Start. The one place the e2e tests type the form.
 */
export async function fillLaunch(page: Page, fields: LaunchFields): Promise<void> {
  for (const [name, value] of Object.entries(fields)) {
    const field = page.getByTestId(`launch-${name}`);
    if (typeof value === 'boolean') await (value ? field.check() : field.uncheck());
    else if ((await field.evaluate((el) => el.tagName)) === 'SELECT') await field.selectOption(String(value));
    else await field.fill(String(value));
  }
}
