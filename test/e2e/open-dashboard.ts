// The Chromium e2e tests' common setup: the real `cohort serve` (private config, data and HOME
// dirs), a headless Chromium with its own profile at 1280×800, and one page, whose uncaught errors
// are logged. The page is not navigated: a test goes to `serve.url` (which carries the token) when
// it is ready. dispose() kills the CLIs it started, closes the browser (or the file's context),
// stops the server and its runs, and removes the profile.
// With COHORT_TEST_SHARED_CHROMIUM=1 (test/global-setup.ts) a file gets instead a BrowserContext of
// its own in the run's one Chromium (test/e2e/chromium-lane.ts: saves the ~2.3 s a launch and close
// cost a file on the loaded machine: bench/results/suite.md, "session 8, fixture costs"); its
// cookies, storage, permissions and pages go with its context. UNFINISHED, so opt-in: under it
// history-tools failed 2 of 5 loaded runs (a live chart or a run's end not seen in time), 0 of 3
// without, and 3 files at once were not faster; the cause is not found. `browser: 'own'` keeps a file on a Chromium of its own either way.
// A test file takes it through useDashboard() (one per file):
//
//   const ui = useDashboard({ env: () => ({ COHORT_KNOWN_HOSTS: fx().cluster.knownHostsPath }) });
//   it('…', async () => { const { page, serve } = ui(); await page.goto(serve.url); … });
//
// Everything it starts is private to the file (free port, temp dirs, its own profile or context), so
// two files can run at once (test/README.md).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Download, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { runCli, type CliRun } from '../helpers/cli';
import { TINY_DEPTH, TINY_WIDTH } from '../helpers/tiny';
import { chromiumEndpoint } from './chromium-lane';
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, CHROMIUM_FULL, ensureRendererBuilt, startServe, type ServeProcess } from './serve-process';

export interface Dashboard {
  serve: ServeProcess;
  ctx: BrowserContext;
  /** The current page (useDashboard({ page: 'case' }) replaces it before each case). */
  page: Page;
  /** The real `cohort` CLI with the server's env (same history and profiles) plus `opts.env`; killed at dispose if still running. */
  cli(args: string[], opts?: { json?: boolean; env?: NodeJS.ProcessEnv }): CliRun;
  /** Closes the current page and opens a fresh one in the same browser (errors logged); it becomes `page`. */
  newPage(): Promise<Page>;
  dispose(): Promise<void>;
}

const VIEWPORT = { width: 1280, height: 800 };

/** The run's shared Chromium (test/e2e/chromium-lane.ts; only with COHORT_TEST_SHARED_CHROMIUM=1), or undefined. */
function sharedLane(): string | undefined {
  try {
    return inject('chromiumLane') || undefined;
  } catch {
    return undefined; // not inside a vitest worker
  }
}

/**
 * `serveArgs` and `env` go to `cohort serve` (e.g. `{ env: { COHORT_KNOWN_HOSTS: path } }`); `browser`:
 * 'shared' (default: a fresh context in the run's one Chromium when there is one, COHORT_TEST_SHARED_CHROMIUM=1),
 * 'own' (a Chromium of this file's own, always) or 'full' (one of its own, the full browser rather
 * than the headless shell: serve-process.ts, CHROMIUM_FULL).
 */
export async function openDashboard(opts: { serveArgs?: string[]; env?: Record<string, string>; browser?: 'shared' | 'own' | 'full' } = {}): Promise<Dashboard> {
  ensureRendererBuilt();
  const serve = await startServe(opts.serveArgs ?? [], opts.env ? { env: opts.env } : {});
  const lane = opts.browser === 'own' || opts.browser === 'full' ? undefined : sharedLane();
  const profileDir = lane ? undefined : mkdtempSync(join(tmpdir(), 'cohort-chromium-'));
  let connected: Browser | undefined;
  let ctx: BrowserContext | undefined;
  let disposed: Promise<void> | undefined;
  const clients: CliRun[] = [];
  const dispose = () =>
    (disposed ??= (async () => {
      for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
      await ctx?.close();
      await connected?.close(); // disconnects (the shared browser stays for the next file)
      await serve.dispose();
      if (profileDir) rmSync(profileDir, { recursive: true, force: true });
    })());
  try {
    if (lane) {
      connected = await chromium.connect(await chromiumEndpoint(lane));
      ctx = await connected.newContext({ viewport: VIEWPORT });
    } else ctx = await chromium.launchPersistentContext(profileDir!, { executablePath: opts.browser === 'full' ? CHROMIUM_FULL : CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: VIEWPORT });
    const browser = ctx;
    const open = async () => {
      const p = await browser.newPage();
      p.on('pageerror', (e) => console.error('[page error]', e.message));
      return p;
    };
    const d: Dashboard = {
      serve,
      ctx,
      page: await open(),
      cli(args, o = {}) {
        const r = runCli(args, { env: { ...serve.env, ...o.env }, json: !!o.json });
        clients.push(r);
        return r;
      },
      async newPage() {
        await d.page.close();
        return (d.page = await open());
      },
      dispose,
    };
    return d;
  } catch (err) {
    await dispose();
    throw err;
  }
}

