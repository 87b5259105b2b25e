// Issue 21 item 5, "bad node out", with a client that only attached, on 4 real OpenSSH hosts
// (network namespaces), through the real `cohort` CLI: a profile of 4 hosts whose h4 is
// `spare: true`; the run is started with --detach (that client exits) and followed only by
// `cohort attach`, which has no launch specs. h3 dies after a checkpoint and is not brought back:
//   - the attach starts the spare h4's agent with h3's rank (the leader's spec read with the host
//     command `run-spec`, h3's ranks from the run's history) and the run trains again on h1, h2, h4;
//   - the run's history puts h4 in h3's place (record and hosts), so `cohort stop` from a third
//     process reaches h4 (the leader's own stop reaches it too, over the control link: the history
//     is what this checks) and `runs show` names it;
//   - after the stop: 0 processes of the run on every host (h4 included).
import { describe, expect, it } from 'vitest';
import type { RestartEvent, StepEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { PACED_HOST, QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

const tiny = tinyRun({ warmupSteps: 0, seed: 7 });
// the run is until stopped: its ranks sleep between steps (PACED_HOST) while the test waits
const quick = (host: number, extra: Record<string, unknown> = {}) => ({ host, env: { ...QUICK_HOST_TIMINGS, ...PACED_HOST }, ...extra });
const fx = useCohortCluster(4, {
  enabled: NETNS,
  clientEnv: { COHORT_LOST_AFTER_MS: '20000', ...QUICK_CLIENT_SSH, COHORT_SSH_CONNECT_TIMEOUT_MS: '4000' },
  profiles: {
    // the leader waits 60 s for the spare (not the product's 180 s): without its start the run fails spare-missing soon
    'trio-spare': [{ host: 0, env: { ...QUICK_HOST_TIMINGS, ...PACED_HOST, COHORT_HOST_WAIT_MS: '60000' } }, quick(1), quick(2), quick(3, { spare: true })],
  },
  deploy: 'trio-spare',
});

interface ShownRun {
  status: string;
  hosts: { name: string; ranks: number[]; replaces?: string }[];
  record?: { host: string; workdir: string }[];
  spareRecord?: { host: string }[];
}

describe.skipIf(!NETNS)('bad node out with an attach-only client, 4 real SSH hosts', () => {
  it('detached run, h3 killed: the attach starts the spare h4, the history puts h4 in h3\'s place, cohort stop from a third process leaves 0 processes on every host', async () => {
    const started = fx().cli(['run', '--profile', 'trio-spare', '--steps', '100000', '--checkpoint-every', '2', ...tiny, '--max-restarts', '1', '--detach', '--json'], { json: true });
    expect((await started.exit).code, started.stderr).toBe(0);
    const runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId?: string }).runId!;
    const show = async (): Promise<ShownRun> => {
      const r = fx().cli(['runs', 'show', runId, '--json']);
      expect((await r.exit).code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { meta: ShownRun }).meta;
    };
    // the start records where the spare would keep the run's record
    expect((await show()).spareRecord?.map((r) => r.host)).toEqual(['h4']);
    const att = fx().cli(['attach', runId, '--json'], { json: true });
    try {
      await att.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
      expect(await fx().trainerProcesses([3])).toEqual([]); // the spare runs nothing before the loss
      await crashHost(fx().cluster, 2);
      const restart = (await att.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
      expect(restart).toMatchObject({ attempt: 1, host: 'h3', code: 'host-lost', excluded: 'h3', replacement: 'h4', waitingFor: ['h4'] });
      // the attach (no launch specs) starts h4's agent with h3's rank, and the run steps again
      await att.waitFor((e) => e.type === 'log' && /the spare host h4's agent of run .* runs \(pid \d+\) in place of h3/.test(e.message), 120_000);
      const stepped = (await att.waitFor((e) => e.type === 'step' && e.time > restart.time, 120_000)) as StepEvent;
      expect(stepped.step).toBeGreaterThan(restart.resumeStep);
      await until('h4 runs rank 2', async () => (await fx().trainerProcesses([3])).some((p) => / rank /.test(p)), 30_000);

      // the history: h4 in h3's place, with h3's rank
      const meta = await show();
      expect(meta.hosts).toEqual([
        { name: 'h1', ranks: [0] },
        { name: 'h2', ranks: [1] },
        { name: 'h4', ranks: [2], replaces: 'h3' },
      ]);
      expect(meta.record?.map((r) => r.host)).toEqual(['h1', 'h2', 'h4']);
      const plain = fx().cli(['runs', 'show', runId]);
      expect((await plain.exit).code, plain.stderr).toBe(0);
      expect(plain.stdout).toContain('3 rank(s): h1[0] h2[1] h4[2] (spare, in place of h3)');

      // stop from a third process (its plan is the history's): the run ends cancelled, nothing left anywhere
      const stop = fx().cli(['stop', runId]);
      expect((await stop.exit).code, stop.stderr.slice(-3000)).toBe(0);
      expect(stop.stderr).toContain('h4: nothing left running');
      const exit = await att.exit;
      expect(exit.code, att.stderr.slice(-3000)).toBe(130);
      expect((await show()).status).toBe('cancelled');
      await until('0 processes on every host', async () => (await fx().trainerProcesses()).length === 0, 20_000);
    } finally {
      await fx().cluster.restartSshd(2);
      await fx().cluster.setLink(2, true);
    }
  }, 600_000);
});
