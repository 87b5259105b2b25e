// The 'gemm' convolution implementations (conv-gemm.ts) against the cpu backend's stock tfjs
// gradients (autodiff), with the FMA and the mul+add kernels, for every conv geometry ResNet-50 has
// (stride 2, padding, 1×1 spatial, odd sizes, the 7×7 stem with 3 channels). Relative error =
// max |a−b| / max |b|. Also: off the wasm backend, 'gemm' is not a candidate and falls back.
import * as tf from '@tensorflow/tfjs-core';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from './backend';
import { candidates, convBackpropFilter, convBackpropInput, convForward, convGeometry, type ConvGeometry } from './conv-kernels';
import { convCase } from './conv-test-case';
import { forceGemmFma } from './gemm-kernels';
import { rng } from './init-rng';
import { registerStockGradients } from './stock-gradients';

setFlagsFromString('--experimental-wasm-relaxed-simd'); // vitest workers lack the flag; before the first validation

const TOL = 1e-4;

function rand(n: number, seed: string): Float32Array {
  const u = rng(7, seed);
  return Float32Array.from({ length: n }, () => u() * 2 - 1);
}

function relErr(a: tf.Tensor, b: Float32Array): number {
  const x = a.dataSync();
  if (x.length !== b.length) return Infinity;
  let num = 0;
  let den = 0;
  for (let i = 0; i < x.length; i++) {
    num = Math.max(num, Math.abs(x[i]! - b[i]!));
    den = Math.max(den, Math.abs(b[i]!));
  }
  return num / (den || 1);
}

const GEOMETRIES: [string, ConvGeometry, number][] = [
  ['1×1 s1', convGeometry(5, 16, 8, 1, 1, 0), 2],
  ['1×1 s1, M not a multiple of 6, K > 256', convGeometry(3, 264, 16, 1, 1, 0), 3],
  ['1×1 s2 downsample, even input', convGeometry(6, 8, 16, 1, 2, 0), 2],
  ['1×1 s2 downsample, odd input', convGeometry(5, 8, 16, 1, 2, 0), 2],
  ['1×1 on 1×1 spatial', convGeometry(1, 16, 24, 1, 1, 0), 3],
  ['3×3 s1 pad 1', convGeometry(5, 8, 16, 3, 1, 1), 2],
  ['3×3 s2 pad 1, even input', convGeometry(6, 8, 8, 3, 2, 1), 2],
  ['3×3 s2 pad 1, odd input', convGeometry(7, 8, 16, 3, 2, 1), 2],
  ['3×3 s2 pad 1, 2×2 → 1×1', convGeometry(2, 16, 8, 3, 2, 1), 2],
  ['3×3 s1 pad 1 on 1×1 (centre tap only)', convGeometry(1, 16, 8, 3, 1, 1), 3],
  ['3×3 channels not a multiple of 4', convGeometry(4, 6, 8, 3, 1, 1), 2],
  ['7×7 s2 pad 3 stem, even input', convGeometry(12, 3, 16, 7, 2, 3), 2],
  ['7×7 s2 pad 3 stem, odd input', convGeometry(11, 3, 8, 7, 2, 3), 2],
];

describe('conv \'gemm\' implementations vs the cpu backend\'s stock gradients', () => {
  beforeAll(async () => {
    await registerStockGradients();
    await initBackend('wasm');
  });
  afterAll(() => forceGemmFma(null));

  describe.each(GEOMETRIES)('conv %s', (_name, g, n) => {
    const cc = convCase(g, n, rand);
    let ref: Float32Array[] = [];
    beforeAll(async () => {
      await tf.setBackend('cpu');
      ref = cc.reference();
      await tf.setBackend('wasm');
    });

    it.each([true, false])('fma %s: forward, input gradient, filter gradient', (fma) => {
      forceGemmFma(fma);
      const c = candidates(g);
      expect(c.fwd).toContain('gemm');
      expect(c.dw).toContain('gemm');
      tf.tidy(() => {
        const [x, w, dy] = [cc.x(), cc.w(), cc.dy()];
        expect(relErr(convForward(x, w, g, 'gemm'), ref[0]!)).toBeLessThan(TOL);
        if (c.dx.includes('gemm')) expect(relErr(convBackpropInput(dy, w, g, 'gemm'), ref[1]!)).toBeLessThan(TOL);
        expect(relErr(convBackpropFilter(x, dy, g, 'gemm'), ref[2]!)).toBeLessThan(TOL);
        // twice: the reused scratch and the fresh outputs must not leak values between calls
        expect(relErr(convBackpropFilter(x, dy, g, 'gemm'), ref[2]!)).toBeLessThan(TOL);
      });
    });

    it('on the cpu backend: not a candidate, and a plan naming it falls back to the stock ops', async () => {
      await tf.setBackend('cpu');
      try {
        const c = candidates(g);
        expect([...c.fwd, ...c.dx, ...c.dw]).not.toContain('gemm');
        tf.tidy(() => {
          const [x, w, dy] = [cc.x(), cc.w(), cc.dy()];
          expect(relErr(convForward(x, w, g, 'gemm'), ref[0]!)).toBeLessThan(TOL);
          expect(relErr(convBackpropInput(dy, w, g, 'gemm'), ref[1]!)).toBeLessThan(TOL);
          expect(relErr(convBackpropFilter(x, dy, g, 'gemm'), ref[2]!)).toBeLessThan(TOL);
        });
      } finally {
        await tf.setBackend('wasm');
      }
    });
  });
});