export interface UseDashboardOptions {
  /** false: start nothing (the file's describe is skipped: no Chromium, no sshd...). */
  enabled?: boolean;
  /**
   * 'own': a Chromium of the file's own instead of a context in the shared one (a file that crashes or
   * wedges the browser on purpose); 'full': the same, the full browser instead of the headless shell
   * (what the shell lacks: desktop notifications' permission).
   */
  browser?: 'shared' | 'own' | 'full';
  serveArgs?: string[];
  /**
   * `cohort serve`'s extra env. A function is called in beforeAll, after the hooks registered before
   * this call: so a cluster fixture declared first (useCohortCluster) can give its known_hosts.
   */
  env?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /**
   * 'file' (default): one page for the whole file, its cases a story told in steps (the state one
   * case leaves is where the next begins). 'case': a fresh page at `serve.url` before each case,
   * for files whose cases stand alone.
   */
  page?: 'file' | 'case';
  /** Opens `serve.url` in the first page in beforeAll (default false: a case goes there). */
  goto?: boolean;
}

/**
 * One `cohort serve` + Chromium for a test file, shared by its cases: opened in beforeAll (with
 * test-artifacts/ made), disposed in afterAll. Returns a getter: call it inside tests and hooks.
 */
export function useDashboard(opts: UseDashboardOptions = {}): () => Dashboard {
  let dash: Dashboard | undefined;
  let first = true;
  beforeAll(async () => {
    if (opts.enabled === false) return;
    if (!existsSync(ARTIFACTS)) mkdirSync(ARTIFACTS, { recursive: true });
    const env = typeof opts.env === 'function' ? await opts.env() : opts.env;
    dash = await openDashboard({ serveArgs: opts.serveArgs, env, browser: opts.browser });
    if (opts.goto) await dash.page.goto(dash.serve.url);
  }, 120_000);
  if (opts.page === 'case')
    beforeEach(async () => {
      if (!dash) return;
      // The first case has the page beforeAll opened; each later one a fresh page.
      if (!first) await dash.newPage();
      first = false;
      await dash.page.goto(dash.serve.url);
    });
  afterAll(async () => {
    await dash?.dispose();
  });
  return () => {
    if (!dash) throw new Error('the dashboard fixture is not started (use it inside a test or a hook after beforeAll)');
    return dash;
  };
}

/**
 * A download's content as text. Not `download.path()`: a browser reached by connect() (the shared one)
 * keeps the file on its side, so playwright has no local path; the stream works either way.
 */
export async function downloadText(d: Download): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of await d.createReadStream()) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The Launch form's fields, by the `launch-<name>` test id (profile, engine, stem, ranks, batch-size, …). */
export type LaunchFields = Record<string, string | number | boolean>;

/**
 * The settings a tiny test run needs beyond batch, image size and steps: the cifar stem (an 8 px
 * image), the tiny runs' width (1/4, TINY_WIDTH) and depth (14, TINY_DEPTH: why, and the files that keep the full model, in
 * test/helpers/tiny.ts), 10 classes, a step event every step, 1 warm-up step. The form starts from
 * the profile's resolved config (the CLI's defaults: imagenet stem, width 1, log every 10), so a
 * test sets these itself.
 */
export const TINY_FORM: LaunchFields = { stem: 'cifar', width: TINY_WIDTH, depth: TINY_DEPTH, classes: 10, 'log-steps': 1, 'warmup-steps': 1 };

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
