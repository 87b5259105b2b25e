import { describe, expect, it } from 'vitest';
import { createJsReduceKernel, createReduceKernel } from './reduce-kernel';

describe('reduce kernel', () => {
  it('uses wasm SIMD on this Node and matches the plain loop, including ragged counts', () => {
    const piece = 1024;
    const simd = createReduceKernel(piece * 4);
    expect(simd.name).toBe('wasm-simd');
    const js = createJsReduceKernel(piece * 4);
    for (const count of [0, 1, 3, 5, 17, 1000, 1024]) {
      const a = Float32Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 10);
      const b = a.slice();
      const incoming = Float32Array.from({ length: piece }, (_, i) => Math.cos(i) * 3);
      new Float32Array(simd.staging.buffer, simd.staging.byteOffset, piece).set(incoming);
      new Float32Array(js.staging.buffer, js.staging.byteOffset, piece).set(incoming);
      simd.addStagingF32(a, 7, count);
      js.addStagingF32(b, 7, count);
      expect(Array.from(a)).toEqual(Array.from(b));
      if (count > 0) expect(a[7]).toBe(Math.fround(Math.fround(Math.sin(7) * 10) + Math.fround(Math.cos(0) * 3)));
    }
  });
});
