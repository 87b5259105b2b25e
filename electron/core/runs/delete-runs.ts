// Deleting runs from the local history: `cohort runs rm` and History's Delete (Api.deleteRuns) are
// this one function. Every run is checked before any is deleted; one that may still be running
// (as its hosts say) refuses the whole call. The hosts' own records (their workdir) stay unless
// asked (`cohort runs rm --hosts`: opts.hosts removes them first, host by host; a run whose host
// refused keeps its local record, and one whose host could not be reached keeps it unless
// opts.anyway or opts.confirm says to delete it anyway: `--yes`, History's "anyway").
import type { DeletedRun, RemoveRunsOptions, RunMeta } from '../../common';
import { ApiCallError } from '../../common';
import { isFinished } from '../../../trainer/protocol';
import { removeHostRecords, type HostRemoval, type RemoveHostDeps } from './remove-host-records';
import type { RunStore } from './run-store';

/** `hosts`: also the run's records on its hosts (remove-host-records.ts, with the deps), before its local record. */
export interface DeleteRunsOptions extends Partial<RemoveHostDeps>, RemoveRunsOptions {
  /** Hosts that kept the record (not reached, failed), `anyway` not set: delete the local record anyway? Absent: no. */
  confirm?: (meta: RunMeta, kept: HostRemoval[]) => Promise<boolean>;
}

/** What became of one run (the Api's type, electron/common/run-removal.ts). */
export type { DeletedRun };

/** Deletes `ids` (exact ids) from `store`; `current` gives a run as its hosts know it. */
export async function deleteRuns(store: RunStore, ids: readonly string[], current: (id: string) => Promise<RunMeta>, opts: DeleteRunsOptions = {}): Promise<DeletedRun[]> {
  for (const id of ids) if (!store.meta(id)) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${id}`, hint: 'refresh the history list' });
  const metas = await Promise.all([...new Set(ids)].map(current));
  const running = metas.filter((m) => !isFinished(m.status) && m.status !== 'lost');
  if (running.length)
    throw new ApiCallError({
      code: 'run-still-running',
      message: `run ${running.map((m) => `${m.id} (${m.status})`).join(', ')} may still be running`,
      hint: 'stop it first ("cohort stop RUN" or Stop in Live run), or refresh the history to ask its hosts',
    });
  const out: DeletedRun[] = [];
  for (const meta of metas) {
    if (!opts.hosts) {
      store.remove(meta.id);
      out.push({ meta, deleted: true });
      continue;
    }
    if (!opts.profiles || opts.dataDir === undefined) throw new Error('deleteRuns: hosts asked for without profiles and dataDir');
    const hosts = await removeHostRecords(meta, { profiles: opts.profiles, dataDir: opts.dataDir, ...(opts.cluster ? { cluster: opts.cluster } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
    const kept = hosts.filter((h) => h.outcome !== 'removed' && h.outcome !== 'absent');
    // A host that refused still runs something of it: never delete. One not reached: only if confirmed.
    const deleted = !kept.length || (!kept.some((h) => h.outcome === 'refused') && (!!opts.anyway || !!(await opts.confirm?.(meta, kept))));
    if (deleted) store.remove(meta.id);
    out.push({ meta, deleted, hosts });
  }
  return out;
}
