// Run history as CSV, the two ways people compare runs in a spreadsheet:
//  - runSummaryCsv: one row per run with its speedup over the first (the seeds' comparison
//    tables; the dashboard's "Export CSV");
//  - runStepsCsv: one row per `step` event of each run (curves; `cohort runs export`).
import type { CohortEvent } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';


const SUMMARY_COLUMNS = [
  'id', 'profile', 'startedAt', 'endedAt', 'status', 'engine', 'backend', 'batchSize', 'imageSize', 'stem', 'worldSize',
  'globalBatch', 'fp16', 'compile', 'data', 'steps', 'medianGlobalSamplesPerSec', 'speedupVsFirstPct',
  // what ran (RunMeta.applied), next to what was asked above
  'appliedEngine', 'appliedBackend', 'device', 'gpuFellBack', 'fp16Compute', 'fp16Transport', 'bf16Compute', 'compileApplied', 'envSwitches',
] as const;

export function runSummaryCsv(runs: RunMeta[]): string {
  const base = runs[0]?.medianGlobalSamplesPerSec ?? null;
  const rows = runs.map((m) => {
    const tput = m.medianGlobalSamplesPerSec ?? null;
    const speedup = base && tput !== null ? ((tput / base - 1) * 100).toFixed(1) : '';
    const c = m.config;
    return [
      m.id, m.profile, m.startedAt, m.endedAt ?? '', m.status, c.engine, c.backend, c.batchSize, c.imageSize, c.stem, m.worldSize,
      c.batchSize * m.worldSize, c.fp16, c.compile, c.data, m.steps ?? '', tput === null ? '' : tput.toFixed(2), speedup,
      ...appliedCells(m),
    ];
  });
  return [SUMMARY_COLUMNS.join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n') + '\n';
}

function appliedCells(m: RunMeta): unknown[] {
  const a = m.applied ?? {};
  const env = Object.entries(a.envSwitches ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
  return [a.engine ?? '', a.backend ?? '', a.devices?.join(' | ') ?? a.device ?? '', a.gpuFellBack ?? '', a.fp16Compute ?? '', a.fp16Transport ?? '', a.bf16Compute ?? '', a.compile ?? '', env];
}

function cell(v: unknown): string {
  const s = String(v);
  // Quote what would break the row, and neutralise spreadsheet formulas (CSV injection).
  const safe = /^[=+\-@]/.test(s) && !/^-?\d/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}


const STEP_COLUMNS = ['run', 'profile', 'engine', 'batchSize', 'imageSize', 'worldSize', 'compile', 'fp16', 'step', 'epoch', 'time', 'loss', 'globalSamplesPerSec', 'stepTimeMs', 'lr', 'maxRssBytes', 'maxGpuUsedBytes'];

export function runStepsCsv(runs: { meta: RunMeta; events: CohortEvent[] }[]): string {
  const rows = [STEP_COLUMNS.join(',')];
  for (const { meta, events } of runs) {
    for (const e of events) {
      if (e.type !== 'step') continue;
      const gpu = e.memory.map((m) => m.gpuUsedBytes ?? 0);
      rows.push(
        [
          meta.id,
          meta.profile,
          meta.config.engine,
          meta.config.batchSize,
          meta.config.imageSize,
          meta.worldSize,
          meta.config.compile,
          meta.config.fp16,
          e.step,
          e.epoch,
          new Date(e.time).toISOString(),
          e.loss ?? '',
          e.globalSamplesPerSec.toFixed(3),
          e.stepTimeMs.toFixed(1),
          e.lr,
          Math.max(...e.memory.map((m) => m.rssBytes)),
          gpu.some((g) => g > 0) ? Math.max(...gpu) : '',
        ]
          .map(cell)
          .join(','),
      );
    }
  }
  return rows.join('\n') + '\n';
}
