// Issue 12 item 6 for a LOST HOST, on 3 real OpenSSH hosts (network namespaces), through the real
// `cohort` CLI: a follower host dies mid-run (link down, sshd and every process on it killed, its
// workdir kept) and comes back a few seconds later (link up, sshd started again):
//   - `--max-restarts 1`, h3 lost with its <workdir>/trainer/ removed while down (a re-imaged host
//     with the workdir's runs/ restored, a cleanup job): the leader stops every rank and waits; the
//     restart event names the host, `host-lost` and the resume step; the foreground client re-deploys
//     the bundle and relaunches the host's agent once it answers (`run-rejoin`, which runs from it),
//     and the run ends ok with the paramChecksum of an uninterrupted run with the same seed, steps and
//     world; nothing is left on any host (one run: the plain restart and the re-deploy were two)
//   - the host not back within the leader's wait (COHORT_HOST_WAIT_MS in the leader's host env, 8 s
//     here): the run fails `host-lost` naming it, with the hint
//   - the LEADER host h1 lost the same way, the run followed only by `cohort attach` (started with
//     --detach): each follower stops its ranks and says it waits for h1 (one restart event told),
//     the attach relaunches h1's agent over its record once h1 answers, the followers connect to it
//     again, and the run ends ok with the uninterrupted paramChecksum
//   - the leader not back within the followers' wait (COHORT_HOST_WAIT_MS 8 s in their host env): the
//     followers end failed naming h1 with the hint, the client says lost naming h1 (never running
//     forever), nothing left on h2/h3
// (`--max-restarts 0` with a dead host: durable-cluster.test.ts, unchanged.)
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CohortEvent, DoneEvent, ErrorEvent, RestartEvent, StepEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import type { CliRun } from '../helpers/cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { PACED_HOST, QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

const tiny = tinyRun({ warmupSteps: 0, seed: 7 });
// 10 steps, a checkpoint every 2 (were 14 and 3, issue 25: 4 steps less in each of the 3 whole runs); the
// kill still comes after the first checkpoint, with steps left to resume.
const STEPS = 10;
const EVERY = 2;
const fixed = ['--steps', String(STEPS), '--checkpoint-every', String(EVERY)];

// Every host's agent takes a silent peer for lost after 6 s, not the product's 20 s (QUICK_HOST_TIMINGS),
// and the client says a run lost after 20 s without its leader, not 60 s (trainer/protocol/timings.ts).
// The client's tries to reach a lost host come at most 1 s apart, each given up after 4 s (not 4 s apart,
// 10 s each: a try begun while the host was down held the relaunch up to ~6 s after it was back, CI), and
// its SSH connections to a dead host drop after 3 keepalives 2 s apart (QUICK_CLIENT_SSH).
const quick = (host: number, env: Record<string, string> = {}) => ({ host, env: { ...QUICK_HOST_TIMINGS, ...env } });
// brief and brief-lead run until stopped: their ranks sleep between steps (PACED_HOST) while the test waits for its fault
const paced = (host: number, env: Record<string, string> = {}) => quick(host, { ...PACED_HOST, ...env });
const fx = useCohortCluster(3, {
  enabled: NETNS,
  clientEnv: { COHORT_LOST_AFTER_MS: '20000', ...QUICK_CLIENT_SSH, COHORT_SSH_CONNECT_TIMEOUT_MS: '4000' },
  profiles: {
    // trio: the product's host wait (180 s); brief: the leader (h1) waits 8 s for a lost host
    trio: [quick(0), quick(1), quick(2)],
    brief: [paced(0, { COHORT_HOST_WAIT_MS: '8000' }), paced(1), paced(2)],
    // brief-lead: the followers (h2, h3) wait 8 s for a lost leader. h3 takes it for lost 3 s after h2 (9 s
    // heartbeat, not 6): h2's agent stops rank 1 first, and rank 2 on h3, still running, tells the closed ring
    // connection as its own peer-lost: one consequence always told (with the same 6 s both agents stopped their
    // ranks within ~1 s of each other, and whether a copy got out depended on load: a loaded CI run had none).
    'brief-lead': [paced(0), paced(1, { COHORT_HOST_WAIT_MS: '8000' }), paced(2, { COHORT_HOST_WAIT_MS: '8000', COHORT_HEARTBEAT_TIMEOUT_MS: '9000' })],
  },
  deploy: 'trio',
});
const cli = (args: string[], opts: { json?: boolean; env?: NodeJS.ProcessEnv } = {}): CliRun => fx().cli(args, opts);
const trainerProcesses = (hosts?: number[]) => fx().trainerProcesses(hosts);

