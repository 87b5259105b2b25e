// A run the local history thinks is still going, and that no client here follows, is asked about
// on its hosts: `run-status` on its leader, and the answer written into the history (the history
// is only a cache of the hosts' record). Used by CohortService's listRuns and getRun; apart from
// the service because it is the one place that turns a host's run state into a RunMeta status.
import { HOST_CMD_EXIT, decodeRunState, isTerminalRunState } from '../../../trainer/protocol';
import { LOCAL_PROFILE_NAME, type RunMeta, type RunMetaStatus } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { ProfileStore } from '../profiles';
import { runHostCommand } from '../runs/host-link';
import { attachLocalPlan, localWorkdir } from '../runs/local-run';
import { runProfile } from '../runs/run-profile';
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
  const { runs, profiles, dataDir, cluster } = deps;
  try {
    const plan = meta.profile === LOCAL_PROFILE_NAME ? attachLocalPlan(meta.id, meta.record?.[0]?.workdir ?? localWorkdir(dataDir)) : meta.record?.length && cluster ? cluster.attachPlan((await runProfile(meta, profiles))!, meta.id, meta.record) : undefined;
    const leader = plan?.hosts[0];
    if (!leader) return undefined;
    const r = await runHostCommand(leader.link, ['run-status', '--run', meta.id], { timeoutMs: 5000 });
    if (r.code === HOST_CMD_EXIT.noSuchRun) return runs.patch(meta.id, { status: 'lost', error: `${leader.host} has no record of this run` }, { unlessFollowed: true });
    const line = r.stdout.trim().split('\n').pop();
    if (r.code !== 0 || !line) return undefined; // unreachable: keep what the cache says
    const parsed = JSON.parse(line) as { agentAlive?: boolean };
    const st = decodeRunState(parsed);
    const status: RunMetaStatus = isTerminalRunState(st.state) ? st.state : parsed.agentAlive === false ? 'lost' : st.state;
    return runs.patch(meta.id, { status, ...(st.lastStep !== undefined ? { steps: st.lastStep } : {}), lastSeenAt: new Date(st.updatedAt).toISOString(), ...(st.endedAt ? { endedAt: new Date(st.endedAt).toISOString() } : {}), ...(st.error ? { error: `${st.error.rank >= 0 ? `rank ${st.error.rank} on ` : ''}${st.error.host}: ${st.error.message}` } : {}) }, { unlessFollowed: true });
  } catch {
    return undefined;
  }
}
