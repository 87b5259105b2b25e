// Run history: the list from core, the runs selected for comparison (in selection order), the
// chosen baseline, and the compared runs' curves (fetched once per run).
import type { RunExportFormat, RunMeta, RunSeries } from '../../../electron/common';
import { isFinished } from '../../../trainer/protocol';
import { attempt, getApi } from './app.svelte';

export const history = $state({
  runs: [] as RunMeta[],
  selected: [] as string[],
  comparing: false,
  /** The run the others are measured against ('' = the first selected). */
  baseline: '',
  series: {} as Record<string, RunSeries>,
});

export async function reloadHistory(): Promise<void> {
  const runs = await attempt(() => getApi().listRuns());
  if (runs) {
    history.runs = runs;
    history.selected = history.selected.filter((id) => runs.some((r) => r.id === id));
    // A run still going grows: its curves are fetched again when compared.
    for (const r of runs) if (!isFinished(r.status)) delete history.series[r.id];
  }
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
