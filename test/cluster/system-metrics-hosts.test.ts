// System metrics from every host (issue 22 item 3), the followers' path: on 3 real sshd hosts each
// follower's agent puts its counters on its 1-s control beat (`beat.sys`) and the leader's agent
// folds them into rank 0's step events (trainer/agent/system-windows.ts). Every host's CPU, its
// ranks' CPU, load, memory and (between namespaces) network bytes must arrive, in the live stream
// and in the run's record (events.jsonl as replayed by `runs show`, and meta.system's per-host
// medians). Real CLI, real agents and ranks, real /proc of each host; nothing faked.
import { describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import type { CohortEvent, StepEvent } from '../../trainer/protocol';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { tinyRun } from '../helpers/tiny';

const fx = useCohortCluster(3, { enabled: !SSHD_MISSING, profiles: { trio: [0, 1, 2] }, deploy: 'trio' });
const steps = (events: CohortEvent[]) => events.filter((e): e is StepEvent => e.type === 'step');

describe.skipIf(SSHD_MISSING)('system metrics on 3 sshd hosts', () => {
  it("every host's figures arrive on the step windows and in the record", async () => {
    const { cluster } = fx();
    const names = cluster.hosts.map((h) => h.name);
    // Windows of 4 steps over ~40 steps: several follower beats (1 s) fall inside the run.
    const run = fx().cli(['run', '--profile', 'trio', ...tinyRun({ logSteps: 4 }), '--steps', '40', '--json'], { json: true });
    const { code } = await run.exit;
    expect(code, run.stderr).toBe(0);
    const live = steps(run.events);
    expect(live.length).toBeGreaterThanOrEqual(5);
    const hostsSeen = new Set(live.flatMap((e) => (e.system ?? []).map((s) => s.host)));
    expect([...hostsSeen].sort(), 'every host, leader and both followers').toEqual([...names].sort());
    // A follower's first beat opens its span; from then on every window carries it (fresh or the last figures).
    const full = live.filter((e) => e.system?.length === 3);
    expect(full.length, 'windows with all three hosts').toBeGreaterThanOrEqual(2);
    for (const e of full) {
      for (const s of e.system!) {
        expect(s.spanMs, s.host).toBeGreaterThan(0);
        expect(s.cpus, s.host).toBeGreaterThanOrEqual(1);
        expect(s.cpuPercent, s.host).toBeGreaterThan(0);
        expect(s.ranksCpuPercent, `${s.host}: its own rank's CPU`).toBeGreaterThan(0);
        expect(s.memTotalBytes, s.host).toBeGreaterThan(s.memUsedBytes);
        expect(s.memUsedBytes, s.host).toBeGreaterThan(0);
        expect(s.load1, s.host).toBeGreaterThanOrEqual(0);
      }
    }
    // Between namespaces the ring's traffic crosses each host's own veth: every host sent and received.
    // (Loopback mode, no namespaces: that traffic is on `lo`, which is left out; not asserted then.)
    if (cluster.mode === 'netns') {
      for (const h of names) {
        const figs = full.map((e) => e.system!.find((s) => s.host === h)!);
        expect(Math.max(...figs.map((s) => s.netRxBytes)), `${h} received`).toBeGreaterThan(0);
        expect(Math.max(...figs.map((s) => s.netTxBytes)), `${h} sent`).toBeGreaterThan(0);
      }
    }
    // The record: the same figures replayed from the run's history, and each host's medians in meta.system.
    const runId = (run.events.find((e) => e.type === 'log' && 'runId' in e && typeof e.runId === 'string') as { runId: string } | undefined)?.runId ?? '';
    expect(runId).not.toBe('');
    const show = fx().cli(['runs', 'show', runId, '--json']);
    expect((await show.exit).code, show.stderr).toBe(0);
    const rec = JSON.parse(show.stdout) as { meta: RunMeta; events: CohortEvent[] };
    const recorded = steps(rec.events);
    expect(recorded.map((e) => e.system?.map((s) => s.host) ?? [])).toEqual(live.map((e) => e.system?.map((s) => s.host) ?? []));
    expect(rec.meta.system?.hosts.map((h) => h.host).sort()).toEqual([...names].sort());
    for (const h of rec.meta.system!.hosts) {
      expect(h.windows, h.host).toBeGreaterThanOrEqual(2);
      expect(h.cpuPercent, h.host).toBeGreaterThan(0);
      expect(h.othersCpuPercent, h.host).toBeDefined();
    }
  }, 300_000);
});
