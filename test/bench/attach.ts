// Attaching to a running durable run on a 3-host cluster of real sshd hosts (network namespaces),
// while the run trains (tiny model, one step logged per step):
//  1. `cohort attach RUN --json` in a new process: command → first event of the backfill, and
//     command → first live step (a step the hosts had not recorded when the command started)
//  2. dashboard-style re-attach: a fresh CohortService with its own SSH layer (what a reloaded
//     desktop app, a new `cohort serve` or a second client does) calls attachRun: → the backfill
//     complete (every step recorded before the call is in hand: the charts are whole) and → the
//     first live step; and the same call again on that service, which already follows the run
//     (a page reload against a running `cohort serve`)
//  3. the same in Chromium against a real `cohort serve`: History → Open the running run (that
//     serve's first follow of it, over SSH) → the throughput chart holds every step the hosts had
//     recorded at the click; then page reloads → the live view complete again
// Medians over --trials (default 5). The goal: reload → live view complete < 2 s.
//   npx tsx test/bench/attach.ts [--trials 5]
import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolvePaths } from '../../electron/core/paths';
import { SshCluster } from '../../electron/core/cluster/ssh-cluster';
import { CohortService } from '../../electron/core/service/cohort-service';
import { followRun } from '../../electron/common';
import { EventLineDecoder, type StepEvent } from '../../trainer/protocol';
import { chromium } from 'playwright-core';
import { harnessMode, startHosts } from '../harness/sshd-hosts';
import { CHROMIUM, CHROMIUM_ARGS, ensureRendererBuilt, startServe } from '../e2e/serve-process';
import { ROOT, cohortCli, countOption, machine, median, until, writeResults } from './bench-util';
import { tinyRun } from '../helpers/tiny';

const trials = countOption('trials', 5);
const tiny = tinyRun({ width: null });

if ((await harnessMode()) !== 'netns') {
  writeResults('attach', { skipped: 'network namespaces unavailable (needs root and iproute2)' }, '## Attach\n\nskipped: network namespaces unavailable');
  process.exit(0);
}

const cluster = await startHosts(3);
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-attach-'));
const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' };
const COHORT = join(ROOT, 'bin', 'cohort.mjs');

const cli = (args: string[]) => cohortCli(args, env);

/** The last step in the leader's own record (the hosts share this machine's filesystem). */
function recordedStep(runId: string): number {
  const p = join(cluster.hosts[0]!.workdir, 'runs', runId, 'events.jsonl');
  if (!existsSync(p)) return 0;
  let last = 0;
  for (const l of readFileSync(p, 'utf8').split('\n')) if (l.includes('"type":"step"')) last = (JSON.parse(l) as StepEvent).step;
  return last;
}


/** `cohort attach RUN --json` in a new process; detached with SIGINT once a live step arrived. */
async function cliAttach(runId: string): Promise<{ firstEventMs: number; firstLiveMs: number }> {
  const before = recordedStep(runId);
  const t0 = performance.now();
  const p = spawn(process.execPath, [COHORT, 'attach', runId, '--json'], { env });
  const d = new EventLineDecoder();
  let firstEventMs = -1;
  let firstLiveMs = -1;
  await new Promise<void>((resolve, reject) => {
    p.stdout.setEncoding('utf8').on('data', (c: string) => {
      for (const r of d.push(c)) {
        if (r.kind !== 'event') continue;
        if (firstEventMs < 0) firstEventMs = performance.now() - t0;
        if (r.event.type === 'step' && r.event.step > before && firstLiveMs < 0) {
          firstLiveMs = performance.now() - t0;
          resolve();
        }
      }
    });
    p.on('close', (code) => reject(new Error(`attach exited (${code}) before a live step`)));
  });
  p.kill('SIGINT');
  await new Promise((r) => p.once('close', r));
  return { firstEventMs, firstLiveMs };
}

