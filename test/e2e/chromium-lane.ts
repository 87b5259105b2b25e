// One headless Chromium for the whole test run instead of one per e2e file (issue 25, shared fixtures;
// measured: bench/results/suite.md, "session 8, fixture costs"). UNFINISHED, so only with
// COHORT_TEST_SHARED_CHROMIUM=1: under it history-tools failed 2 of 5 loaded runs, 0 of 3 without,
// and 3 files at once were not faster (cause not found; not rAF: pages in other contexts stay
// visible, 60 frames/s; perhaps the one browser and GPU process all pages then share). test/global-setup.ts serves a Unix
// socket (the same pattern as the CPU tokens, test/cpu-lane.ts) and `provide`s its path; the first
// file that asks starts the browser (test/e2e/chromium-server.mjs, a child process: so the fast tier,
// which opens no page, never pays for it), and every file gets the same endpoint. Each file then
// connect()s and makes a BrowserContext of its own (test/e2e/open-dashboard.ts): cookies, storage,
// permissions and pages are the file's and go when it closes its context, so nothing of one file is
// seen by the next. A dead browser (crashed) is started again for the next file that asks.
// close() ends the browser and returns the processes of its session still alive (the leftovers check).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM, CHROMIUM_ARGS } from './serve-process';

export interface ChromiumLane {
  path: string;
  /** The running browser's pid (leader of its session), or undefined before the first request. */
  browserPid(): number | undefined;
  /** Ends the browser (if one was started); resolves to the pids of its session still alive after 5 s (should be none). */
  close(): Promise<number[]>;
}

interface Browser {
  child: ChildProcess;
  ws: string;
  pid: number;
}

/** Pids whose session id is `sid` (Chromium and its zygotes, renderers, GPU and utility processes). */
export function sessionProcesses(sid: number): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid pgrp session ..."; comm may hold spaces, so split after ')'.
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[3]) === sid && f[0] !== 'Z') pids.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

function launch(): Promise<Browser> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'chromium-server.mjs'), JSON.stringify({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const { ws, pid } = JSON.parse(out.slice(0, nl)) as { ws: string; pid: number };
      resolve({ child, ws, pid });
    });
    child.once('exit', (code) => reject(new Error(`test/e2e/chromium-server.mjs exited (code ${code}) before printing its endpoint: is ${CHROMIUM} installed? (apt-get install chromium)`)));
  });
}

async function end(b: Browser): Promise<number[]> {
  if (b.child.exitCode === null && b.child.signalCode === null) {
    const exited = new Promise((r) => b.child.once('exit', r));
    b.child.stdin!.end();
    const t = setTimeout(() => b.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  }
  for (const t0 = Date.now(); Date.now() - t0 < 5000; await new Promise((r) => setTimeout(r, 100))) if (sessionProcesses(b.pid).length === 0) return [];
  const left = sessionProcesses(b.pid);
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* exited meanwhile */
    }
  }
  return left;
}

/** Serves the shared browser's endpoint on a fresh Unix socket; the browser starts on the first request. */
export async function startChromiumLane(): Promise<ChromiumLane> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-chromium-lane-'));
  const path = join(dir, 'chromium.sock');
  let browser: Promise<Browser> | undefined;
  let current: Browser | undefined;
  const alive = async (): Promise<Browser> => {
    const b = await browser?.catch(() => undefined);
    if (b && b.child.exitCode === null && b.child.signalCode === null && sessionProcesses(b.pid).includes(b.pid)) return b;
    if (b) await end(b); // crashed: whatever is left of it goes before a new one starts
    return (current = await (browser = launch()));
  };
  let queue: Promise<unknown> = Promise.resolve();
  const server = createServer((s) => {
    s.on('error', () => s.destroy());
    // One request at a time, so two files asking at once start one browser.
    queue = queue.then(() =>
      alive().then(
        (b) => s.end(JSON.stringify({ ws: b.ws }) + '\n'),
        (e: unknown) => s.end(JSON.stringify({ error: (e as Error).message }) + '\n'),
      ),
    );
  });
  await new Promise<void>((res, rej) => server.once('error', rej).listen(path, () => res()));
  return {
    path,
    browserPid: () => current?.pid,
    close: async () => {
      await new Promise<void>((res) => server.close(() => res()));
      await queue;
      const b = await browser?.catch(() => undefined);
      const left = b ? await end(b) : [];
      rmSync(dir, { recursive: true, force: true });
      return left;
    },
  };
}

/** The shared browser's ws endpoint, from the lane at `path` (starting the browser if no file has yet). */
export function chromiumEndpoint(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    let out = '';
    s.setEncoding('utf8').on('data', (c: string) => (out += c));
    s.once('error', (e) => reject(new Error(`test/e2e/chromium-lane: cannot reach the shared-Chromium server at ${path} (${e.message}); it is test/global-setup.ts's, so run vitest with this repo's vitest.config.ts`)));
    s.once('end', () => {
      const r = JSON.parse(out) as { ws?: string; error?: string };
      if (r.ws) resolve(r.ws);
      else reject(new Error(`the shared Chromium did not start: ${r.error}`));
    });
  });
}
