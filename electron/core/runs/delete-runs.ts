// Deleting runs from the local history: `cohort runs rm` and History's Delete (Api.deleteRuns) are
// this one function. Every run is checked before any is deleted; one that may still be running
// (as its hosts say) refuses the whole call. The hosts' own records (their workdir) stay.
import type { RunMeta } from '../../common';
import { ApiCallError } from '../../common';
import { isFinished } from '../../../trainer/protocol';
import type { RunStore } from './run-store';

/** Deletes `ids` (exact ids) from `store`; `current` gives a run as its hosts know it. Returns the metas deleted. */
export async function deleteRuns(store: RunStore, ids: readonly string[], current: (id: string) => Promise<RunMeta>): Promise<RunMeta[]> {
  for (const id of ids) if (!store.meta(id)) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${id}`, hint: 'refresh the history list' });
  const metas = await Promise.all([...new Set(ids)].map(current));
  const running = metas.filter((m) => !isFinished(m.status) && m.status !== 'lost');
  if (running.length)
    throw new ApiCallError({
      code: 'run-still-running',
      message: `run ${running.map((m) => `${m.id} (${m.status})`).join(', ')} may still be running`,
      hint: 'stop it first ("cohort stop RUN" or Stop in Live run), or refresh the history to ask its hosts',
    });
  for (const m of metas) store.remove(m.id);
  return metas;
}