/** A fresh service (new SSH sessions) attaching from offset 0, as a reloaded or second client does. */
async function serviceAttach(runId: string): Promise<{ completeMs: number; firstLiveMs: number; warmMs: number }> {
  const service = new CohortService({ paths: resolvePaths(env), cluster: new SshCluster({ env }) });
  try {
    const before = recordedStep(runId);
    let maxStep = 0;
    let completeMs = -1;
    let firstLiveMs = -1;
    const t0 = performance.now();
    const seen = (step: number) => {
      maxStep = Math.max(maxStep, step);
      if (completeMs < 0 && maxStep >= before) completeMs = performance.now() - t0;
      if (firstLiveMs < 0 && step > before) firstLiveMs = performance.now() - t0;
    };
    // Like the renderer: subscribe to this run, attach, take the backfill, then the live messages from nextSeq.
    const { dispose: off } = await followRun(service, runId, (e) => {
      if (e.type === 'step') seen(e.step);
    });
    await until('the re-attached client to see a live step', () => firstLiveMs >= 0 && completeMs >= 0);
    // A page reload against this service, which now follows the run: attachRun again.
    const t1 = performance.now();
    const again = await service.attachRun(runId);
    const warmMs = performance.now() - t1;
    if (!again.events.some((e) => e.type === 'step' && e.step >= before)) throw new Error('the warm re-attach did not return the backfill');
    off();
    return { completeMs, firstLiveMs, warmMs };
  } finally {
    await service.dispose();
  }
}

