// One fused gradient buffer (Horovod's fusion buffer): every parameter's gradient gets a fixed
// slice of a single Float32Array, so a step does one allreduce instead of one per tensor.
// Allocated once per model; `views` let the engine write gradients in place.
export class FusionBuffer {
  readonly buffer: Float32Array;
  readonly views: Float32Array[];
  readonly offsets: number[];

  constructor(sizes: readonly number[]) {
    let total = 0;
    this.offsets = sizes.map((n) => {
      if (!Number.isInteger(n) || n < 0) throw new RangeError(`FusionBuffer: size ${n} is not a non-negative integer`);
      const at = total;
      total += n;
      return at;
    });
    this.buffer = new Float32Array(total);
    this.views = sizes.map((n, i) => this.buffer.subarray(this.offsets[i]!, this.offsets[i]! + n));
  }

  /** Copy each source into its slice (lengths must match the sizes given at construction). */
  pack(sources: readonly ArrayLike<number>[]): Float32Array {
    this.check(sources.length);
    sources.forEach((src, i) => {
      if (src.length !== this.views[i]!.length) throw new RangeError(`FusionBuffer.pack: entry ${i} has ${src.length} values, expected ${this.views[i]!.length}`);
      this.views[i]!.set(src);
    });
    return this.buffer;
  }

  /** Copy each slice back out into its destination. */
  unpack(targets: readonly Float32Array[]): void {
    this.check(targets.length);
    targets.forEach((t, i) => t.set(this.views[i]!));
  }

  private check(count: number): void {
    if (count !== this.views.length) throw new RangeError(`FusionBuffer: got ${count} entries, built for ${this.views.length}`);
  }
}
