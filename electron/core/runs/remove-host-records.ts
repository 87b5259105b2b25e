// A run's records on its hosts (`<workdir>/runs/<id>`: events, state, spec, logs, checkpoints),
// removed by the trainer bundle's `run-remove` on each host the history recorded, for `cohort runs
// rm RUN --hosts` (through deleteRuns, delete-runs.ts). Each host answers for itself: removed (what),
// nothing there, refused (something of the run still runs there), or not reached (why). A Slurm
// run's record is the shared workdir's `slurm/<id>` (every node's record in it): its login node
// removes it (`run-remove --scheduler slurm`), refusing while Slurm still queues or runs the job.
import { posix } from 'node:path';
import { HOST_CMD_EXIT, lastJson, type HostCmdError, type RunRemoveReply } from '../../../trainer/protocol';
import { LOCAL_PROFILE_NAME, toApiError, type HostRemoval, type RunMeta } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { ProfileStore } from '../profiles';
import { runHostCommand } from './host-link';
import { attachLocalPlan, localWorkdir } from './local-run';
import type { RunPlan } from './run-controller';
import { runProfile } from './run-profile';

/** One host's answer: the Api's type (electron/common/run-removal.ts), the GUI shows it too. */
export type { HostRemoval };

export interface RemoveHostDeps {
  profiles: ProfileStore;
  dataDir: string;
  /** Absent (a build without SSH): a cluster run's hosts cannot be reached. */
  cluster?: ClusterOps;
  /** Per host (default 20 s): an unreachable host is named after this, never waited on forever. */
  timeoutMs?: number;
}

/** Removes `meta`'s records on each of its recorded hosts, all hosts at once; one answer per host. */
export async function removeHostRecords(meta: RunMeta, deps: RemoveHostDeps): Promise<HostRemoval[]> {
  const hosts = meta.record?.map((r) => r.host) ?? meta.hosts.map((h) => h.name);
  let plan: RunPlan & { slurm?: boolean };
  try {
    const p = await planOf(meta, deps);
    if (typeof p === 'string') return (hosts.length ? hosts : ['(no host)']).map((host) => ({ host, outcome: 'failed', detail: p }));
    if (!p) return [{ host: hosts.join(', ') || '(no host)', outcome: 'absent', detail: 'the history records no host record of this run (it never started on its hosts): nothing to remove there' }];
    plan = p;
  } catch (err) {
    // the profile (or its snapshot) cannot be read: no way to reach the hosts
    const e = toApiError(err);
    return hosts.map((host) => ({ host, outcome: 'unreachable', detail: `not reached: ${e.message}${e.hint && !e.message.toLowerCase().includes(e.hint.toLowerCase()) ? ` (${e.hint})` : ''}` }));
  }
  const args = ['run-remove', '--run', meta.id, ...(plan.slurm ? ['--scheduler', 'slurm'] : [])];
  return Promise.all(plan.hosts.map(async ({ host, link }): Promise<HostRemoval> => {
    try {
      const r = await runHostCommand(link, args, { timeoutMs: deps.timeoutMs ?? 20_000 });
      if (r.code === null) return { host, outcome: 'unreachable', detail: `not reached: ${r.stderr.trim() || `the connection closed (${host})`}` };
      if (r.code === HOST_CMD_EXIT.noSuchRun) return { host, outcome: 'absent', detail: 'no record of this run there (already removed)' };
      const parsed = lastJson<RunRemoveReply | HostCmdError>(r.stdout);
      if (r.code === 0 && parsed && 'dir' in parsed) return { host, outcome: 'removed', detail: describe(parsed), reply: parsed };
      const error = parsed && 'error' in parsed ? parsed.error : undefined;
      if (error?.code === 'run-live') return { host, outcome: 'refused', detail: `kept: ${error.message}; stop it first ("cohort stop ${meta.id}")` };
      if (/usage: cohort-trainer\.mjs/.test(r.stderr)) return { host, outcome: 'failed', detail: `kept: the run's trainer bundle on ${host} predates run-remove; remove ${meta.record?.find((x) => x.host === host)?.workdir ?? '<workdir>'}/runs/${meta.id} there by hand` };
      return { host, outcome: 'failed', detail: `kept: run-remove failed (exit ${r.code}): ${error?.message ?? (r.stderr.trim().split('\n').pop() || 'no message')}` };
    } catch (err) {
      const e = toApiError(err);
      return { host, outcome: 'unreachable', detail: `not reached: ${e.message}${e.hint && !e.message.toLowerCase().includes(e.hint.toLowerCase()) ? ` (${e.hint})` : ''}` };
    }
  }));
}

/** The run's hosts as links (a Slurm run's: its login node); a string says why they cannot be asked; undefined: no host record known. */
async function planOf(meta: RunMeta, deps: RemoveHostDeps): Promise<(RunPlan & { slurm?: boolean }) | string | undefined> {
  if (meta.profile === LOCAL_PROFILE_NAME) return attachLocalPlan(meta.id, meta.record?.[0]?.workdir ?? localWorkdir(deps.dataDir));
  if (!meta.record?.length) return undefined;
  const profile = await runProfile(meta, deps.profiles);
  if (!profile) return undefined;
  if (!deps.cluster) return 'kept: this build has no SSH support, the hosts cannot be reached';
  if (profile.scheduler) {
    // The shared workdir as the login node sees it (where the run's bundle was deployed).
    const login = meta.record[0]!;
    return { runId: meta.id, hosts: [{ host: login.host, link: deps.cluster.bundleLink(profile, login.host, posix.dirname(login.entry)) }], slurm: true };
  }
  return deps.cluster.attachPlan(profile, meta.id, meta.record);
}

function describe(r: RunRemoveReply): string {
  const mb = r.bytes >= 1 << 20 ? `${(r.bytes / (1 << 20)).toFixed(1)} MiB` : `${(r.bytes / 1024).toFixed(1)} KiB`;
  const parts = [`${r.files} file${r.files === 1 ? '' : 's'}`, mb, ...(r.checkpoints ? [`${r.checkpoints} checkpoint file${r.checkpoints === 1 ? '' : 's'}`] : [])];
  return `removed ${r.dir} (${parts.join(', ')})${r.keptCheckpointDir ? `; kept its --checkpoint-dir ${r.keptCheckpointDir} (may hold other runs' files)` : ''}`;
}
