// Smoothing a chart's curve the way TensorBoard does (and W&B's "exponential moving average"):
// an EMA with weight w in [0, 1), debiased so the first points are not dragged towards 0. Each
// finite value updates the average; a gap (NaN/null) stays a gap and does not reset it.
// TensorBoard: tensorboard/webapp/widgets/line_chart_v2/lib/data_transformer_utils.ts (classicSmoothing).

/** The EMA of `ys` with weight `w` (0 = no smoothing; clamped to [0, 0.999]), debiased. */
export function emaSmooth(ys: ArrayLike<number | null>, w: number): (number | null)[] {
  const weight = Math.min(0.999, Math.max(0, Number.isFinite(w) ? w : 0));
  const out: (number | null)[] = new Array(ys.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || y === undefined || !Number.isFinite(y)) {
      out[i] = y === undefined ? null : y;
      continue;
    }
    last = last * weight + (1 - weight) * y;
    n++;
    const debias = weight === 0 ? 1 : 1 - weight ** n;
    out[i] = last / debias;
  }
  return out;
}

/** A short text summary of one series for assistive tech: last, min and max of the finite values. */
export function seriesSummary(ys: ArrayLike<number | null>, fmt: (v: number) => string = String): { last: string; min: string; max: string; count: number } | null {
  let last: number | null = null;
  let min = Infinity;
  let max = -Infinity;
  let count = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || y === undefined || !Number.isFinite(y)) continue;
    last = y;
    min = Math.min(min, y);
    max = Math.max(max, y);
    count++;
  }
  return last === null ? null : { last: fmt(last), min: fmt(min), max: fmt(max), count };
}
