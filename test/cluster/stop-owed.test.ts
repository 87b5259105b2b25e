// Issue 24 item 4 (a stop is final) with no client attached, on 2 real OpenSSH hosts (network
// namespaces) through the real `cohort` CLI: a stop sent while a host was down reaches it once it
// answers, by listing the runs (the dashboard's History poll makes the same core call, listRuns).
//   - a detached run on h1 (leader) and h2, restarts left; h1 dies (link down, sshd and every process
//     on it killed, workdir kept); h2 stops its rank and waits for h1.
//   - `cohort stop RUN` reaches h2 only: the history says cancelled and that the stop is owed to h1
//     (`stopOwed`); h1 has no stop marker.
//   - h1 comes back; `cohort runs list` (no attach) delivers the stop: h1's stop marker is there when
//     the list has returned (so h1's own run-rejoin refuses the run, whoever asks), and the history
//     owes nothing any more. Before the fix only an attach delivered it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { crashedHost } from '../helpers/crashed-host';
import { readStateOf } from '../helpers/host';
import { PACED_HOST, QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';
const tiny = tinyRun({ warmupSteps: 0, seed: 7 });
// the run is until stopped: its ranks sleep between steps (PACED_HOST) while the test waits
const quick = (host: number) => ({ host, env: { ...QUICK_HOST_TIMINGS, ...PACED_HOST } });
const fx = useCohortCluster(2, { enabled: NETNS, clientEnv: { ...QUICK_CLIENT_SSH }, profiles: { duo: [quick(0), quick(1)] }, deploy: 'duo' });

interface ShownMeta {
  status: string;
  stopOwed?: string[];
}

describe.skipIf(!NETNS)('a stop owed to a host that was down is delivered by cohort runs list', () => {
  it('cohort stop while the leader h1 is down: owed to h1; h1 back, runs list gives it its stop marker', async () => {
    const started = fx().cli(['run', '--profile', 'duo', '--steps', '100000', '--checkpoint-every', '3', ...tiny, '--max-restarts', '2', '--detach', '--json'], { json: true });
    expect((await started.exit).code, started.stderr).toBe(0);
    const runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId?: string }).runId!;
    const [w1, w2] = [fx().cluster.hosts[0]!.workdir, fx().cluster.hosts[1]!.workdir];
    const show = async (): Promise<ShownMeta> => {
      const r = fx().cli(['runs', 'show', runId, '--json']);
      expect((await r.exit).code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { meta: ShownMeta }).meta;
    };
    // (the hosts' disks are this machine's: their records are read directly)
    await until('a step', () => (readStateOf(w1, runId)?.lastStep ?? 0) >= 1, 180_000, 250);
    const h1 = await crashedHost(fx().cluster, 0);
    try {
      await until('h2 to wait for h1', () => readStateOf(w2, runId)?.state === 'restarting', 90_000, 250);
      const stop = fx().cli(['stop', runId]);
      expect((await stop.exit).code, stop.stderr.slice(-2000)).toBe(0);
      const marker = join(w1, 'runs', runId, 'stop');
      expect(existsSync(marker), 'h1 was down during the stop').toBe(false);
      expect(existsSync(join(w2, 'runs', runId, 'stop')), "h2's stop marker").toBe(true);
      expect(await show()).toMatchObject({ status: 'cancelled', stopOwed: ['h1'] });

      await h1.back();
      const list = fx().cli(['runs', 'list', '--json']);
      expect((await list.exit).code, list.stderr.slice(-2000)).toBe(0);
      expect(existsSync(marker), "h1's stop marker, delivered by runs list").toBe(true);
      const after = await show();
      expect(after.status).toBe('cancelled');
      expect(after.stopOwed).toBeUndefined();
      await until('0 processes on every host', async () => (await fx().trainerProcesses()).length === 0, 30_000);
    } finally {
      await h1.back();
    }
  }, 600_000);
});
