// The 'winograd' convolution implementations (conv-winograd.ts) against the cpu backend's stock
// tfjs gradients (autodiff), with the FMA and the mul+add GEMM, on the geometries F(2×2, 3×3)
// serves: 3×3 stride 1 pad 1 on even and odd sides (odd: partial edge tiles), one tile (2×2),
// and several GEMM row blocks. Also: which geometries it is a candidate for, and that a plan
// naming it falls back where it does not apply. Relative error = max |a−b| / max |b|.
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
  const u = rng(11, seed);
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
  ['even side', convGeometry(6, 8, 16, 3, 1, 1), 2],
  ['odd side (partial edge tiles)', convGeometry(5, 16, 8, 3, 1, 1), 3],
  ['2×2: one tile per image', convGeometry(2, 24, 16, 3, 1, 1), 3],
  ['more tiles than a GEMM row block, K over one panel', convGeometry(8, 264, 32, 3, 1, 1), 2],
];

describe('conv \'winograd\' implementations vs the cpu backend\'s stock gradients', () => {
  beforeAll(async () => {
    await registerStockGradients();
    await initBackend('wasm');
  });
  afterAll(() => forceGemmFma(null));

  describe.each(GEOMETRIES)('conv 3×3 s1, %s', (_name, g, n) => {
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
      expect(c.fwd).toContain('winograd');
      expect(c.dx).toContain('winograd');
      expect(c.dw).toContain('winograd');
      tf.tidy(() => {
        const [x, w, dy] = [cc.x(), cc.w(), cc.dy()];
        expect(relErr(convForward(x, w, g, 'winograd'), ref[0]!)).toBeLessThan(TOL);
        expect(relErr(convBackpropInput(dy, w, g, 'winograd'), ref[1]!)).toBeLessThan(TOL);
        expect(relErr(convBackpropFilter(x, dy, g, 'winograd'), ref[2]!)).toBeLessThan(TOL);
        // twice: the reused scratch and the fresh outputs must not leak values between calls
        expect(relErr(convForward(x, w, g, 'winograd'), ref[0]!)).toBeLessThan(TOL);
      });
    });
  });

  it('is a candidate only for 3×3 stride-1 "same" convs with channels in multiples of 8', () => {
    expect(candidates(convGeometry(6, 8, 16, 3, 2, 1)).fwd).not.toContain('winograd');
    expect(candidates(convGeometry(6, 8, 16, 1, 1, 0)).fwd).not.toContain('winograd');
    expect(candidates(convGeometry(6, 12, 16, 3, 1, 1)).dx).not.toContain('winograd');
    expect(candidates(convGeometry(1, 16, 16, 3, 1, 1)).dw).not.toContain('winograd');
  });

  it('a plan naming it falls back where it does not apply (stride 2; the cpu backend)', async () => {
    const g = convGeometry(6, 8, 8, 3, 2, 1);
    const cc = convCase(g, 2, rand);
    await tf.setBackend('cpu');
    const ref = cc.reference();
    try {
      for (const backend of ['wasm', 'cpu']) {
        await tf.setBackend(backend);
        tf.tidy(() => {
          const [x, w, dy] = [cc.x(), cc.w(), cc.dy()];
          expect(relErr(convForward(x, w, g, 'winograd'), ref[0]!)).toBeLessThan(TOL);
          expect(relErr(convBackpropInput(dy, w, g, 'winograd'), ref[1]!)).toBeLessThan(TOL);
          expect(relErr(convBackpropFilter(x, dy, g, 'winograd'), ref[2]!)).toBeLessThan(TOL);
        });
      }
    } finally {
      await tf.setBackend('wasm');
    }
  });
});
