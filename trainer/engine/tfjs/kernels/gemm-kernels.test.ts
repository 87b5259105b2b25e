import * as tf from '@tensorflow/tfjs-core';
import { setFlagsFromString } from 'node:v8';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend';
import { relaxedSimdAvailable } from '../../../util/wasm-asm';
import { emptyTensor, gemmModuleBytes, heapPtr, wasmGemm, type Operand } from './gemm-kernels';

// The FMA path needs relaxed SIMD; vitest's workers do not get --experimental-wasm-relaxed-simd, so
// turn the feature on here (before the first validation) to check both code paths.
setFlagsFromString('--experimental-wasm-relaxed-simd');

function rand(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

describe('wasm GEMM on the tfjs-backend-wasm heap', () => {
  beforeAll(async () => {
    await initBackend('wasm');
  });

  it('validates relaxed SIMD only when V8 has it, and the mul+add module always', () => {
    expect((globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly.validate(gemmModuleBytes(false))).toBe(true);
    expect(relaxedSimdAvailable()).toBe(true);
  });

  const cases: [number, number, number][] = [[1, 8, 1], [13, 24, 7], [64, 64, 300], [100, 520, 513], [7, 16, 1000], [6, 8, 4], [37, 1032, 5]];
  for (const fma of [false, true]) {
    for (const [m, n, k] of cases) {
      it(`${fma ? 'FMA' : 'mul+add'} ${m}×${k}·${k}×${n}: plain, Aᵀ, Bᵀ, accumulate`, () => {
        const av = rand(m * k, m + k);
        const bv = rand(k * n, n + 7 * k);
        const want = new Float64Array(m * n);
        for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
          let s = 0;
          for (let p = 0; p < k; p++) s += av[i * k + p]! * bv[p * n + j]!;
          want[i * n + j] = s;
        }
        const a = tf.tensor2d(av, [m, k]);
        const b = tf.tensor2d(bv, [k, n]);
        const at = tf.transpose(a).clone();
        const bt = tf.transpose(b).clone();
        const g = wasmGemm(fma);
        expect(g.fma).toBe(fma);
        const variants: [Operand, Operand][] = [
          [{ ptr: heapPtr(a), rs: k * 4, cs: 4 }, { ptr: heapPtr(b), rs: n * 4, cs: 4 }],
          [{ ptr: heapPtr(at), rs: 4, cs: m * 4 }, { ptr: heapPtr(b), rs: n * 4, cs: 4 }],
          [{ ptr: heapPtr(a), rs: k * 4, cs: 4 }, { ptr: heapPtr(bt), rs: 4, cs: k * 4 }],
        ];
        const scale = Math.max(...want.map(Math.abs), 1e-6);
        for (const [ao, bo] of variants) {
          const c = emptyTensor([m, n]);
          g.gemm(m, n, k, ao, bo, { ptr: heapPtr(c), ldc: n * 4 });
          const got = c.dataSync();
          let err = 0;
          for (let i = 0; i < m * n; i++) err = Math.max(err, Math.abs(got[i]! - want[i]!));
          expect(err / scale).toBeLessThan(1e-5);
          // accumulate: C += A·B doubles it
          g.gemm(m, n, k, ao, bo, { ptr: heapPtr(c), ldc: n * 4 }, true);
          const twice = c.dataSync();
          err = 0;
          for (let i = 0; i < m * n; i++) err = Math.max(err, Math.abs(twice[i]! - 2 * want[i]!));
          expect(err / scale).toBeLessThan(2e-5);
          c.dispose();
        }
        tf.dispose([a, b, at, bt]);
      });
    }
  }

  it('keeps working after the heap grows (pointers and the imported Memory stay valid)', () => {
    const g = wasmGemm(false);
    const a = tf.ones([12, 16]);
    const b = tf.ones([16, 8]);
    const big = tf.zeros([64 << 20]); // 256 MB: forces memory.grow
    const c = emptyTensor([12, 8]);
    g.gemm(12, 8, 16, { ptr: heapPtr(a), rs: 64, cs: 4 }, { ptr: heapPtr(b), rs: 32, cs: 4 }, { ptr: heapPtr(c), ldc: 32 });
    expect([...c.dataSync()].every((v) => v === 16)).toBe(true);
    tf.dispose([a, b, big, c]);
  });
});
