// A run the local history thinks is still going, and that no client here follows, is asked about
// on its hosts: `run-status` on its leader, and the answer written into the history (the history
// is only a cache of the hosts' record). Used by CohortService's listRuns and getRun; apart from
// the service because it is the one place that turns a host's run state into a RunMeta status.
// A stop that reached the other hosts while the leader was down, or one owed to a host that was down
// when this client sent it (deliverOwedStops), reaches that host here too (issue 24 item 4).
import { HOST_CMD_EXIT, decodeRunState, isTerminalRunState } from '../../../trainer/protocol';
import { LOCAL_PROFILE_NAME, runErrorOf, type RunMeta, type RunMetaStatus } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { ProfileStore } from '../profiles';
import { HostQueries } from '../runs/controller-queries';
import { stopHost, stoppedElsewhere, type StopContext } from '../runs/controller-stop';
import { runHostCommand } from '../runs/host-link';
import { attachLocalPlan, localWorkdir } from '../runs/local-run';
import { runProfile } from '../runs/run-profile';
import type { RunPlan } from '../runs/run-plan';
import type { RunStore } from '../runs/run-store';

export interface RefreshDeps {
  runs: RunStore;
  profiles: ProfileStore;
  dataDir: string;
  /** Absent: a cluster run cannot be asked about, and keeps what the cache says. */
  cluster?: ClusterOps;
}

/** The hosts' word on a run's state, written into the local history; undefined when no host answered
 *  (the cache's word stands). A leader with no record of the run makes it `lost`. */
export async function refreshRunStatus(meta: RunMeta, deps: RefreshDeps): Promise<RunMeta | undefined> {
  const { runs } = deps;
  try {
    const plan = await planOf(meta, deps);
    const leader = plan?.hosts[0];
    if (!leader) return undefined;
    const r = await runHostCommand(leader.link, ['run-status', '--run', meta.id], { timeoutMs: 5000 });
    if (r.code === HOST_CMD_EXIT.noSuchRun) return runs.patch(meta.id, { status: 'lost', error: { code: 'no-such-run', message: `${leader.host} has no record of this run`, host: leader.host }, errorCode: 'no-such-run' }, { unlessFollowed: true });
    const line = r.stdout.trim().split('\n').pop();
    if (r.code !== 0 || !line) return undefined; // unreachable: keep what the cache says
    const parsed = JSON.parse(line) as { agentAlive?: boolean };
    const st = decodeRunState(parsed);
    // The leader's agent is gone and its record never ended: its host may have been down during a stop
    // that reached the others (issue 24 item 4). Their word decides: one `cancelled` and the run is,
    // and the leader gets its stop marker now that it answers (so its own run-rejoin refuses the run).
    if (!isTerminalRunState(st.state) && parsed.agentAlive === false && plan!.hosts.length > 1) {
      const ctx: StopContext = { plan: plan!, emit: () => undefined, abortWait: () => undefined };
      if (await stoppedElsewhere(ctx, leader, plan!.hosts.slice(1), new HostQueries())) return runs.patch(meta.id, { status: 'cancelled', lastSeenAt: new Date().toISOString() }, { unlessFollowed: true });
    }
    const status: RunMetaStatus = isTerminalRunState(st.state) ? st.state : parsed.agentAlive === false ? 'lost' : st.state;
    return runs.patch(meta.id, { status, ...(st.lastStep !== undefined ? { steps: st.lastStep } : {}), lastSeenAt: new Date(st.updatedAt).toISOString(), ...(st.endedAt ? { endedAt: new Date(st.endedAt).toISOString() } : {}), ...(st.error ? { error: runErrorOf(st.error), errorCode: st.error.code } : {}) }, { unlessFollowed: true });
  } catch {
    return undefined;
  }
}

/** How long a follow waits for another client's launch to create the host record: run-start's own
 *  limit on the leader (30 s, controller-start.ts) and a margin; past it the follow goes ahead. */
export const LAUNCH_WAIT_MS = 35_000;
const LAUNCH_POLL_MS = 300;

/**
 * Resolves once the run's leader has its record, or once waiting is pointless. A client launching a
 * run writes the history (`starting`) before run-start creates the hosts' record: another client
 * following it in between (the dashboard's Live view opening a run the CLI has just started) read
 * "no record" as the run's end and called it failed (ci30: history-tools.test). So while the history
 * says `starting` and a live process keeps it (the launcher's writer lock), the leader is asked
 * (run-status) until it knows the run. Not waited for: an ended or running run, a launcher that is
 * gone (a `--detach` launch has returned; a crashed one never will), a host that does not answer (the
 * follow itself says so), LAUNCH_WAIT_MS.
 */
export async function untilLaunched(runId: string, deps: RefreshDeps, opts: { timeoutMs?: number; everyMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? LAUNCH_WAIT_MS);
  let leader: RunPlan['hosts'][number] | undefined; // planned once: each poll asks the same link
  for (;;) {
    const meta = deps.runs.meta(runId);
    if (!meta || meta.status !== 'starting' || !deps.runs.writerAlive(runId) || Date.now() > deadline) return;
    try {
      leader ??= (await planOf(meta, deps))?.hosts[0];
      if (!leader) return;
      const r = await runHostCommand(leader.link, ['run-status', '--run', runId], { timeoutMs: 5000 });
      if (r.code !== HOST_CMD_EXIT.noSuchRun) return;
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, opts.everyMs ?? LAUNCH_POLL_MS));
  }
}

/** The plan of a run in the history (its hosts' links), or undefined when it cannot be reached from here. */
async function planOf(meta: RunMeta, { profiles, dataDir, cluster }: RefreshDeps): Promise<RunPlan | undefined> {
  if (meta.profile === LOCAL_PROFILE_NAME) return attachLocalPlan(meta.id, meta.record?.[0]?.workdir ?? localWorkdir(dataDir));
  return meta.record?.length && cluster ? cluster.attachPlan((await runProfile(meta, profiles))!, meta.id, meta.record) : undefined;
}

/**
 * A stop owed to hosts that were down when it was sent (RunMeta.stopOwed, issue 24 item 4): run-stop
 * on each of them again (the controller's stopHost: an agent still running stops; a dead one's host
 * gets its stop marker, so its own run-rejoin refuses the run, whoever asks). Each host that confirms
 * is dropped from the list; one still down keeps it for the next listing. The history after, or
 * undefined when nothing could be asked.
 */
export async function deliverOwedStops(meta: RunMeta, deps: RefreshDeps): Promise<RunMeta | undefined> {
  const owed = new Set(meta.stopOwed ?? []);
  try {
    const plan = owed.size ? await planOf(meta, deps) : undefined;
    const hosts = plan?.hosts.filter((h) => owed.has(h.host)) ?? [];
    if (!plan || !hosts.length) return undefined;
    const ctx: StopContext = { plan, emit: () => undefined, abortWait: () => undefined, stopAnswer: (h, reached) => void (reached ? owed.delete(h) : owed.add(h)) };
    await Promise.all(hosts.map((h) => stopHost(ctx, h, 'stopped (the stop was sent while this host was down)', 1000)));
    return deps.runs.patch(meta.id, { stopOwed: owed.size ? [...owed] : undefined }, { unlessFollowed: true });
  } catch {
    return undefined;
  }
}
