// Run history: the list from core and the runs selected for comparison (in selection order).
import type { RunMeta } from '../../../electron/common';
import { attempt, getApi } from './app.svelte';

export const history = $state({ runs: [] as RunMeta[], selected: [] as string[], comparing: false });

export async function reloadHistory(): Promise<void> {
  const runs = await attempt(() => getApi().listRuns());
  if (runs) {
    history.runs = runs;
    history.selected = history.selected.filter((id) => runs.some((r) => r.id === id));
  }
}

export function toggleSelected(id: string): void {
  history.selected = history.selected.includes(id) ? history.selected.filter((x) => x !== id) : [...history.selected, id];
  if (history.selected.length < 2) history.comparing = false;
}
