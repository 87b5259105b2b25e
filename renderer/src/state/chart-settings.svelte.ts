// The charts' display settings, shared by Live run and Compare and kept across reloads: the EMA
// smoothing weight (0 = raw; TensorBoard's slider) and which charts draw y on a log scale.
const KEY = 'cohort.charts';

export const chartSettings = $state({
  /** EMA weight in [0, 0.99] (renderer/src/lib/smoothing.ts). */
  smoothing: 0,
  /** Chart test ids with a log y axis. */
  logY: [] as string[],
});

try {
  const saved = JSON.parse(localStorage.getItem(KEY) ?? '{}') as { smoothing?: unknown; logY?: unknown };
  if (typeof saved.smoothing === 'number' && saved.smoothing >= 0 && saved.smoothing <= 0.99) chartSettings.smoothing = saved.smoothing;
  if (Array.isArray(saved.logY)) chartSettings.logY = saved.logY.filter((x): x is string => typeof x === 'string');
} catch {
  // no storage or a damaged entry: the defaults stand
}

function save(): void {
  try {
    localStorage.setItem(KEY, JSON.stringify(chartSettings));
  } catch {
    // not remembered; the charts still follow
  }
}

export function setSmoothing(w: number): void {
  chartSettings.smoothing = Math.min(0.99, Math.max(0, Number.isFinite(w) ? w : 0));
  save();
}

export function setLogY(chart: string, on: boolean): void {
  chartSettings.logY = on ? [...new Set([...chartSettings.logY, chart])] : chartSettings.logY.filter((c) => c !== chart);
  save();
}
