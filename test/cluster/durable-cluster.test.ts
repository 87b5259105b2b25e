// Issue 12's proofs on a 3-host cluster of real OpenSSH hosts (network namespaces), through the
// real `cohort` CLI, each client a separate process:
//   - `run --detach`, then an attached client SIGKILLed: the run trains on in the hosts' record;
//     `cohort attach` from a new process streams every step once, in order, the same steps as the
//     leader's record; `cohort stop` from a third process leaves 0 trainer processes on every host
//     and the history says cancelled
//   - the client's path to every host cut for 12 s (hosts still reach each other): training goes
//     on, the attached CLI takes the silent link for dropped (its keepalive, 2 s × 3 here:
//     QUICK_CLIENT_SSH), connects again and continues with no gap and no duplicate
//   - a host dead mid-run (link down, sshd and every process killed, workdir kept): the run ends
//     failed naming that host, nothing is left on the surviving hosts; with the leader dead, the
//     attached client says lost naming it (COHORT_LOST_AFTER_MS shortens the 60 s default here)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventLineDecoder, type CohortEvent, type ErrorEvent, type StepEvent } from '../../trainer/protocol';
import { harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import type { CliRun } from '../helpers/cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { PACED_HOST, QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

const tiny = tinyRun();
// Every agent takes a silent peer for lost after 6 s (QUICK_HOST_TIMINGS), not the product's 20 s.
// With 6 s the follower-dies case ends the run before this client's SSH keepalive notices h3 is
// gone: `cohort attach` got `done` and then never exited (its half-closed socket to the dead h3 kept
// the process alive; fixed in ssh/connect.ts closeClient, issue 24; test/ssh/dispose-dead-peer.test.ts).
// Every run here is until stopped: its ranks sleep between steps (PACED_HOST) while the test waits.
const quick = (host: number) => ({ host, env: { ...QUICK_HOST_TIMINGS, ...PACED_HOST } });
// trio: h1 leads; pair: h2 leads, h1 follows (for the leader-dies case, after h3 is gone)
const fx = useCohortCluster(3, { enabled: NETNS, profiles: { trio: [quick(0), quick(1), quick(2)], pair: [quick(1), quick(0)] }, deploy: 'trio' });
const cli = (args: string[], opts: { json?: boolean; env?: NodeJS.ProcessEnv } = {}): CliRun => fx().cli(args, opts);
const stepsOf = (events: CohortEvent[]) => events.filter((e): e is StepEvent => e.type === 'step').map((e) => e.step);

/** The step numbers in a host's own record of the run (the hosts share this machine's filesystem). */
function recordSteps(host: number, runId: string): number[] {
  const p = join(fx().cluster.hosts[host]!.workdir, 'runs', runId, 'events.jsonl');
  if (!existsSync(p)) return [];
  return readFileSync(p, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"type":"step"'))
    .map((l) => (JSON.parse(l) as StepEvent).step);
}

const trainerProcesses = (hosts?: number[]) => fx().trainerProcesses(hosts);

async function startDetached(profile = 'trio'): Promise<string> {
  const r = cli(['run', '--profile', profile, '--steps', '100000', ...tiny, '--detach', '--json'], { json: true });
  const exit = await r.exit;
  expect(exit.code, r.stderr).toBe(0);
  const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId?: string }).runId!;
  expect(runId).toMatch(/^\d{8}-\d{6}-/);
  return runId;
}

async function historyStatus(runId: string): Promise<string | undefined> {
  const r = cli(['runs', 'list', '--json']);
  await r.exit;
  return (JSON.parse(r.stdout) as { id: string; status: string }[]).find((m) => m.id === runId)?.status;
}

/** What an attached client streamed: every step once, in order, with no gap. */
function expectContiguous(seen: number[]): void {
  expect(seen.length).toBeGreaterThan(0);
  expect(new Set(seen).size, `duplicated steps in ${seen.join(',')}`).toBe(seen.length);
  expect(seen, 'a gap in the streamed steps').toEqual(Array.from({ length: seen.length }, (_, i) => seen[0]! + i));
}

