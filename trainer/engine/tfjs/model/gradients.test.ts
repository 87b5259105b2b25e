// Every gradient the engine supplies, checked against the cpu backend's stock tfjs gradient
// (autodiff through tfjs-core's registered gradient functions) on random inputs, for each conv
// geometry ResNet-50 uses and for batch norm, the loss and max-pool. Relative error = max |a−b| / max |b|.
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend';
import { bnBackward, bnForwardStats, bnTrainRelu, reluGradAdd } from './batch-norm';
import { setFusedKernelsEnabled } from '../kernels/fused-kernels';
import { candidates, convBackpropFilter, convBackpropInput, convForward } from '../conv/conv-kernels';
import { convGeometry, type ConvGeometry } from '../conv/conv-geometry';
import { WASM_CONV_KERNELS, convCase, relErr, uniform } from '../test-support/conv-fixtures';
import { softmaxCrossEntropy } from './loss';
import { maxPoolBackward, maxPoolForward } from './max-pool';
import { registerStockGradients } from '../test-support/stock-gradients';

const TOL = 1e-4;
const rand = (n: number, stream: string, scale = 1, offset = 0): Float32Array => uniform(5, n, stream, scale, offset);
const BACKENDS = ['wasm', 'cpu'] as const;
/** Each backend with the fused kernels (fused-kernels.ts) and with the stock-op formulation. */
const PATHS = BACKENDS.flatMap((b) => [[b, 'fused'], [b, 'stock']] as const);



async function on<T>(backend: string, f: () => T): Promise<T> {
  await tf.setBackend(backend);
  tf.engine().startScope();
  try {
    return f();
  } finally {
    tf.engine().endScope();
  }
}

/** Reference values computed on cpu with stock autodiff, copied out as plain arrays. */
async function reference(f: () => tf.Tensor[]): Promise<Float32Array[]> {
  return on('cpu', () => f().map((t) => Float32Array.from(t.dataSync())));
}

/**
 * The implementations this file checks on both backends: every candidate but the wasm kernels
 * (gemm, Winograd, taps), which conv-wasm.test.ts checks against the same references, with FMA on
 * and off. Picked when the tests are collected, before beforeAll makes the wasm backend: candidates()
 * offers the wasm kernels only once one exists, so without this filter the cases here depended on
 * whether the file before it in the same fast-tier worker (isolate: false) had made one — 182 tests
 * in one run, 214 in the next.
 */
function stockCandidates(g: ConvGeometry): ReturnType<typeof candidates> {
  const c = candidates(g);
  const stock = <T extends string>(impls: T[]): T[] => impls.filter((i) => !(WASM_CONV_KERNELS as readonly string[]).includes(i));
  return { fwd: stock(c.fwd), dx: stock(c.dx), dw: stock(c.dw) };
}

const GEOMETRIES: [string, ConvGeometry][] = [
  ['1×1 s1 (bottleneck conv1/conv3)', convGeometry(5, 6, 4, 1, 1, 0)],
  ['1×1 s2 downsample, even input', convGeometry(6, 6, 8, 1, 2, 0)],
  ['1×1 s2 downsample, odd input', convGeometry(5, 6, 8, 1, 2, 0)],
  ['3×3 s1 pad 1', convGeometry(5, 4, 6, 3, 1, 1)],
  ['3×3 s2 pad 1, even input', convGeometry(6, 4, 6, 3, 2, 1)],
  ['3×3 s2 pad 1, odd input', convGeometry(5, 4, 6, 3, 2, 1)],
  ['3×3 s2 pad 1, 2×2 → 1×1 (layer4.0 at 32²)', convGeometry(2, 8, 8, 3, 2, 1)],
  ['3×3 s1 pad 1 on 1×1 (centre tap only)', convGeometry(1, 8, 8, 3, 1, 1)],
  ['7×7 s2 pad 3 stem, even input', convGeometry(12, 3, 8, 7, 2, 3)],
  ['7×7 s2 pad 3 stem, odd input', convGeometry(11, 3, 8, 7, 2, 3)],
  ['3×3 s1 pad 1 cifar stem', convGeometry(8, 3, 8, 3, 1, 1)],
];

