// Columnar metric storage for uPlot (STYLE.md §11): one shared x column and one Float64Array per
// series, grown by doubling, no per-point objects. `columns()` hands uPlot zero-copy subarray
// views; `version` lets a chart skip redraws when nothing changed.
export class SeriesBuffer {
  private cap: number;
  private cols: Float64Array[];
  length = 0;
  version = 0;

  constructor(
    readonly seriesCount: number,
    initialCapacity = 1024,
    /** Oldest points are dropped beyond this many (bounded memory for endless streams). */
    readonly maxPoints = 2_000_000,
  ) {
    this.cap = initialCapacity;
    this.cols = Array.from({ length: seriesCount + 1 }, () => new Float64Array(initialCapacity));
  }

  /** Appends one point: x and one value per series (NaN = gap). */
  push(x: number, ...ys: number[]): void {
    if (this.length === this.cap) this.grow();
    const i = this.length++;
    this.cols[0]![i] = x;
    for (let s = 0; s < this.seriesCount; s++) this.cols[s + 1]![i] = ys[s] ?? NaN;
    this.version++;
  }

  /** Appends many points from columns (x, then each series) at once. */
  pushColumns(xs: ArrayLike<number>, ys: ArrayLike<number>[]): void {
    for (let i = 0; i < xs.length; i++) {
      if (this.length === this.cap) this.grow();
      const j = this.length++;
      this.cols[0]![j] = xs[i]!;
      for (let s = 0; s < this.seriesCount; s++) this.cols[s + 1]![j] = ys[s]?.[i] ?? NaN;
    }
    this.version++;
  }

  /** The live columns as views (valid until the next push that grows the buffer). */
  columns(): Float64Array[] {
    return this.cols.map((c) => c.subarray(0, this.length));
  }

  last(series: number): number {
    return this.length ? this.cols[series + 1]![this.length - 1]! : NaN;
  }

  /** Drops the newest points whose x is above `x` (a run restarted from step x redoes the steps after it). */
  dropAfter(x: number): void {
    let n = this.length;
    while (n > 0 && this.cols[0]![n - 1]! > x) n--;
    if (n === this.length) return;
    this.length = n;
    this.version++;
  }

  clear(): void {
    this.length = 0;
    this.version++;
  }

  /** Bytes held by the columns (capacity, not length). */
  get bytes(): number {
    return this.cap * 8 * this.cols.length;
  }

  private grow(): void {
    if (this.cap >= this.maxPoints) {
      // Drop the oldest half in place rather than growing without bound.
      const keep = this.cap >> 1;
      for (const c of this.cols) c.copyWithin(0, this.length - keep, this.length);
      this.length = keep;
      return;
    }
    this.cap = Math.min(this.cap * 2, this.maxPoints);
    this.cols = this.cols.map((c) => {
      const n = new Float64Array(this.cap);
      n.set(c);
      return n;
    });
  }
}
