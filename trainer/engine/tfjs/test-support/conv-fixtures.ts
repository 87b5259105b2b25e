// Test support (imported by the kernel tests only; never by the trainer): seeded uniform data, the
// relative error every gradient check uses, and one convolution case — random input, filter and
// output gradient for a geometry — with its reference values from the stock tfjs conv2d and
// autodiff on whatever backend is active.
import * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from '../conv/conv-geometry';
import { streamRng } from '../../../data/rng';

/** The conv implementations that exist only on the wasm backend (conv-kernels.ts `candidates` offers them once one is made). */
export const WASM_CONV_KERNELS = ['gemm', 'winograd', 'winograd4', 'taps'] as const;

/** n values uniform in [offset − scale, offset + scale), a pure function of (seed, stream). */
export function uniform(seed: number, n: number, stream: string, scale = 1, offset = 0): Float32Array {
  const u = streamRng(seed, stream);
  return Float32Array.from({ length: n }, () => (u() * 2 - 1) * scale + offset);
}

/** max |a − b| / max |b| (Infinity when the sizes differ). */
export function relErr(a: tf.Tensor | Float32Array, b: tf.Tensor | Float32Array): number {
  const x = a instanceof Float32Array ? a : (a.dataSync() as Float32Array);
  const y = b instanceof Float32Array ? b : (b.dataSync() as Float32Array);
  if (x.length !== y.length) return Infinity;
  let num = 0;
  let den = 0;
  for (let i = 0; i < x.length; i++) {
    num = Math.max(num, Math.abs(x[i]! - y[i]!));
    den = Math.max(den, Math.abs(y[i]!));
  }
  return num / (den || 1);
}

type Shape4 = [number, number, number, number];
type Pad4 = [[number, number], [number, number], [number, number], [number, number]];

export interface ConvCase {
  x(): tf.Tensor4D;
  w(): tf.Tensor4D;
  dy(): tf.Tensor4D;
  /** [y, dx, dw] by tf.conv2d and tf.grads on the active backend, copied out. */
  reference(): Float32Array[];
}

export function convCase(g: ConvGeometry, n: number, rand: (count: number, seed: string) => Float32Array): ConvCase {
  const xs = rand(n * g.inSize * g.inSize * g.cin, 'x');
  const ws = rand(g.k * g.k * g.cin * g.cout, 'w');
  const dys = rand(n * g.outSize * g.outSize * g.cout, 'dy');
  const xShape: Shape4 = [n, g.inSize, g.inSize, g.cin];
  const wShape: Shape4 = [g.k, g.k, g.cin, g.cout];
  const dyShape: Shape4 = [n, g.outSize, g.outSize, g.cout];
  const pad = g.pad === 0 ? ('valid' as const) : ([[0, 0], [g.pad, g.pad], [g.pad, g.pad], [0, 0]] as Pad4);
  const c: ConvCase = {
    x: () => tf.tensor4d(xs, xShape),
    w: () => tf.tensor4d(ws, wShape),
    dy: () => tf.tensor4d(dys, dyShape),
    reference: () =>
      tf.tidy(() => {
        const dy = c.dy();
        const conv = (a: tf.Tensor, b: tf.Tensor): tf.Tensor4D => tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, g.stride, pad);
        const y = conv(c.x(), c.w());
        const [dx, dw] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(conv(a, b), dy)))([c.x(), c.w()]);
        return [y, dx!, dw!].map((t) => Float32Array.from(t.dataSync()));
      }),
  };
  return c;
}
