// The wasm backend's own convolution implementations — 'gemm' (im2col + the wasm GEMM,
// conv-gemm.ts), 'winograd' and 'winograd4' (F(2×2, 3×3) and F(4×4, 3×3), conv-winograd.ts), 'taps' (3×3 on 2×2
// inputs, conv-taps.ts) — against the cpu backend's stock
// tfjs gradients (autodiff), with the FMA and the mul+add GEMM kernels, for every conv geometry
// ResNet-50 has (stride 2, padding, 1×1 spatial, odd sizes, the 7×7 stem with 3 channels) plus the
// tile edge cases of Winograd (sides that are not a multiple of the tile: partial edge tiles; a
// side smaller than one tile; several GEMM row blocks). Each implementation is checked wherever it is a candidate. Also: where an
// implementation does not apply (another backend, another geometry), a plan naming it falls back.
import * as tf from '@tensorflow/tfjs-core';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend';
import { candidates, convBackpropFilter, convBackpropInput, convForward } from './conv-kernels';
import { convGeometry, type ConvGeometry } from './conv-geometry';
import { WASM_CONV_KERNELS, convCase, relErr, uniform } from '../test-support/conv-fixtures';
import { forceGemmFma } from '../kernels/gemm-kernels';
import { registerStockGradients } from '../test-support/stock-gradients';

setFlagsFromString('--experimental-wasm-relaxed-simd'); // vitest workers lack the flag; before the first validation

const TOL = 1e-4;
const rand = (n: number, stream: string): Float32Array => uniform(7, n, stream);

const GEOMETRIES: [string, ConvGeometry, number][] = [
  ['1×1 s1', convGeometry(5, 16, 8, 1, 1, 0), 2],
  ['1×1 s1, M not a multiple of 6, K > 256', convGeometry(3, 264, 16, 1, 1, 0), 3],
  ['1×1 s2 downsample, even input', convGeometry(6, 8, 16, 1, 2, 0), 2],
  ['1×1 s2 downsample, odd input', convGeometry(5, 8, 16, 1, 2, 0), 2],
  ['1×1 on 1×1 spatial', convGeometry(1, 16, 24, 1, 1, 0), 3],
  ['3×3 s1 pad 1, odd side (Winograd: partial edge tiles)', convGeometry(5, 8, 16, 3, 1, 1), 2],
  ['3×3 s1 pad 1, even side', convGeometry(6, 16, 8, 3, 1, 1), 3],
  ['3×3 s1 pad 1, side a multiple of 4', convGeometry(8, 16, 16, 3, 1, 1), 2],
  ['3×3 s1 pad 1, 2×2 (Winograd: one tile per image; taps)', convGeometry(2, 24, 16, 3, 1, 1), 3],
  ['3×3 s1 pad 1, 2×2, batch 1, K > 256 (taps: single-row GEMMs)', convGeometry(2, 264, 8, 3, 1, 1), 1],
  ['3×3 s1 pad 1, K > 256, several row blocks', convGeometry(8, 264, 32, 3, 1, 1), 2],
  ['3×3 s2 pad 1, even input', convGeometry(6, 8, 8, 3, 2, 1), 2],
  ['3×3 s2 pad 1, odd input', convGeometry(7, 8, 16, 3, 2, 1), 2],
  ['3×3 s2 pad 1, 2×2 → 1×1', convGeometry(2, 16, 8, 3, 2, 1), 2],
  ['3×3 s1 pad 1 on 1×1 (centre tap only)', convGeometry(1, 16, 8, 3, 1, 1), 3],
  ['3×3 channels not a multiple of 4', convGeometry(4, 6, 8, 3, 1, 1), 2],
  ['7×7 s2 pad 3 stem, even input', convGeometry(12, 3, 16, 7, 2, 3), 2],
  ['7×7 s2 pad 3 stem, odd input', convGeometry(11, 3, 8, 7, 2, 3), 2],
];

/** Every pass of `impl` that the geometry offers it for matches the reference. */
function expectMatches(g: ConvGeometry, cc: ReturnType<typeof convCase>, ref: Float32Array[], impl: (typeof WASM_CONV_KERNELS)[number], only?: ReturnType<typeof candidates>): void {
  tf.tidy(() => {
    const [x, w, dy] = [cc.x(), cc.w(), cc.dy()];
    if (!only || only.fwd.includes(impl)) expect(relErr(convForward(x, w, g, impl), ref[0]!)).toBeLessThan(TOL);
    if (!only || only.dx.includes(impl)) expect(relErr(convBackpropInput(dy, w, g, impl), ref[1]!)).toBeLessThan(TOL);
    if (!only || only.dw.includes(impl)) {
      expect(relErr(convBackpropFilter(x, dy, g, impl), ref[2]!)).toBeLessThan(TOL);
      // twice: the reused scratch and the fresh outputs must not leak values between calls
      expect(relErr(convBackpropFilter(x, dy, g, impl), ref[2]!)).toBeLessThan(TOL);
    }
  });
}

describe('conv wasm implementations (\'gemm\', \'winograd\', \'winograd4\', \'taps\') vs the cpu backend\'s stock gradients', () => {
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

    it.each([true, false])('fma %s: forward, input gradient, filter gradient of every implementation offered', (fma) => {
      forceGemmFma(fma);
      const c = candidates(g);
      expect(c.fwd).toContain('gemm');
      expect(c.dw).toContain('gemm');
      // Winograd exactly where it applies: 3×3 stride 1 "same", more than 1×1, channels in multiples of 8.
      const winograd = g.k === 3 && g.stride === 1 && g.inSize > 1 && g.cin % 8 === 0 && g.cout % 8 === 0;
      for (const pass of [c.fwd, c.dx, c.dw] as string[][]) for (const impl of ['winograd', 'winograd4']) expect(pass.includes(impl)).toBe(winograd);
      // taps exactly on 2×2 inputs of such convs.
      for (const pass of [c.fwd, c.dx, c.dw] as string[][]) expect(pass.includes('taps')).toBe(winograd && g.inSize === 2);
      for (const impl of WASM_CONV_KERNELS) expectMatches(g, cc, ref, impl, c);
    });

    it('on the cpu backend: no wasm implementation is a candidate, and a plan naming one falls back to the stock ops', async () => {
      await tf.setBackend('cpu');
      try {
        const c = candidates(g);
        expect([...c.fwd, ...c.dx, ...c.dw]).not.toContain('gemm');
        expect([...c.fwd, ...c.dx, ...c.dw]).not.toContain('winograd');
        expect([...c.fwd, ...c.dx, ...c.dw]).not.toContain('taps');
        for (const impl of WASM_CONV_KERNELS) expectMatches(g, cc, ref, impl);
      } finally {
        await tf.setBackend('wasm');
      }
    });

    it('on wasm, a plan naming a Winograd or taps implementation where it does not apply falls back', () => {
      expectMatches(g, cc, ref, 'winograd');
      expectMatches(g, cc, ref, 'winograd4');
      expectMatches(g, cc, ref, 'taps');
    });
  });
});
