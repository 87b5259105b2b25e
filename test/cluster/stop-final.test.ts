// Issue 24 defect 6 on the CLIENT side, on 3 real OpenSSH hosts (network namespaces) through the
// real `cohort` CLI, each client its own process: a stop is final.
//   - the leader host h1 dies (link down, sshd and every process on it killed, workdir kept) in a run
//     with restarts left, followed by `cohort attach` (A): the followers wait for h1 and A tries to
//     relaunch its agent. `cohort stop` from another process (B) while h1 is down: h1 gets no stop
//     marker (it cannot be reached), the followers do. h1 comes back: A must NOT relaunch h1's agent
//     (it saw the stop in the followers' records), no agent of the run runs on h1 again, the history
//     says cancelled, and nothing is left on any host
//   - afterwards a third client (C, `cohort attach RUN`) finds the run cancelled in its record and
//     relaunches nothing either; the stop reaches h1 (its stop marker) once h1 answers, so h1's own
//     run-rejoin refuses the run too, whoever asks
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RestartEvent } from '../../trainer/protocol';
import { harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { crashedHost } from '../helpers/crashed-host';
import { PACED_HOST, QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';
const tiny = tinyRun({ warmupSteps: 0, seed: 7 });
// the run is until stopped: its ranks sleep between steps (PACED_HOST) while the test waits
const quick = (host: number) => ({ host, env: { ...QUICK_HOST_TIMINGS, ...PACED_HOST } });
// the clients notice the dead link and retry in seconds (QUICK_CLIENT_SSH, a 4 s connect try), not the product's 15 s / 4 s / 10 s
const fx = useCohortCluster(3, { enabled: NETNS, clientEnv: { ...QUICK_CLIENT_SSH, COHORT_SSH_CONNECT_TIMEOUT_MS: '4000' }, profiles: { trio: [quick(0), quick(1), quick(2)] }, deploy: 'trio' });

const relaunchedLine = /h1 is back: .*its agent of run .* runs again/;

describe.skipIf(!NETNS)('a stop is final for every client (issue 24 defect 6, client side)', () => {
  it('cohort stop while the lost leader is waited for: the attached client does not relaunch it when it comes back; history cancelled; a later attach relaunches nothing; h1 learns the stop', async () => {
    const started = fx().cli(['run', '--profile', 'trio', '--steps', '100000', '--checkpoint-every', '2', ...tiny, '--max-restarts', '2', '--detach', '--json'], { json: true });
    expect((await started.exit).code, started.stderr).toBe(0);
    const runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId?: string }).runId!;
    const a = fx().cli(['attach', runId, '--json'], { json: true });
    await a.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const h1 = await crashedHost(fx().cluster, 0);
    try {
      const restart = (await a.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
      expect(restart).toMatchObject({ host: 'h1', waitingFor: ['h1'] });
      // A is trying to reach h1 to relaunch its agent
      await a.waitFor((e) => e.type === 'log' && /h1 was lost: trying to reach it to relaunch/.test(e.message), 30_000);

      const b = fx().cli(['stop', runId]);
      const bExit = await b.exit;
      expect(bExit.code, b.stderr).toBe(0);
      // B could not reach h1: no stop marker there (its disk is this machine's: read it directly)
      const h1Run = join(fx().cluster.hosts[0]!.workdir, 'runs', runId);
      expect(existsSync(join(h1Run, 'stop')), 'h1 was down during the stop').toBe(false);
      // the followers got it
      for (const i of [1, 2]) expect(existsSync(join(fx().cluster.hosts[i]!.workdir, 'runs', runId, 'stop')), `h${i + 1}'s stop marker`).toBe(true);

      await h1.back();
      const aExit = await a.exit;
      expect(a.events.some((e) => e.type === 'log' && relaunchedLine.test(e.message)), `A relaunched h1 after the stop:\n${a.events.filter((e) => e.type !== 'step' && e.type !== 'checkpoint').slice(-25).map((e) => JSON.stringify(e).slice(0, 300)).join('\n')}`).toBe(false);
      expect(aExit.code, a.stderr.slice(-2000)).toBe(130); // cancelled
      // no agent of the run on h1 for a while after it came back (a relaunch would start one at once)
      for (let i = 0; i < 10; i++) {
        expect(await fx().trainerProcesses([0]), 'an agent of the stopped run runs on h1 again').toEqual([]);
        await new Promise((r) => setTimeout(r, 500));
      }

      const show = fx().cli(['runs', 'show', runId, '--json']);
      expect((await show.exit).code, show.stderr).toBe(0);
      expect((JSON.parse(show.stdout) as { meta: { status: string } }).meta.status).toBe('cancelled');

      // C: a later attach of the cancelled run replays its record and relaunches nothing
      const c = fx().cli(['attach', runId, '--json'], { json: true });
      expect((await c.exit).code, c.stderr.slice(-2000)).toBe(130);
      expect(c.events.some((e) => e.type === 'log' && relaunchedLine.test(e.message))).toBe(false);
      // h1 has learnt the stop once it answered: its own run-rejoin refuses the run from now on
      await until("h1's stop marker", () => existsSync(join(h1Run, 'stop')), 30_000, 250);
      expect(await fx().trainerProcesses([0])).toEqual([]);
      await until('0 processes on every host', async () => (await fx().trainerProcesses()).length === 0, 30_000);
    } finally {
      await h1.back();
    }
  }, 600_000);
});
