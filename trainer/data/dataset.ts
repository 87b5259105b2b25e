// A dataset is indexable samples of NHWC float32 images with integer labels. Batches are
// assembled by index so the distributed sampler decides which rank reads what.

export interface Dataset {
  readonly name: string;
  readonly size: number;
  readonly imageSize: number;
  readonly classes: number;
  /** Writes sample `index` (H×W×3 floats) into `out` at `offset` and returns its label. */
  read(index: number, out: Float32Array, offset: number, opts: { augment: boolean; epoch: number }): number;
}

export interface Batch {
  images: Float32Array;
  labels: Int32Array;
  batch: number;
}

export function allocBatch(batch: number, imageSize: number): Batch {
  return { images: new Float32Array(batch * imageSize * imageSize * 3), labels: new Int32Array(batch), batch };
}

/** Fills `into` with the samples at `indices` (its batch size must match). */
export function fillBatch(ds: Dataset, indices: ArrayLike<number>, into: Batch, opts: { augment: boolean; epoch: number }): Batch {
  const per = ds.imageSize * ds.imageSize * 3;
  for (let i = 0; i < indices.length; i++) into.labels[i] = ds.read(indices[i]!, into.images, i * per, opts);
  return into;
}
