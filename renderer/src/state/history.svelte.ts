// Run history: the list from core, the runs selected for comparison (in selection order), the
// chosen baseline, and the compared runs' curves (fetched once per run).
import { DEFAULT_SORT, EMPTY_QUERY, queryFromString, queryToString, type DeletedRun, type RemoveRunsOptions, type RunExportFormat, type RunMeta, type RunQuery, type RunSeries, type RunSort } from '../../../electron/common';
import { isFinished } from '../../../trainer/protocol';
import { attempt, getApi } from './app.svelte';

export const history = $state({
  runs: [] as RunMeta[],
  selected: [] as string[],
  comparing: false,
  /** The run the others are measured against ('' = the first selected). */
  baseline: '',
  series: {} as Record<string, RunSeries>,
  /** Search, filters and sort (electron/common/run-filter.ts), kept across reloads in localStorage. */
  query: { ...EMPTY_QUERY } as RunQuery,
  sort: { ...DEFAULT_SORT } as RunSort,
});

const QUERY_KEY = 'cohort.history.query';
try {
  const saved = queryFromString(localStorage.getItem(QUERY_KEY) ?? '');
  history.query = saved.query;
  history.sort = saved.sort;
} catch {
  // no storage (a sandboxed page): the defaults stand
}

/** Changes the search/filters/sort and remembers them. */
export function setQuery(query: Partial<RunQuery>, sort?: RunSort): void {
  history.query = { ...history.query, ...query };
  if (sort) history.sort = sort;
  try {
    localStorage.setItem(QUERY_KEY, queryToString(history.query, history.sort));
  } catch {
    // not remembered; the view still filters
  }
}

/**
 * Deletes runs (the one core function `cohort runs rm` uses): from the local history, and with
 * `hosts` their records on the hosts first (`--hosts`; `anyway`: `--yes`). Returns what became of
 * each run and each host; throws what core refused (a run that may still be running), for the
 * dialog that asked to show.
 */
export async function removeRuns(ids: string[], opts: RemoveRunsOptions): Promise<DeletedRun[]> {
  const done = await getApi().removeRuns(ids, opts);
  const deleted = done.filter((d) => d.deleted).map((d) => d.meta.id);
  history.selected = history.selected.filter((id) => !deleted.includes(id));
  if (history.selected.length < 2) history.comparing = false;
  await reloadHistory();
  return done;
}

export async function reloadHistory(): Promise<void> {
  const runs = await attempt(() => getApi().listRuns());
  if (runs) takeRuns(runs);
}

/** A fresh run list (History's Refresh, or Live's poll for other clients' runs): one list for every view. */
export function takeRuns(runs: RunMeta[]): void {
  // The list comes every 3 s (Live's poll). A run that did not change keeps its object, and an
  // unchanged list is not assigned at all: otherwise every poll re-derived Compare's buffers and
  // rebuilt its charts (a hover or a pointer on the plot lost every 3 s; seen in CI).
  const before = new Map(history.runs.map((r) => [r.id, r]));
  const kept = runs.map((r) => {
    const old = before.get(r.id);
    return old && JSON.stringify(old) === JSON.stringify(r) ? old : r;
  });
  if (kept.length !== history.runs.length || kept.some((r, i) => r !== history.runs[i])) history.runs = kept;
  const selected = history.selected.filter((id) => runs.some((r) => r.id === id));
  if (selected.length !== history.selected.length) history.selected = selected;
  // A run still going grows: its curves are fetched again when compared.
  for (const r of runs) if (!isFinished(r.status)) delete history.series[r.id];
}

export function toggleSelected(id: string): void {
  history.selected = history.selected.includes(id) ? history.selected.filter((x) => x !== id) : [...history.selected, id];
  if (!history.selected.includes(history.baseline)) history.baseline = '';
  if (history.selected.length < 2) history.comparing = false;
  else if (history.comparing) void loadSeries(history.selected);
}

export async function startCompare(): Promise<void> {
  history.comparing = true;
  await loadSeries(history.selected);
}

async function loadSeries(ids: string[]): Promise<void> {
  const missing = ids.filter((id) => !history.series[id]);
  if (!missing.length) return;
  const got = await attempt(() => getApi().getRunSeries(missing));
  if (got) history.series = { ...history.series, ...Object.fromEntries(got.map((s) => [s.runId, s])) };
}

/** Names a run ('' clears); true when core stored it. */
export async function renameRun(id: string, name: string): Promise<boolean> {
  const m = await attempt(() => getApi().renameRun(id, name));
  if (!m) return false;
  history.runs = history.runs.map((r) => (r.id === id ? m : r));
  return true;
}

/** The runs as CSV or JSON, downloaded: the selection (else every run), speedups against the chosen baseline. */
export async function exportRuns(format: RunExportFormat): Promise<void> {
  const ids = history.selected.length ? history.selected : history.runs.map((r) => r.id);
  const baseline = history.baseline && ids.includes(history.baseline) ? history.baseline : undefined;
  const text = await attempt(() => getApi().exportRuns(ids, format, baseline));
  if (text === undefined) return;
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: format === 'csv' ? 'text/csv' : 'application/json' }));
  a.download = `cohort-runs-${new Date().toISOString().slice(0, 10)}.${format}`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
