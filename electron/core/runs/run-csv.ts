// Run history as CSV and JSON, the ways people compare runs in a spreadsheet or a script:
//  - runSummaryCsv / runSummaryJson: one row (object) per run with its speedup over an explicitly
//    chosen baseline (the seeds' comparison tables; the dashboard's Export, `runs export --format
//    summary|json`). Cancelled and failed runs are rows too, with what they measured;
//  - runStepsCsv: one row per `step` event of each run (curves; `cohort runs export`).
import type { CohortEvent } from '../../../trainer/protocol';
import { runDurationMs, runErrorText, runMedian, type RunMeta, type RunSeries } from '../../common';


const SUMMARY_COLUMNS = [
  'id', 'name', 'profile', 'startedAt', 'endedAt', 'durationSec', 'status', 'error', 'engine', 'backend', 'batchSize', 'imageSize', 'stem', 'worldSize',
  'globalBatch', 'fp16', 'compile', 'data', 'steps', 'medianGlobalSamplesPerSec', 'baseline', 'speedupVsBaselinePct',
  // the spread over the run's windows (noise next to the speedup)
  'windows', 'minSamplesPerSec', 'q1SamplesPerSec', 'q3SamplesPerSec', 'maxSamplesPerSec',
  // what ran (RunMeta.applied), next to what was asked above
  'appliedEngine', 'appliedBackend', 'device', 'gpuFellBack', 'fp16Compute', 'fp16Transport', 'bf16Compute', 'compileApplied', 'envSwitches',
  // --width (ResNet-50's channel multiplier; 1 = as published) and --depth (50 = as published): last, so the columns before keep their places
  'width', 'depth',
] as const;

/** The baseline run (by id; default the first) and each run's speedup over it, in percent (null when either has no throughput). */
export function speedups(runs: RunMeta[], baselineId?: string): { baseline: RunMeta | undefined; pct: (number | null)[] } {
  const baseline = baselineId === undefined ? runs[0] : runs.find((r) => r.id === baselineId);
  if (baselineId !== undefined && !baseline) throw new Error(`the baseline ${baselineId} is not among the exported runs`);
  const base = baseline ? runMedian(baseline) : null;
  return { baseline, pct: runs.map((m) => { const t = runMedian(m); return base && t !== null ? (t / base - 1) * 100 : null; }) };
}

export function runSummaryCsv(runs: RunMeta[], baselineId?: string): string {
  const { baseline, pct } = speedups(runs, baselineId);
  const fixed = (v: number | null | undefined, d = 2) => (v === null || v === undefined ? '' : v.toFixed(d));
  const rows = runs.map((m, i) => {
    const c = m.config;
    const t = m.throughput;
    const dur = runDurationMs(m);
    return [
      m.id, m.name ?? '', m.profile, m.startedAt, m.endedAt ?? '', dur === null ? '' : (dur / 1000).toFixed(1), m.status, m.error ? runErrorText(m.error) : '', c.engine, c.backend, c.batchSize, c.imageSize, c.stem, m.worldSize,
      c.batchSize * m.worldSize, c.fp16, c.compile, c.data, m.steps ?? '', fixed(runMedian(m)), baseline?.id ?? '', fixed(pct[i], 1),
      t?.windows ?? '', fixed(t?.min), fixed(t?.q1), fixed(t?.q3), fixed(t?.max),
      ...appliedCells(m),
      c.width, c.depth,
    ];
  });
  return [SUMMARY_COLUMNS.join(','), ...rows.map((r) => r.map(csvCell).join(','))].join('\n') + '\n';
}

/**
 * The same runs as JSON: each run's record without its profile snapshot (whose hosts' env may hold
 * secrets) and host record locations, plus duration, speedup over the baseline and, when
 * `seriesOf` gives them, its curves (`series`: the windows' step, time, samples/s, loss and step
 * time columns, as Compare draws them; null for a run that measured nothing).
 */
export function runSummaryJson(runs: RunMeta[], baselineId?: string, seriesOf?: (id: string) => RunSeries | undefined): string {
  const { baseline, pct } = speedups(runs, baselineId);
  const out = runs.map((m, i) => {
    const { profileSnapshot: _p, record: _r, controllerPid: _c, ...rest } = m;
    const dur = runDurationMs(m);
    const row = { ...rest, medianGlobalSamplesPerSec: runMedian(m), durationSec: dur === null ? null : dur / 1000, speedupVsBaselinePct: pct[i] == null ? null : Math.round(pct[i]! * 100) / 100 };
    if (!seriesOf) return row;
    const s = seriesOf(m.id);
    return { ...row, series: s?.windows ? { windows: s.windows, stride: s.stride, step: s.step, time: s.time, samplesPerSec: s.samplesPerSec, loss: s.loss, stepTimeMs: s.stepTimeMs } : null };
  });
  return JSON.stringify({ baseline: baseline?.id ?? null, runs: out }, null, 2) + '\n';
}

function appliedCells(m: RunMeta): unknown[] {
  const a = m.applied ?? {};
  const env = Object.entries(a.envSwitches ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
  return [a.engine ?? '', a.backend ?? '', a.devices?.join(' | ') ?? a.device ?? '', a.gpuFellBack ?? '', a.fp16Compute ?? '', a.fp16Transport ?? '', a.bf16Compute ?? '', a.compile ?? '', env];
}

/** A whole cell that is a plain number (`-7.1`, `+3`, `1e-5`): the only cells starting with `-` or `+` left as they are. */
const NUMBER_CELL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * One CSV cell: quoted when it would break the row, and neutralised against formula injection by
 * OWASP's rule: a cell starting with `=`, `+`, `-`, `@`, a tab or a CR gets a leading `'` unless the
 * whole cell is a number (`-2+3+HYPERLINK(...)` starts like a negative number and is a formula).
 */
export function csvCell(v: unknown): string {
  const s = String(v);
  const safe = /^[=+\-@\t\r]/.test(s) && !NUMBER_CELL.test(s) ? `'${s}` : s;
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
          .map(csvCell)
          .join(','),
      );
    }
  }
  return rows.join('\n') + '\n';
}