describe('tfjs engine gradients vs the cpu backend\'s stock gradients', () => {
  beforeAll(async () => {
    await registerStockGradients();
    await initBackend('wasm');
  });

  describe.each(GEOMETRIES)('conv %s', (_name, g) => {
    const cc = convCase(g, 2, rand);
    let ref: Float32Array[] = [];
    beforeAll(async () => {
      ref = await on('cpu', () => cc.reference());
    });
    const c = stockCandidates(g);
    it.each(BACKENDS.flatMap((b) => c.fwd.map((impl) => [b, impl] as const)))('forward on %s via %s', async (backend, impl) => {
      const e = await on(backend, () => relErr(convForward(cc.x(), cc.w(), g, impl), ref[0]!));
      expect(e).toBeLessThan(TOL);
    });
    it.each(BACKENDS.flatMap((b) => c.dx.map((impl) => [b, impl] as const)))('input gradient on %s via %s', async (backend, impl) => {
      const e = await on(backend, () => relErr(convBackpropInput(cc.dy(), cc.w(), g, impl), ref[1]!));
      expect(e).toBeLessThan(TOL);
    });
    it.each(BACKENDS.flatMap((b) => c.dw.map((impl) => [b, impl] as const)))('filter gradient on %s via %s', async (backend, impl) => {
      const e = await on(backend, () => relErr(convBackpropFilter(cc.x(), cc.dy(), g, impl), ref[2]!));
      expect(e).toBeLessThan(TOL);
    });
  });

  // 5 channels: the fused kernels' plain loops; 12: their wasm SIMD loops (C a multiple of 4).
  describe.each([5, 12])('batch norm, %i channels', (C) => {
    const shape: [number, number, number, number] = [3, 4, 4, C];
    const size = 3 * 4 * 4 * C;
    // Offset and scaled inputs: the backward must not lose precision to a large mean.
    const xs = rand(size, 'bn-x', 2, 3);
    const dys = rand(size, 'bn-dy');
    const gs = rand(C, 'bn-g', 0.5, 1);
    const bs = rand(C, 'bn-b');
    const rm = rand(C, 'bn-rm', 1, 3);
    const rv = rand(C, 'bn-rv', 0.5, 2);

    it.each(PATHS.flatMap(([b, p]) => [[b, p, false], [b, p, true]] as const))('training (batch statistics) on %s, %s kernels, ReLU %s: y, dx, dgamma, dbeta', async (backend, path, relu) => {
      const ref = await reference(() => {
        const x = tf.tensor4d(xs, shape);
        const dy = tf.tensor4d(dys, shape);
        const f = (a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor): tf.Tensor => {
          const { mean, variance } = tf.moments(a, [0, 1, 2]);
          const y = tf.batchNorm(a, mean, variance, bt as tf.Tensor1D, gm as tf.Tensor1D, 1e-5);
          return relu ? tf.relu(y) : y;
        };
        const y = f(x, tf.tensor1d(gs), tf.tensor1d(bs));
        const grads = tf.grads((a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor) => tf.sum(tf.mul(f(a, gm, bt), dy)))([x, tf.tensor1d(gs), tf.tensor1d(bs)]);
        return [y, ...grads, tf.moments(x, [0, 1, 2]).variance];
      });
      setFusedKernelsEnabled(path === 'fused');
      try {
        const errs = await on(backend, () => {
          const ones = (): tf.Tensor2D => tf.ones([1, size / C]) as tf.Tensor2D;
          const r = bnTrainRelu(tf.tensor4d(xs, shape), tf.tensor1d(gs), tf.tensor1d(bs), ones, relu);
          const b = bnBackward(tf.tensor4d(dys, shape), r.cache, tf.tensor1d(gs), ones, true, relu ? r.y : null);
          const m = size / C;
          return [relErr(r.y, ref[0]!), relErr(b.dx, ref[1]!), relErr(b.dgamma, ref[2]!), relErr(b.dbeta, ref[3]!), relErr(tf.mul(r.varUnbiased, (m - 1) / m), ref[4]!)];
        });
        for (const e of errs) expect(e).toBeLessThan(TOL);
      } finally {
        setFusedKernelsEnabled(true);
      }
    });

    // A residual block's end, y = ReLU(BN(x) + res): dx through BN with the block's mask, and the
    // shortcut's gradient dy·[y > 0] added to another path's by reluGradAdd.
    const res = rand(size, 'bn-res', 2, -1);
    const other = rand(size, 'bn-other');
    it.each(PATHS)('block end ReLU(BN(x) + res) on %s, %s kernels: y, dx, dgamma, dbeta, other + dres', async (backend, path) => {
      const ref = await reference(() => {
        const dy = tf.tensor4d(dys, shape);
        const f = (a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor, r: tf.Tensor): tf.Tensor => {
          const { mean, variance } = tf.moments(a, [0, 1, 2]);
          return tf.relu(tf.add(tf.batchNorm(a, mean, variance, bt as tf.Tensor1D, gm as tf.Tensor1D, 1e-5), r));
        };
        const args = [tf.tensor4d(xs, shape), tf.tensor1d(gs), tf.tensor1d(bs), tf.tensor4d(res, shape)];
        const y = f(args[0]!, args[1]!, args[2]!, args[3]!);
        const [dx, dg, db, dr] = tf.grads((a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor, r: tf.Tensor) => tf.sum(tf.mul(f(a, gm, bt, r), dy)))(args);
        return [y, dx!, dg!, db!, tf.add(dr!, tf.tensor4d(other, shape))];
      });
      setFusedKernelsEnabled(path === 'fused');
      try {
        const errs = await on(backend, () => {
          const ones = (): tf.Tensor2D => tf.ones([1, size / C]) as tf.Tensor2D;
          const dy = tf.tensor4d(dys, shape);
          const r = bnTrainRelu(tf.tensor4d(xs, shape), tf.tensor1d(gs), tf.tensor1d(bs), ones, false, tf.tensor4d(res, shape));
          const b = bnBackward(dy, r.cache, tf.tensor1d(gs), ones, true, r.y);
          const sum = reluGradAdd(tf.tensor4d(other, shape), dy, r.y);
          return [relErr(r.y, ref[0]!), relErr(b.dx, ref[1]!), relErr(b.dgamma, ref[2]!), relErr(b.dbeta, ref[3]!), relErr(sum, ref[4]!)];
        });
        for (const e of errs) expect(e).toBeLessThan(TOL);
      } finally {
        setFusedKernelsEnabled(true);
      }
    });

    it.each(BACKENDS)('frozen (running statistics) on %s: y, dx, dgamma, dbeta', async (backend) => {
      const ref = await reference(() => {
        const x = tf.tensor4d(xs, shape);
        const dy = tf.tensor4d(dys, shape);
        const f = (a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor): tf.Tensor => tf.batchNorm(a, tf.tensor1d(rm), tf.tensor1d(rv), bt as tf.Tensor1D, gm as tf.Tensor1D, 1e-5);
        const y = f(x, tf.tensor1d(gs), tf.tensor1d(bs));
        const grads = tf.grads((a: tf.Tensor, gm: tf.Tensor, bt: tf.Tensor) => tf.sum(tf.mul(f(a, gm, bt), dy)))([x, tf.tensor1d(gs), tf.tensor1d(bs)]);
        return [y, ...grads];
      });
      const errs = await on(backend, () => {
        const ones = tf.ones([1, size / C]) as tf.Tensor2D;
        const r = bnForwardStats(tf.tensor4d(xs, shape), tf.tensor1d(gs), tf.tensor1d(bs), tf.tensor1d(rm), tf.tensor1d(rv));
        const b = bnBackward(tf.tensor4d(dys, shape), r.cache, tf.tensor1d(gs), () => ones, false);
        return [relErr(r.y, ref[0]!), relErr(b.dx, ref[1]!), relErr(b.dgamma, ref[2]!), relErr(b.dbeta, ref[3]!)];
      });
      for (const e of errs) expect(e).toBeLessThan(TOL);
    });
  });

  it.each(BACKENDS)('softmax cross-entropy on %s: loss and dlogits, stable for large logits', async (backend) => {
    const zs = rand(4 * 7, 'logits', 40);
    const labels = [3, 0, 6, 3];
    const ref = await reference(() => {
      const z = tf.tensor2d(zs, [4, 7]);
      const onehot = tf.oneHot(tf.tensor1d(labels, 'int32'), 7);
      const loss = tf.losses.softmaxCrossEntropy(onehot, z);
      const dz = tf.grad((a: tf.Tensor) => tf.losses.softmaxCrossEntropy(onehot, a))(z);
      return [loss, dz];
    });
    const errs = await on(backend, () => {
      const r = softmaxCrossEntropy(tf.tensor2d(zs, [4, 7]), tf.tensor1d(labels, 'int32'));
      expect(Number.isFinite(r.loss.dataSync()[0])).toBe(true);
      return [relErr(r.loss, ref[0]!), relErr(r.dlogits, ref[1]!)];
    });
    for (const e of errs) expect(e).toBeLessThan(TOL);
  });

  // 3 channels: the plain loop everywhere; 8: the SIMD loop on wasm (pool-simd.ts).
  it.each(PATHS.flatMap(([b, p]) => [[b, p, 8, 3], [b, p, 7, 3], [b, p, 16, 3], [b, p, 8, 8], [b, p, 7, 8]] as const))('max-pool 3×3/2 pad 1 forward and gradient on %s, %s kernels, input side %i, %i channels (ties after ReLU included)', async (backend, path, side, c) => {
    const shape: [number, number, number, number] = [2, side, side, c];
    // Half the inputs are exactly 0, as after a ReLU: ties must go to the first maximum.
    const xs = rand(2 * side * side * c, 'mp-x').map((v) => Math.max(v, 0));
    const out = Math.floor((side + 2 - 3) / 2) + 1;
    const pool = { inSize: side, outSize: out, k: 3, stride: 2, pad: 1 };
    const dys = rand(2 * out * out * c, 'mp-dy');
    const ref = await reference(() => {
      const dy = tf.tensor4d(dys, [2, out, out, c]);
      const x = tf.tensor4d(xs, shape);
      return [tf.maxPool(x, 3, 2, 1), tf.grad((a: tf.Tensor) => tf.sum(tf.mul(tf.maxPool(a as tf.Tensor4D, 3, 2, 1), dy)))(x)];
    });
    setFusedKernelsEnabled(path === 'fused');
    try {
      const errs = await on(backend, () => {
        const x = tf.tensor4d(xs, shape);
        const f = maxPoolForward(x, pool);
        expect(f.argmax !== null).toBe(path === 'fused');
        return [relErr(f.y, ref[0]!), relErr(maxPoolBackward(x, f, tf.tensor4d(dys, [2, out, out, c]), pool), ref[1]!)];
      });
      for (const e of errs) expect(e).toBeLessThan(TOL);
    } finally {
      setFusedKernelsEnabled(true);
    }
  });
});
