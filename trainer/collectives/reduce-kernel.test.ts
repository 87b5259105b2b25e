import { describe, expect, it } from 'vitest';
import { wasmApi } from '../util/wasm-asm';
import { createJsReduceKernel, createReduceKernel, type ReduceKernel } from './reduce-kernel';

const P = 1024;

function stage(k: ReduceKernel, values: Float32Array | Uint16Array): void {
  new Uint8Array(k.staging.buffer, k.staging.byteOffset, values.byteLength).set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

/** Indices where a and b differ (both nan counts as equal; -0 and 0 differ). */
function mismatches(a: Float32Array, b: Float32Array): number[] {
  const out: number[] = [];
  a.forEach((v, i) => {
    if (!(Number.isNaN(v) ? Number.isNaN(b[i]!) : Object.is(v, b[i]))) out.push(i);
  });
  return out;
}

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('reduce kernel (wasm SIMD vs scalar)', () => {
  const simd = createReduceKernel(P);
  const js = createJsReduceKernel(P);

  it('compiles the SIMD module on this Node', () => expect(simd.name).toBe('wasm-simd'));

  it('adds (and divides) f32 pieces like the plain loop, for ragged counts', () => {
    for (const [count, divisor] of [[0, 0], [1, 3], [3, 0], [5, 2], [17, 3], [1000, 0], [P, 7]] as const) {
      const a = Float32Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 10);
      const b = a.slice();
      const incoming = Float32Array.from({ length: P }, (_, i) => Math.cos(i) * 3);
      stage(simd, incoming);
      stage(js, incoming);
      simd.addF32(a, 7, count, divisor);
      js.addF32(b, 7, count, divisor);
      expect(bits(a)).toEqual(bits(b));
    }
  });

  it('adds in place into arrays on its home memory, bit-identical to the copying kernel, without touching neighbours', () => {
    const memory = new wasmApi.Memory({ initial: 1, maximum: 1 });
    const scratchOffset = 32768; // the arrays below sit in the first 12 KiB; scratch after them (10·P bytes)
    const homed = createReduceKernel(P, { memory, scratchOffset });
    expect(homed.home).toBe(memory.buffer);
    for (const [off, count, divisor] of [[0, 0, 0], [1, 3, 2], [3, 5, 0], [7, 17, 3], [2, 1000, 0], [0, P, 7]] as const) {
      const onHome = new Float32Array(memory.buffer, 4, 3000); // 4: not 16-byte aligned
      onHome.set(Float32Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 10));
      const plain = onHome.slice();
      const incoming = Float32Array.from({ length: P }, (_, i) => Math.cos(i) * 3);
      stage(homed, incoming);
      stage(simd, incoming);
      homed.addF32(onHome, off, count, divisor);
      simd.addF32(plain, off, count, divisor);
      expect(bits(onHome)).toEqual(bits(plain));
    }
  });

  it('decodes every one of the 65536 halves exactly like the table (nan stays nan)', () => {
    for (let base = 0; base < 65536; base += P) {
      const halves = Uint16Array.from({ length: P }, (_, i) => base + i);
      const a = new Float32Array(P);
      const b = new Float32Array(P);
      stage(simd, halves);
      stage(js, halves);
      simd.decodeF16(a, 0, P);
      js.decodeF16(b, 0, P);
      expect(mismatches(a, b), `halves from 0x${base.toString(16)}`).toEqual([]);
      const c = new Float32Array(P + 3).fill(0.25);
      const d = c.slice();
      simd.addF16(c, 3, P - 5);
      js.addF16(d, 3, P - 5);
      expect(mismatches(c, d)).toEqual([]);
    }
  });

  it('accumulates halves, divides, encodes and rounds in one piece pass like the scalar path', () => {
    const halves = Uint16Array.from({ length: P }, (_, i) => (i * 977) & 0x7bff); // finite halves
    for (const opts of [{}, { divisor: 3 }, { divisor: 2, round: true }, { round: true }]) {
      const a = Float32Array.from({ length: P + 9 }, (_, i) => Math.cos(i) * 100);
      const b = a.slice();
      const outA = new Uint16Array(P);
      const outB = new Uint16Array(P);
      stage(simd, halves);
      stage(js, halves);
      simd.addF16(a, 9, P - 3, { ...opts, out: outA });
      js.addF16(b, 9, P - 3, { ...opts, out: outB });
      expect(mismatches(a, b)).toEqual([]);
      expect(Array.from(outA)).toEqual(Array.from(outB));
    }
  });

  it('encodes like the scalar RNE encoder for every sign and f32 exponent, at every rounding boundary', () => {
    // 2 signs × 256 exponents × 1024 top mantissa bits × the low 13 bits that decide the rounding
    // (exact, just below/at/above the halfway point, all ones), in pieces of P.
    const low = [0, 1, 0xfff, 0x1000, 0x1001, 0x1fff];
    const words = new Uint32Array(2 * 256 * 1024 * low.length);
    let n = 0;
    for (let sign = 0; sign < 2; sign++)
      for (let e = 0; e < 256; e++) for (let top = 0; top < 1024; top++) for (const l of low) words[n++] = ((sign << 31) | (e << 23) | (top << 13) | l) >>> 0;
    const src = new Float32Array(words.buffer);
    const a = new Uint16Array(P);
    const b = new Uint16Array(P);
    let wrong = 0;
    for (let off = 0; off < src.length; off += P) {
      simd.encodeF16(src, off, P, a);
      js.encodeF16(src, off, P, b);
      for (let i = 0; i < P; i++) if (a[i] !== b[i] && wrong++ < 5) console.error(`f32 bits 0x${words[off + i]!.toString(16)}: simd 0x${a[i]!.toString(16)}, scalar 0x${b[i]!.toString(16)}`);
    }
    expect(wrong).toBe(0);
  });

  it('runs the f16 steps in place on its home memory, bit-identical to the copying kernel, without touching neighbours', () => {
    const memory = new wasmApi.Memory({ initial: 1, maximum: 1 });
    const homed = createReduceKernel(P, { memory, scratchOffset: 32768 });
    const halves = Uint16Array.from({ length: P }, (_, i) => (i * 977) & 0xfbff); // finite halves of both signs
    for (const [off, count] of [[0, 0], [1, 3], [3, 8], [7, 17], [2, 1000], [0, P]] as const) {
      for (const opts of [undefined, { divisor: 3 }, { divisor: 2, round: true }, { round: true }]) {
        const fresh = (): Float32Array => Float32Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 10);
        const onHome = new Float32Array(memory.buffer, 4, 3000); // 4: not 16-byte aligned
        onHome.set(fresh());
        const plain = fresh();
        const outA = new Uint16Array(P);
        const outB = new Uint16Array(P);
        stage(homed, halves);
        stage(simd, halves);
        if (opts === undefined) {
          homed.decodeF16(onHome, off, count);
          simd.decodeF16(plain, off, count);
          homed.encodeF16(onHome, off + 5, count, outA);
          simd.encodeF16(plain, off + 5, count, outB);
        } else {
          homed.addF16(onHome, off, count, { ...opts, out: outA });
          simd.addF16(plain, off, count, { ...opts, out: outB });
        }
        expect(bits(onHome), `off ${off} count ${count} ${JSON.stringify(opts)}`).toEqual(bits(plain));
        expect(Array.from(outA)).toEqual(Array.from(outB));
      }
    }
  });

  it('encodes like the scalar RNE encoder: edges, subnormals, overflow, nan, random', () => {
    const edge = [0, -0, 1, -1, 65504, 65519.99, 65520, 65536, 1e9, -1e9, Infinity, -Infinity, NaN, 2 ** -24, 2 ** -25, 3 * 2 ** -25, 2 ** -26, 6.1e-5, 6.097555e-5, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 1e-40, -1e-40];
    let seed = 3;
    const rnd = (): number => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const src = Float32Array.from({ length: 5 * P + 3 }, (_, i) => (i < edge.length ? edge[i]! : (rnd() - 0.5) * 2 ** (rnd() * 50 - 30)));
    for (let off = 0; off + 1 < src.length; off += P) {
      const count = Math.min(P, src.length - off);
      const a = new Uint16Array(P);
      const b = new Uint16Array(P);
      simd.encodeF16(src, off, count, a);
      js.encodeF16(src, off, count, b);
      expect(Array.from(a)).toEqual(Array.from(b));

    }
  });
});
