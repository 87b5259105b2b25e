// Run comparison (the seeds' "16% improvement" tables): the first selected run is the baseline,
// every other run's median throughput is shown relative to it. Only config fields that differ
// between the runs are listed, so the table says what changed.
import type { TrainConfig } from '../../../trainer/protocol';
import type { RunMeta } from '../../../electron/common';

export interface Comparison {
  baseline: RunMeta;
  rows: { run: RunMeta; throughput: number | null; speedupPct: number | null }[];
  /** Config keys (plus worldSize) whose values differ between the runs. */
  differing: string[];
}

const KEYS: (keyof TrainConfig)[] = ['engine', 'backend', 'batchSize', 'imageSize', 'stem', 'classes', 'steps', 'epochs', 'data', 'fp16', 'bf16', 'compile', 'optimizer', 'lr'];

export function compareRuns(runs: RunMeta[]): Comparison | null {
  const baseline = runs[0];
  if (!baseline || runs.length < 2) return null;
  const base = baseline.medianGlobalSamplesPerSec ?? null;
  const rows = runs.map((run) => {
    const t = run.medianGlobalSamplesPerSec ?? null;
    return { run, throughput: t, speedupPct: base && t !== null ? (t / base - 1) * 100 : null };
  });
  const differing: string[] = [];
  if (new Set(runs.map((r) => r.worldSize)).size > 1) differing.push('worldSize');
  for (const k of KEYS) if (new Set(runs.map((r) => JSON.stringify(r.config[k]))).size > 1) differing.push(k);
  return { baseline, rows, differing };
}

export function configValue(run: RunMeta, key: string): string {
  if (key === 'worldSize') return String(run.worldSize);
  const v = (run.config as unknown as Record<string, unknown>)[key];
  return v === undefined ? '—' : String(v);
}