/** Host i dies as a machine does: off the network, sshd and everything on it killed (its disk, the workdir, kept). */
const killHost = (i: number): Promise<number> => crashHost(fx().cluster, i);

async function bringBack(i: number): Promise<number> {
  await fx().cluster.restartSshd(i);
  await fx().cluster.setLink(i, true);
  return Date.now();
}

/** The paramChecksum of the run uninterrupted (same seed, steps and world), computed once for the tests that need it. */
let refSumOnce: Promise<string> | undefined;
function refSum(): Promise<string> {
  refSumOnce ??= (async () => {
    const ref = cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--json'], { json: true });
    expect((await ref.exit).code, `${ref.stderr}\n${JSON.stringify(ref.events.filter((e) => e.type === 'error' || e.type === 'done'))}`).toBe(0);
    const sum = ref.events.find((e): e is DoneEvent => e.type === 'done')!.paramChecksum;
    expect(sum).toMatch(/\S/);
    return sum;
  })();
  return refSumOnce;
}

/** Where the time between a host's return and the first step after resume goes (printed, never asserted: issue 25). */
function timeline(what: string, at: number, events: CohortEvent[]): string {
  const says = (e: CohortEvent) => (e.type === 'log' || e.type === 'error' ? e.message.slice(0, 110) : e.type === 'checkpoint' ? `${e.action} ${e.step}` : e.type === 'step' ? `step ${e.step}` : '');
  return `${events.map((e) => `  ${what} ${((e.time - at) / 1000).toFixed(1).padStart(6)} s  ${e.type} ${'host' in e ? (e.host ?? '') : ''} ${'rank' in e ? `r${e.rank}` : ''} ${says(e)}`).join('\n')}\n`;
}

