// Run history as CSV (the dashboard's "Export CSV"): one row per run, in the order given, with
// each run's speedup over the first one, as in the seeds' comparison tables.
import type { RunMeta } from '../../../trainer/protocol';

const COLUMNS = [
  'id', 'profile', 'startedAt', 'endedAt', 'status', 'engine', 'backend', 'batchSize', 'imageSize', 'stem', 'worldSize',
  'globalBatch', 'fp16', 'compile', 'data', 'steps', 'medianGlobalSamplesPerSec', 'speedupVsFirstPct',
] as const;

export function runsToCsv(runs: RunMeta[]): string {
  const base = runs[0]?.medianGlobalSamplesPerSec ?? null;
  const rows = runs.map((m) => {
    const tput = m.medianGlobalSamplesPerSec ?? null;
    const speedup = base && tput !== null ? ((tput / base - 1) * 100).toFixed(1) : '';
    const c = m.config;
    return [
      m.id, m.profile, m.startedAt, m.endedAt ?? '', m.status, c.engine, c.backend, c.batchSize, c.imageSize, c.stem, m.worldSize,
      c.batchSize * m.worldSize, c.fp16, c.compile, c.data, m.steps ?? '', tput === null ? '' : tput.toFixed(2), speedup,
    ];
  });
  return [COLUMNS.join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n') + '\n';
}

function cell(v: string | number | boolean): string {
  const s = String(v);
  // Quote what would break the row, and neutralise spreadsheet formulas (CSV injection).
  const safe = /^[=+\-@]/.test(s) && !/^-?\d/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
