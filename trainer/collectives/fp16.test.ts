import { describe, expect, it } from 'vitest';
import { addF16Into, decodeF16, encodeF16, f16ToF32, f32ToF16, roundThroughF16 } from './fp16';

// Reference: exact rounding via doubles (every f32 and every half are exactly representable).
function refEncode(v: number): number {
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | 0x7c00;
  // Candidates: walk halves around a, pick nearest, ties to even bit pattern.
  let best = 0;
  let bestErr = Infinity;
  for (let h = 0; h < 0x7c00; h++) {
    const err = Math.abs(f16ToF32(h) - a);
    if (err < bestErr || (err === bestErr && (h & 1) === 0)) {
      best = h;
      bestErr = err;
    }
  }
  // Overflow: RNE rounds values ≥ 65520 to inf.
  if (a >= 65520) return sign | 0x7c00;
  return sign | best;
}

describe('fp16', () => {
  it('decodes the special values', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(f16ToF32(0xfc00)).toBe(-Infinity);
    expect(Number.isNaN(f16ToF32(0x7e00))).toBe(true);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
  });

  it('round-trips every finite half exactly', () => {
    for (let h = 0; h < 65536; h++) {
      const exp = (h >>> 10) & 0x1f;
      if (exp === 31) continue;
      expect(f32ToF16(f16ToF32(h))).toBe(h);
    }
  });

  it('rounds to nearest even, handles overflow, nan and subnormals', () => {
    const cases = [
      1 + 2 ** -11, // tie between 1 and 1+2^-10 → even (1)
      1 + 3 * 2 ** -11, // tie → even (1 + 2·2^-10)
      65504, 65519.99, 65520, 1e6, -1e6, 2 ** -24, 2 ** -25, 2 ** -25 * 1.0001, 3 * 2 ** -25, 1e-10, -0, 0,
      6.1e-5, 6.097555e-5, Math.fround(0.1), Math.fround(-3.14159), Infinity, -Infinity, NaN,
    ];
    for (const v of cases) expect(f32ToF16(v), `value ${v}`).toBe(refEncode(Math.fround(v)));
  });

  it('matches the reference on random values across the range', () => {
    let seed = 7;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 300; i++) {
      const v = Math.fround((rnd() - 0.5) * 2 ** (rnd() * 44 - 28));
      expect(f32ToF16(v), `value ${v}`).toBe(refEncode(v));
    }
  });

  it('converts arrays and accumulates in f32', () => {
    const src = new Float32Array([1.5, -2.25, 1000.1, 3e-6]);
    const half = new Uint16Array(4);
    encodeF16(new Uint32Array(src.buffer), 0, half, 0, 4);
    const back = new Float32Array(4);
    decodeF16(half, 0, back, 0, 4);
    expect(Array.from(back)).toEqual(Array.from(src).map((v) => f16ToF32(f32ToF16(v))));
    const acc = new Float32Array([1, 1, 1, 1]);
    addF16Into(half, 0, acc, 0, 4);
    expect(acc[0]).toBe(2.5);
    const r = new Float32Array([1000.1]);
    roundThroughF16(new Uint32Array(r.buffer), r, 0, 1);
    expect(r[0]).toBe(1000);
  });
});