describe.skipIf(!NETNS)('restart after a lost host, 3 real SSH hosts', () => {
  it('h3 not back within the leader wait (COHORT_HOST_WAIT_MS 8 s): the run fails host-lost naming h3, with the hint; nothing left on h1/h2', async () => {
    const run = cli(['run', '--profile', 'brief', '--steps', '100000', '--checkpoint-every', String(EVERY), ...tiny, '--max-restarts', '1', '--json'], { json: true });
    await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const killedAt = await killHost(2);
    try {
      const restart = (await run.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
      expect(restart).toMatchObject({ host: 'h3', code: 'host-lost', waitingFor: ['h3'], waitMs: 8000 });
      const exit = await run.exit;
      const failedAfter = Date.now() - killedAt;
      expect(exit.code, run.stderr.slice(-3000)).toBe(1);
      const errors = run.events.filter((e): e is ErrorEvent => e.type === 'error');
      const last = errors.find((e) => /not back within/.test(e.message))!;
      expect(last, JSON.stringify(errors)).toMatchObject({ host: 'h3', code: 'host-lost' });
      expect(last.message).toMatch(/host h3 lost and not back within 8 s/);
      expect(last.hint).toMatch(/bring h3 back/);
      // the leader's agent took h3 for lost on the host env's heartbeat timeout (QUICK_HOST_TIMINGS, 6 s), not the product's 20 s
      expect(JSON.stringify([restart, ...errors]), 'the loss names the 6 s heartbeat timeout').toMatch(/h3: no heartbeat for 6 s/);
      expect(run.events.find((e): e is DoneEvent => e.type === 'done')).toMatchObject({ status: 'failed' });
      // bounded: detection, then the 8 s wait (plus the client's end)
      expect(failedAfter).toBeLessThan(60_000);
      await until('nothing left on h1/h2', async () => (await trainerProcesses([0, 1])).length === 0, 15_000);
    } finally {
      await bringBack(2);
    }
  }, 420_000);

  it('the LEADER host h1 killed after a checkpoint, the run followed only by cohort attach: the followers wait for it, the attach relaunches its agent, ok with the uninterrupted paramChecksum, one restart told, 0 processes left', async () => {
    const uninterrupted = await refSum();
    const started = cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--max-restarts', '1', '--detach', '--json'], { json: true });
    expect((await started.exit).code, started.stderr).toBe(0);
    const runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId?: string }).runId!;
    const att = cli(['attach', runId, '--json'], { json: true });
    await att.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const killedAt = await killHost(0);
    const restart = (await att.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
    expect(restart).toMatchObject({ attempt: 1, host: 'h1', rank: -1, code: 'host-lost', waitingFor: ['h1'] });
    expect(restart.resumeStep).toBeGreaterThanOrEqual(EVERY); // from a checkpoint, not from the start
    // the followers stopped their ranks and wait (their agents stay, holding the slots)
    await until('the ranks on h2 and h3 stopped', async () => (await trainerProcesses([1, 2])).every((p) => !/ rank --run /.test(p)), 30_000);
    await new Promise((r) => setTimeout(r, 3000));
    const backAt = await bringBack(0);

    const exit = await att.exit;
    expect(exit.code, att.stderr.slice(-3000)).toBe(0);
    const ev: CohortEvent[] = att.events;
    const afterRestart = ev.slice(ev.indexOf(restart));
    expect(afterRestart.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep), 'rank 0 resumed from the step the restart event names').toBe(true);
    const firstAfter = afterRestart.find((e): e is StepEvent => e.type === 'step')!;
    expect(firstAfter.step).toBe(restart.resumeStep + 1);
    const relaunched = ev.find((e) => e.type === 'log' && /h1 is back: its agent of run .* runs again/.test(e.message));
    expect(relaunched, 'the attach relaunched h1').toBeDefined();
    const done = ev.find((e): e is DoneEvent => e.type === 'done')!;
    expect(done).toMatchObject({ status: 'ok', steps: STEPS });
    expect(done.paramChecksum).toBe(uninterrupted);
    // every follower's record and the relaunched leader's tell the restart: the client tells it once
    expect(ev.filter((e) => e.type === 'restart')).toHaveLength(1);
    const hist = cli(['runs', 'show', runId, '--json']);
    expect((await hist.exit).code, hist.stderr).toBe(0);
    expect(hist.stdout).toMatch(/"status":\s*"ok"/);
    await until('0 processes on every host', async () => (await trainerProcesses()).length === 0, 15_000);
    process.stderr.write(`lost leader restart: kill h1 -> restart event ${restart.time - killedAt} ms; h1 back -> agent relaunched ${relaunched!.time - backAt} ms; h1 back -> first step after resume ${firstAfter.time - backAt} ms\n`);
    process.stderr.write(timeline('h1 back', backAt, ev.slice(ev.indexOf(restart), ev.indexOf(firstAfter) + 1)));
  }, 600_000);

  it('the leader h1 not back within the followers\' wait (COHORT_HOST_WAIT_MS 8 s): the followers fail host-lost naming h1 with the hint, the client ends lost naming h1, nothing left on h2/h3', async () => {
    // The client's verdict must come after the followers' detection (6 s heartbeat) and their 8 s wait: with the
    // product's 20 s heartbeat a 20 s lost-after raced it under load (~30: lost said before any restart event,
    // issue 25) and the case used 40 s (12 s over 20 + 8 s); 30 s leaves 13 s over h3's 9 + 8 s (16 over h2's 6 + 8).
    const run = cli(['run', '--profile', 'brief-lead', '--steps', '100000', '--checkpoint-every', String(EVERY), ...tiny, '--max-restarts', '1', '--json'], { json: true, env: { COHORT_LOST_AFTER_MS: '30000' } });
    await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const killedAt = await killHost(0);
    try {
      const restart = (await run.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
      expect(restart).toMatchObject({ host: 'h1', code: 'host-lost', waitingFor: ['h1'], waitMs: 8000 });
      const exit = await run.exit;
      const endedAfter = Date.now() - killedAt;
      expect(exit.code, run.stderr.slice(-3000)).toBe(3); // lost: the leader holds the outcome
      const errors = run.events.filter((e): e is ErrorEvent => e.type === 'error');
      // the root cause the history keeps is h1 (the follower ranks' peer-lost copies are told after the restart, as consequences)
      const hist = cli(['runs', 'list', '--json']);
      expect((await hist.exit).code).toBe(0);
      const meta = (JSON.parse(hist.stdout) as { status: string; error?: { code?: string; message: string; host?: string }; errorCode?: string }[]).find((m) => m.status === 'lost'); // the only lost run of this file
      expect(meta, hist.stdout).toMatchObject({ status: 'lost', errorCode: 'host-unreachable' });
      expect(meta!.error).toMatchObject({ code: 'host-unreachable', host: 'h1', message: expect.stringMatching(/^h1: unreachable/) }); // the one error shape (issue 24 item 5)
      // the follower ranks' own errors (peer-lost, or rank-hung from the hang watcher) are consequences: told
      // (rank 2 on h3 at least, see brief-lead), and after the restart event, never before it
      const consequences = run.events.filter((e) => e.type === 'error' && (e.code === 'peer-lost' || e.code === 'rank-hung'));
      expect(consequences.length, `the follower ranks' peer-lost copies are told: ${JSON.stringify(errors)}`).toBeGreaterThan(0);
      for (const c of consequences) expect(run.events.indexOf(c), JSON.stringify(c)).toBeGreaterThan(run.events.indexOf(restart));
      const followers = errors.find((e) => /not back within 8 s/.test(e.message));
      expect(followers, JSON.stringify(errors)).toMatchObject({ host: 'h1', code: 'host-lost' });
      expect(followers!.message).toMatch(/host h1 \(the run's leader\) lost and not back within 8 s/);
      // bounded: the followers' detection (6 s beat), their 8 s wait, the client's 30 s without the leader (COHORT_LOST_AFTER_MS)
      expect(endedAfter).toBeLessThan(120_000);
      await until('nothing left on h2/h3', async () => (await trainerProcesses([1, 2])).length === 0, 15_000);
    } finally {
      await bringBack(0);
    }
  }, 420_000);

  // One run proves both the plain restart of a lost follower and the re-deploy of its bundle (they were two
  // runs; merged for issue 25, see test/README.md). A relaunch with the bundle in place (no re-deploy) is the
  // leader case below, through `cohort attach`.
  it('--max-restarts 1: h3 killed after a checkpoint (its <workdir>/trainer/ removed while down) and back seconds later: restart event (h3, host-lost, resume step), the client re-deploys the bundle and relaunches its agent, ok with the uninterrupted paramChecksum, 0 processes left', async () => {
    const uninterrupted = await refSum();

    const run = cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--max-restarts', '1', '--json'], { json: true });
    await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const killedAt = await killHost(2);
    const restart = (await run.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
    expect(restart).toMatchObject({ attempt: 1, host: 'h3', rank: -1, code: 'host-lost', waitingFor: ['h3'] });
    expect(restart.resumeStep).toBeGreaterThanOrEqual(EVERY); // from a checkpoint, not from the start
    // the leader stopped the surviving ranks and waits (its agent and h2's stay, holding the slots)
    await until('the ranks on h1 and h2 stopped', async () => (await trainerProcesses([0, 1])).every((p) => !/ rank --run /.test(p)), 20_000);
    // While h3 is down its bundle goes; its workdir's runs/ (the run's spec and record) stays.
    const bundles = join(fx().cluster.hosts[2]!.workdir, 'trainer');
    expect(existsSync(bundles), `${bundles} was deployed`).toBe(true);
    rmSync(bundles, { recursive: true, force: true });
    expect(existsSync(join(fx().cluster.hosts[2]!.workdir, 'runs'))).toBe(true);
    await new Promise((r) => setTimeout(r, 3000));
    const backAt = await bringBack(2);

    const exit = await run.exit;
    const ev: CohortEvent[] = run.events;
    const logs = ev.flatMap((e) => (e.type === 'log' ? [e.message] : []));
    expect(exit.code, `${run.stderr.slice(-2000)}\n${logs.slice(-20).join('\n')}`).toBe(0);
    const afterRestart = ev.slice(ev.indexOf(restart));
    expect(afterRestart.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep), 'rank 0 resumed from the step the restart event names').toBe(true);
    const firstAfter = afterRestart.find((e): e is StepEvent => e.type === 'step')!;
    expect(firstAfter.step).toBe(restart.resumeStep + 1); // --warmup-steps 0: every step is told
    // the client said it relaunched h3, and that it re-deployed the bundle first (one log line says both)
    const relaunched = ev.find((e) => e.type === 'log' && /h3 is back: .*its agent of run .* runs again/.test(e.message));
    expect(relaunched, logs.slice(-20).join('\n')).toBeDefined();
    expect(relaunched!.type === 'log' && relaunched!.message).toMatch(/^h3 is back: re-deployed the trainer bundle to h3/);
    expect(existsSync(bundles), 'the bundle is on h3 again').toBe(true);
    const done = ev.find((e): e is DoneEvent => e.type === 'done')!;
    expect(done).toMatchObject({ status: 'ok', steps: STEPS });
    expect(done.paramChecksum).toBe(uninterrupted);
    expect(ev.filter((e) => e.type === 'restart')).toHaveLength(1);
    await until('0 processes on every host', async () => (await trainerProcesses()).length === 0, 15_000);
    process.stderr.write(`lost host restart: kill h3 -> restart event ${restart.time - killedAt} ms; h3 back -> its agent relaunched with the bundle re-deployed ${relaunched!.time - backAt} ms; -> first step after resume ${firstAfter.time - backAt} ms\n`);
    process.stderr.write(timeline('h3 back', backAt, ev.slice(ev.indexOf(restart), ev.indexOf(firstAfter) + 1)));
  }, 600_000);
});
