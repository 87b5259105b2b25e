// Max-pool (the imagenet stem's 3×3/2 pad 1) backward. Hand-written because the stock wasm
// MaxPoolGrad kernel is wrong for this pooling on even input sides (checked against the cpu
// backend's stock gradient in gradients.test.ts): it routes gradients as if padded 'same'
// (0 top, 1 bottom) while the forward pads 1 on each side.
import * as tf from '@tensorflow/tfjs-core';
import { scatterTaps } from '../conv/conv-kernels';
import { MAX_POOL, MAX_POOL_BACKWARD, hasFusedKernels } from '../kernels/fused-kernels';
import type { PoolSpec } from './resnet50-spec';

export interface PoolOut {
  y: tf.Tensor4D;
  /** Where each output's maximum came from (flat index into x), when the fused kernel ran. */
  argmax: tf.Tensor4D | null;
}

export function maxPoolForward(x: tf.Tensor4D, p: PoolSpec): PoolOut {
  if (!hasFusedKernels()) return { y: tf.maxPool(x, p.k, p.stride, p.pad), argmax: null };
  const attrs = { k: p.k, stride: p.stride, pad: p.pad, outSize: p.outSize } as unknown as tf.NamedAttrMap;
  const [y, argmax] = tf.engine().runKernel(MAX_POOL, { x }, attrs) as tf.Tensor4D[];
  return { y: y!, argmax: argmax! };
}

/**
 * dx: each window's gradient goes to its first maximum in row-major order (as torch and the cpu
 * backend do). Taps are visited in that order; `taken` masks windows already routed.
 */
export function maxPoolBackward(x: tf.Tensor4D, out: PoolOut, dy: tf.Tensor4D, p: PoolSpec): tf.Tensor4D {
  if (out.argmax) return tf.engine().runKernel(MAX_POOL_BACKWARD, { dy, argmax: out.argmax }, { inShape: x.shape } as unknown as tf.NamedAttrMap) as tf.Tensor4D;
  const y = out.y;
  const [n, , , c] = x.shape;
  const xp = p.pad === 0 ? x : tf.pad(x, [[0, 0], [p.pad, p.pad], [p.pad, p.pad], [0, 0]], -Infinity);
  const span = (p.outSize - 1) * p.stride + 1;
  let taken: tf.Tensor4D | null = null;
  const pieces: tf.Tensor4D[] = [];
  for (let ky = 0; ky < p.k; ky++) {
    for (let kx = 0; kx < p.k; kx++) {
      const patch = tf.stridedSlice(xp, [0, ky, kx, 0], [n, ky + span, kx + span, c], [1, p.stride, p.stride, 1]) as tf.Tensor4D;
      let hit = tf.cast(tf.equal(patch, y), 'float32') as tf.Tensor4D;
      if (taken) hit = tf.mul(hit, tf.sub(1, taken)) as tf.Tensor4D;
      taken = taken ? (tf.add(taken, hit) as tf.Tensor4D) : hit;
      pieces.push(tf.mul(dy, hit) as tf.Tensor4D);
    }
  }
  return scatterTaps((t) => pieces[t] as tf.Tensor4D, { inSize: p.inSize, outSize: p.outSize, k: p.k, stride: p.stride, pad: p.pad }, n, c);
}