describe.skipIf(!NETNS)('durable runs on 3 real SSH hosts', () => {
  it('detach; a SIGKILLed client; attach from a new process streams every step once; stop from a third process leaves 0 processes and history cancelled', async () => {
    const runId = await startDetached();
    // A client attached, then killed: the run does not notice.
    const doomed = cli(['attach', runId, '--json'], { json: true });
    await doomed.waitFor((e) => e.type === 'step', 180_000);
    doomed.child.kill('SIGKILL');
    await doomed.exit;
    const atKill = Math.max(0, ...recordSteps(0, runId));
    await until('the leader record to advance with no client', () => Math.max(0, ...recordSteps(0, runId)) >= atKill + 3, 120_000);
    // every host still runs its agent and its rank
    for (const i of [0, 1, 2]) expect((await trainerProcesses([i])).length, `host ${i + 1}`).toBeGreaterThanOrEqual(2);

    const before = Math.max(...recordSteps(0, runId));
    const attach = cli(['attach', runId, '--json'], { json: true });
    await attach.waitFor((e) => e.type === 'step' && e.step > before + 2, 120_000);

    const stop = cli(['stop', runId]);
    const stopExit = await stop.exit;
    expect(stopExit.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(/cancelled/);
    for (const h of fx().cluster.hosts) expect(stop.stderr).toContain(`${h.name}: nothing left running`);
    expect((await attach.exit).code, attach.stderr).toBe(130);
    expect(await trainerProcesses()).toEqual([]);

    const seen = stepsOf(attach.events);
    expectContiguous(seen);
    // attach replays the whole record then follows it live: exactly the leader's steps
    expect(seen).toEqual(recordSteps(0, runId));
    for (const s of stepsOf(doomed.events)) expect(seen).toContain(s);
    expect(await historyStatus(runId)).toBe('cancelled');
    // the local history (kept by one of the attach and stop processes): whole lines, each step once
    const d = new EventLineDecoder();
    const history = [...d.push(readFileSync(join(fx().dir, 'data', 'runs', runId, 'events.jsonl'), 'utf8')), ...d.end()];
    expect(history.filter((x) => x.kind !== 'event'), 'damaged lines in the history').toEqual([]);
    expect(stepsOf(history.flatMap((x) => (x.kind === 'event' ? [x.event] : [])))).toEqual(recordSteps(0, runId));
  }, 420_000);

  it('the client path cut for 12 s: training goes on on the hosts; the attached CLI takes the link for dropped, connects again and continues with no gap and no duplicate', async () => {
    const runId = await startDetached();
    // The client pings every 2 s (dropped after 3 unanswered, ~6 s) instead of the product's 5 s × 3 (15 s),
    // so a 12 s cut (was 20 s) still drops its connections and makes it connect again.
    const attach = cli(['attach', runId, '--json'], { json: true, env: { ...QUICK_CLIENT_SSH } });
    await attach.waitFor((e) => e.type === 'step' && e.step >= 2, 180_000);
    const cutAt = Math.max(...recordSteps(0, runId));
    // SSH logins on the leader h1: only this attached client logs in there until the stop below
    const logins = async () => (await fx().cluster.sshdLog(0)).split('\n').filter((l) => /Accepted publickey/.test(l)).length;
    const loginsBefore = await logins();
    await fx().cluster.setClientPath(false);
    let resumedAt = 0;
    try {
      // what was in flight arrives within 2 s; after that nothing reaches the client
      await new Promise((r) => setTimeout(r, 2_000));
      const seenEarlyInCut = stepsOf(attach.events).length;
      await new Promise((r) => setTimeout(r, 10_000));
      resumedAt = Math.max(...recordSteps(0, runId));
      expect(stepsOf(attach.events).length, 'events reached the client through the cut').toBe(seenEarlyInCut);
      // the hosts trained on without their client (rank 0 needs every host's gradients for a step)
      expect(resumedAt).toBeGreaterThan(cutAt + 2);
      expect(Math.max(0, ...stepsOf(attach.events))).toBeLessThan(resumedAt);
    } finally {
      await fx().cluster.setClientPath(true);
    }
    expect(attach.child.exitCode).toBeNull(); // the attached client waited through the cut
    await attach.waitFor((e) => e.type === 'step' && e.step > resumedAt + 1, 120_000);
    // it logged in again after the cut. (Not proof of the keepalive knob: with the product's 5 s × 3 a 12 s cut
    // also ended in a new login, seen once, cause not diagnosed; the knob's wiring is client-timings.test.ts's.)
    expect(await logins(), 'the attached client connected to h1 again after the cut').toBeGreaterThan(loginsBefore);

    const stop = cli(['stop', runId]);
    expect((await stop.exit).code, stop.stderr).toBe(0);
    expect((await attach.exit).code, attach.stderr).toBe(130);
    const seen = stepsOf(attach.events);
    expectContiguous(seen);
    expect(seen).toEqual(recordSteps(0, runId));
    expect(await trainerProcesses()).toEqual([]);
    expect(await historyStatus(runId)).toBe('cancelled');
  }, 420_000);

  it('a follower host dies mid-run (link down, sshd and all its processes killed): the run fails naming it; nothing is left on the others', async () => {
    const runId = await startDetached();
    const attach = cli(['attach', runId, '--json'], { json: true });
    await attach.waitFor((e) => e.type === 'step' && e.step >= 2, 180_000);
    const victim = fx().cluster.hosts[2]!;
    await fx().cluster.setLink(2, false);
    const t0 = Date.now();
    try {
      const procs = await fx().cluster.processes(2);
      for (const pid of [victim.sshdPid, ...procs.map((p) => p.pid)]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
      // The deadline's timer is cleared once the race is settled: left running, it fired 180 s later inside
      // whatever file the worker ran next (seen with vitest's isolate off), on a workdir gone by then.
      let deadline: ReturnType<typeof setTimeout> | undefined;
      const exit = await Promise.race([
        attach.exit,
        new Promise<never>((_, reject) =>
          (deadline = setTimeout(() => {
            const state = (i: number) => readFileSync(join(fx().cluster.hosts[i]!.workdir, 'runs', runId, 'state.json'), 'utf8');
            reject(new Error(`the attached client did not end within 180 s of ${victim.name}'s death; its last events:\n${attach.events.slice(-15).map((e) => JSON.stringify(e)).join('\n')}\nstderr: ${attach.stderr.slice(-1500)}\nh1 state: ${state(0)}\nh2 state: ${state(1)}`));
          }, 180_000)),
        ),
      ]).finally(() => clearTimeout(deadline));
      const ms = Date.now() - t0;
      process.stderr.write(`host killed -> attached client ended (failed) in ${ms} ms\n`);
      expect(exit.code, attach.stderr).toBe(1);
      const errors = attach.events.filter((e): e is ErrorEvent => e.type === 'error');
      expect(errors[0], JSON.stringify(errors)).toMatchObject({ host: victim.name });
      expect(errors[0]!.code).toBe('host-lost');
      expect(await trainerProcesses([0, 1])).toEqual([]);
      expect(await historyStatus(runId)).toBe('failed');
    } finally {
      await fx().cluster.setLink(2, true);
    }
    // the dead host's workdir keeps its record (state running: its agent was killed, not stopped)
    expect(existsSync(join(victim.workdir, 'runs', runId, 'events.jsonl'))).toBe(true);
  }, 420_000);

  it('the leader host dies mid-run: the attached client ends lost naming it (never running forever); the follower stops its ranks by itself', async () => {
    const runId = await startDetached('pair');
    // 8 s instead of the product's 60 s, so the test waits less (COHORT_LOST_AFTER_MS is read by the CLI);
    // the dead leader's connection dropped after 3 keepalives 2 s apart (not 5 s), each try to reach it
    // again given up after 3 s (not 10 s): the client's verdict comes after its own 8 s, not after its SSH waits
    const attach = cli(['attach', runId, '--json'], { json: true, env: { COHORT_LOST_AFTER_MS: '8000', ...QUICK_CLIENT_SSH, COHORT_SSH_CONNECT_TIMEOUT_MS: '3000' } });
    await attach.waitFor((e) => e.type === 'step' && e.step >= 2, 180_000);
    const leader = fx().cluster.hosts[1]!;
    await fx().cluster.setLink(1, false);
    const t0 = Date.now();
    try {
      const procs = await fx().cluster.processes(1);
      for (const pid of [leader.sshdPid, ...procs.map((p) => p.pid)]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
      const exit = await attach.exit;
      process.stderr.write(`leader killed -> attached client ended (lost) in ${Date.now() - t0} ms\n`);
      expect(exit.code, attach.stderr).toBe(3);
      const errors = attach.events.filter((e): e is ErrorEvent => e.type === 'error');
      expect(errors[0], JSON.stringify(errors)).toMatchObject({ host: leader.name, code: 'host-unreachable' }); // the cause first, then what the follower saw
      expect(await historyStatus(runId)).toBe('lost');
      // h1's agent loses its leader (no beat for 20 s) and stops its rank: nothing left on it
      await until('the follower h1 to stop its rank', async () => (await trainerProcesses([0])).length === 0, 90_000);
    } finally {
      await fx().cluster.setLink(1, true);
    }
  }, 420_000);
});