let runId = '';
try {
  const profile = join(dir, 'trio.json');
  writeFileSync(profile, JSON.stringify({ name: 'trio', hosts: cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir })) }));
  await cli(['profiles', 'import', profile]);
  const started = await cli(['run', '--profile', 'trio', '--steps', '100000', ...tiny, '--detach', '--json']);
  if (started.code !== 0) throw new Error(`run --detach failed: ${started.stderr}`);
  runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId: string }).runId;
  await until('the run to record 5 steps', () => recordedStep(runId) >= 5);

  const rows: { trial: number; cliFirstEventMs: number; cliFirstLiveMs: number; reattachCompleteMs: number; reattachFirstLiveMs: number; warmReattachMs: number; stepsAtStart: number }[] = [];
  for (let i = 0; i < trials; i++) {
    const stepsAtStart = recordedStep(runId);
    const c = await cliAttach(runId);
    const s = await serviceAttach(runId);
    rows.push({ trial: i, cliFirstEventMs: c.firstEventMs, cliFirstLiveMs: c.firstLiveMs, reattachCompleteMs: s.completeMs, reattachFirstLiveMs: s.firstLiveMs, warmReattachMs: s.warmMs, stepsAtStart });
    console.log(JSON.stringify(rows.at(-1)));
  }
  // ---- 3. the dashboard in Chromium ----
  ensureRendererBuilt();
  const browserRows: { openMs: number; reloadMs: number[] }[] = [];
  for (let i = 0; i < Math.min(trials, 3); i++) {
    const serve = await startServe([], { env: { COHORT_CONFIG_DIR: env.COHORT_CONFIG_DIR, COHORT_DATA_DIR: env.COHORT_DATA_DIR, COHORT_KNOWN_HOSTS: env.COHORT_KNOWN_HOSTS, SSH_AUTH_SOCK: '' } });
    const profileDir = mkdtempSync(join(tmpdir(), 'cohort-bench-chromium-'));
    const ctx = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 } });
    try {
      const page = await ctx.newPage();
      const points = async () => Number((await page.getByTestId('chart-throughput').getAttribute('data-points', { timeout: 60_000 })) ?? 0);
      const complete = async (t0: number, before: number) => {
        while ((await points().catch(() => 0)) < before) {
          if (performance.now() - t0 > 60_000) throw new Error(`the live view did not reach ${before} points`);
          await new Promise((r) => setTimeout(r, 25));
        }
        return performance.now() - t0;
      };
      await page.goto(serve.url);
      await page.getByTestId('nav-history').click();
      const row = page.locator('[data-testid=history-row][data-status=running]'); // the one running run
      await row.waitFor();
      let before = recordedStep(runId);
      let t0 = performance.now();
      await row.getByRole('button', { name: 'Open' }).click();
      const openMs = await complete(t0, before);
      const reloadMs: number[] = [];
      for (let k = 0; k < 3; k++) {
        before = recordedStep(runId);
        t0 = performance.now();
        await page.reload();
        await page.getByTestId('nav-live').click();
        reloadMs.push(await complete(t0, before));
      }
      browserRows.push({ openMs, reloadMs });
      console.log(JSON.stringify(browserRows.at(-1)));
    } finally {
      await ctx.close();
      rmSync(profileDir, { recursive: true, force: true });
      await serve.dispose();
    }
  }
  // The run's step interval, which bounds "first live step" from below on average (half an interval).
  const stepTimes: number[] = [];
  const events = join(cluster.hosts[0]!.workdir, 'runs', runId, 'events.jsonl');
  for (const l of readFileSync(events, 'utf8').split('\n')) if (l.includes('"type":"step"')) stepTimes.push((JSON.parse(l) as StepEvent).time);
  const intervals = stepTimes.slice(1).map((x, i) => x - stepTimes[i]!);
  const stepInterval = median(intervals);
  const m = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k]));
  const md = [
    '## Attach to a running run (3 sshd hosts in network namespaces)',
    '',
    `${trials} trials while one detached run trains (tiny model, cifar stem 8², batch 2, 1 rank per host; a step every ${stepInterval.toFixed(0)} ms, median). Records of ${rows[0]!.stepsAtStart}–${rows.at(-1)!.stepsAtStart} steps at attach time. Medians:`,
    '',
    '| | median ms | trials (ms) |',
    '|---|---|---|',
    `| \`cohort attach RUN --json\` (new process): command → first event | ${m('cliFirstEventMs').toFixed(0)} | ${rows.map((r) => r.cliFirstEventMs.toFixed(0)).join(', ')} |`,
    `| \`cohort attach\`: command → first live step | ${m('cliFirstLiveMs').toFixed(0)} | ${rows.map((r) => r.cliFirstLiveMs.toFixed(0)).join(', ')} |`,
    `| fresh client re-attach (new CohortService + SSH sessions, backfill from offset 0): → backfill complete | ${m('reattachCompleteMs').toFixed(0)} | ${rows.map((r) => r.reattachCompleteMs.toFixed(0)).join(', ')} |`,
    `| fresh client re-attach: → first live step | ${m('reattachFirstLiveMs').toFixed(0)} | ${rows.map((r) => r.reattachFirstLiveMs.toFixed(0)).join(', ')} |`,
    `| page reload against a service already following the run: attachRun | ${m('warmReattachMs').toFixed(1)} | ${rows.map((r) => r.warmReattachMs.toFixed(1)).join(', ')} |`,
    `| Chromium + \`cohort serve\` (new serve each trial): History → Open the running run → chart holds every recorded step | ${median(browserRows.map((r) => r.openMs)).toFixed(0)} | ${browserRows.map((r) => r.openMs.toFixed(0)).join(', ')} |`,
    `| Chromium: page reload → live view complete (serve already following) | ${median(browserRows.flatMap((r) => r.reloadMs)).toFixed(0)} | ${browserRows.flatMap((r) => r.reloadMs.map((x) => x.toFixed(0))).join(', ')} |`,
    '',
    'The first live step includes waiting for the hosts to record a new step (half a step interval on average). The browser rows include page load, the WebSocket, the Api calls and the chart draw.',
  ].join('\n');
  writeResults('attach', { machine: machine(), trials, stepIntervalMs: stepInterval, rows, browserRows }, md);
} finally {
  if (runId) await cli(['stop', runId]);
  await cluster.dispose();
  rmSync(dir, { recursive: true, force: true });
}
