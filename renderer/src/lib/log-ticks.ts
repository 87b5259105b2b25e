// The ticks of a log y axis (Live run's and Compare's "log y"). uPlot's own log splits are every
// 1..9 × 10^k and it leaves unlabelled those too close to the next: a loss between 1.1 and 7 (less
// than a decade) came out with one label, the bottom one, over a ladder of bare grid lines. Here:
// round values in the usual 1-2-5 sequence, denser sets only while fewer than 3 fit, and where even
// those give fewer than 2 (a range narrower than 1 → 1.5) the linear nice ticks of that range.

const MANTISSAS = [[1], [1, 2, 5], [1, 2, 3, 5], [1, 1.5, 2, 3, 5, 7]];

/** Ticks for a log axis over [min, max] (both > 0); `linear` gives the nice linear ticks of a range. */
export function logSplits(min: number, max: number, linear: (min: number, max: number) => number[]): number[] {
  if (!(min > 0) || !(max > min) || !Number.isFinite(max)) return linear(min, max);
  let best: number[] = [];
  for (const set of MANTISSAS) {
    best = [];
    for (let k = Math.floor(Math.log10(min)); k <= Math.ceil(Math.log10(max)); k++) {
      for (const m of set) {
        const v = +(m * 10 ** k).toPrecision(12);
        if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) best.push(v);
      }
    }
    if (best.length >= 3) break;
  }
  if (best.length >= 2) return thin(best);
  return linear(min, max).filter((v) => v > 0);
}

/** At most 8 ticks (a chart is ~120 px tall): every second one of many decades. */
function thin(ticks: number[]): number[] {
  if (ticks.length <= 8) return ticks;
  const step = Math.ceil(ticks.length / 8);
  return ticks.filter((_, i) => i % step === 0);
}
