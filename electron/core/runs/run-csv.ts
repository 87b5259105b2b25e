// CSV export of runs: one row per `step` event, with the run's id and configuration, so several
// runs compare in a spreadsheet. Used by `cohort runs export` and the dashboard's History.
import type { CohortEvent, RunMeta } from '../../../trainer/protocol';

const COLUMNS = ['run', 'profile', 'engine', 'batchSize', 'imageSize', 'worldSize', 'compile', 'fp16', 'step', 'epoch', 'time', 'loss', 'globalSamplesPerSec', 'stepTimeMs', 'lr', 'maxRssBytes', 'maxGpuUsedBytes'];

export function runsToCsv(runs: { meta: RunMeta; events: CohortEvent[] }[]): string {
  const rows = [COLUMNS.join(',')];
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

function csvCell(v: unknown): string {
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
