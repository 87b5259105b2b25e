// Test support (imported by gradients.test.ts and conv-gemm.test.ts only; never by the trainer):
// one convolution case — random input, filter and output gradient for a geometry — and its
// reference values from the stock tfjs conv2d and autodiff on whatever backend is active.
import * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from './conv-kernels';

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
