// The ring's per-piece arithmetic: f32 add, f16 encode/decode/accumulate, and the average's
// division. V8 does not vectorise typed-array loops (~2.5 ns per f32 add on the build machine);
// WebAssembly SIMD does 4–8 lanes per instruction. Wasm cannot read the caller's Float32Array in
// place, so the receive staging area lives in wasm memory (the socket reads straight into it)
// and each destination piece is copied in once, run through every step it needs (add, divide,
// encode, round) and copied back once; at our piece size the intermediate passes stay in cache.
// A kernel made on a `home` memory (where the caller's arrays live: the optimizer's buffers)
// runs every step in place there, without those two copies.
// Measured on the build machine (12.5M elements on a home memory, medians of 9; the numbers
// before the in-place f16 steps and the constants in globals, simd-module.ts, in brackets):
// f32 add 6 ms; f16 accumulate 8.6 ms (15), the segment owner's accumulate + average + encode +
// round 26 ms (42), decode 6.9 ms (13.7), encode 10 ms (17.8). Without SIMD wasm the scalar code
// in fp16.ts is used (identical results bit for bit: reduce-kernel.test.ts checks both).
import { decodeF16, encodeF16, f16DecodeTable } from './fp16';
import { instantiate, wasmApi, type WasmMemory } from '../util/wasm-asm';
import { simdModuleBytes } from './simd-module';

export interface F16PieceOptions {
  /** Divide the sum by this (the average), before encoding. 0 = no division. */
  divisor?: number;
  /** Also write the result as halves here (the piece to forward). */
  out?: Uint16Array;
  /** Replace the result by its f16 rounding (the final owner keeps what the others decode). Needs `out`. */
  round?: boolean;
}

/** A wasm memory the caller's arrays live in, with `reduceScratchBytes(pieceElems)` of it free at `scratchOffset` for the kernel. */
export interface ReduceHome {
  /** Fixed size: it must never grow (views into it would detach). */
  memory: WasmMemory;
  scratchOffset: number;
}

/** Scratch a kernel needs in its home memory: f32 working piece + staging + f16 output. */
export const reduceScratchBytes = (pieceElems: number): number => pieceElems * 10;

export interface ReduceKernel {
  readonly name: 'wasm-simd' | 'js';
  /** The memory whose arrays `addF32` updates in place (undefined: always copies). */
  readonly home?: ArrayBuffer;
  /** Where received bytes land; `pieceElems * 4` bytes, 16-byte aligned. */
  readonly staging: Uint8Array;
  /** dst[off + i] = (dst[off + i] + staging f32 [i]) / divisor (divisor 0: no division), i < count. */
  addF32(dst: Float32Array, off: number, count: number, divisor?: number): void;
  /** dst[off + i] += staging f16 [i], then the options in order: divide, encode to `out`, round. */
  addF16(dst: Float32Array, off: number, count: number, opts?: F16PieceOptions): void;
  /** dst[off + i] = staging f16 [i]. */
  decodeF16(dst: Float32Array, off: number, count: number): void;
  /** out[i] = f16(src[off + i]). */
  encodeF16(src: Float32Array, off: number, count: number, out: Uint16Array): void;
}

export function createJsReduceKernel(pieceElems: number): ReduceKernel {
  const staging = new Uint8Array(pieceElems * 4);
  const f32 = new Float32Array(staging.buffer);
  const f16 = new Uint16Array(staging.buffer);
  const divide = (dst: Float32Array, off: number, count: number, divisor: number | undefined): void => {
    if (divisor) for (let i = off; i < off + count; i++) dst[i]! /= divisor;
  };
  return {
    name: 'js',
    staging,
    addF32(dst, off, count, divisor) {
      for (let i = 0; i < count; i++) dst[off + i]! += f32[i]!;
      divide(dst, off, count, divisor);
    },
    addF16(dst, off, count, opts = {}) {
      const t = f16DecodeTable();
      for (let i = 0; i < count; i++) dst[off + i]! += t[f16[i]!]!;
      divide(dst, off, count, opts.divisor);
      if (!opts.out) return;
      encodeF16(new Uint32Array(dst.buffer, dst.byteOffset, dst.length), off, opts.out, 0, count);
      if (opts.round) decodeF16(opts.out, 0, dst, off, count);
    },
    decodeF16: (dst, off, count) => decodeF16(f16, 0, dst, off, count),
    encodeF16: (src, off, count, out) => encodeF16(new Uint32Array(src.buffer, src.byteOffset, src.length), off, out, 0, count),
  };
}

type Fn = (d: number, s: number, dEnd: number) => void;

export function createReduceKernel(pieceElems: number, home?: ReduceHome): ReduceKernel {
  if (pieceElems % 8 !== 0) throw new RangeError(`pieceElems must be a multiple of 8, got ${pieceElems}`);
  let exports: Record<string, unknown>;
  let memory: { buffer: ArrayBuffer };
  const base = home?.scratchOffset ?? 0;
  if (base % 16 !== 0) throw new RangeError(`reduce scratch must be 16-byte aligned, got offset ${base}`);
  const A = base; // f32 working copy of the destination piece
  const S = base + pieceElems * 4; // receive staging
  const H = base + pieceElems * 8; // f16 output
  try {
    if (home) {
      memory = home.memory;
      exports = instantiate(simdModuleBytes({ growable: true }), memory);
    } else {
      // Fixed size, never grown: views into it stay valid for the kernel's life.
      const pages = Math.ceil(reduceScratchBytes(pieceElems) / 65536);
      memory = new wasmApi.Memory({ initial: pages, maximum: pages });
      exports = instantiate(simdModuleBytes(pages), memory);
    }
  } catch {
    return createJsReduceKernel(pieceElems);
  }
  const addF32 = exports.add_f32 as Fn;
  const addF16 = exports.add_f16 as Fn;
  const decF16 = exports.dec_f16 as Fn;
  const encF16 = exports.enc_f16 as Fn;
  const divF32 = exports.div_f32 as Fn;
  const acc = new Float32Array(memory.buffer, A, pieceElems);
  const halves = new Uint16Array(memory.buffer, H, pieceElems);
  const bits = new Uint32Array(1);
  const bitsOf = (x: number): number => {
    new Float32Array(bits.buffer)[0] = x;
    return bits[0]!;
  };
  // Loop bounds round up to whole vectors: the extra lanes compute garbage inside our own
  // regions (each is a full piece long) and are never copied out.
  const endF32 = (count: number): number => A + ((count + 7) & ~7) * 4;
  const load = (src: Float32Array, off: number, count: number): void => acc.set(src.subarray(off, off + count));
  const storeTo = (dst: Float32Array, off: number, count: number): void => dst.set(count === pieceElems ? acc : acc.subarray(0, count), off);
  const stagedF32 = new Float32Array(memory.buffer, S, pieceElems);
  const onHome = (dst: Float32Array): boolean => dst.buffer === memory.buffer;
  /**
   * Runs `pass(d, n, at)` over dst[off, off + count) in 8-lane blocks: in place where dst lives
   * in this memory (the whole blocks, then the last 0-7 values through A, so nothing past the
   * piece is touched), else through the working copy A. `at` = the piece's element index of
   * d[0], for the staging (S) and half output (H) offsets. The f16 loops step 8 values at a time.
   */
  const blocks = (dst: Float32Array, off: number, count: number, pass: (d: number, n: number, at: number) => void, writeBack = true): void => {
    let whole = 0;
    if (onHome(dst)) {
      whole = count & ~7;
      if (whole) pass(dst.byteOffset + off * 4, whole, 0);
      if (whole === count) return;
    }
    const rest = count - whole;
    load(dst, off + whole, rest);
    pass(A, (rest + 7) & ~7, whole);
    if (writeBack) storeTo(dst, off + whole, rest);
  };
  return {
    name: 'wasm-simd',
    ...(home ? { home: memory.buffer } : {}),
    staging: new Uint8Array(memory.buffer, S, pieceElems * 4),
    addF32(dst, off, count, divisor) {
      if (onHome(dst)) {
        // In place: whole f32x4 lanes in wasm, the last 0-3 in JS (an f32 sum or quotient rounded
        // from f64 is the correctly rounded f32 result, so both agree bit for bit).
        const d = dst.byteOffset + off * 4;
        const whole = count & ~3;
        addF32(d, S, d + whole * 4);
        if (divisor) divF32(d, bitsOf(divisor), d + whole * 4);
        for (let i = whole; i < count; i++) {
          dst[off + i] = dst[off + i]! + stagedF32[i]!;
          if (divisor) dst[off + i] = dst[off + i]! / divisor;
        }
        return;
      }
      load(dst, off, count);
      addF32(A, S, endF32(count));
      if (divisor) divF32(A, bitsOf(divisor), endF32(count));
      storeTo(dst, off, count);
    },
    addF16(dst, off, count, opts = {}) {
      blocks(dst, off, count, (d, n, at) => {
        addF16(d, S + at * 2, d + n * 4);
        if (opts.divisor) divF32(d, bitsOf(opts.divisor), d + n * 4);
        if (opts.out) {
          encF16(H + at * 2, d, H + (at + n) * 2);
          if (opts.round) decF16(d, H + at * 2, d + n * 4);
        }
      });
      if (opts.out) opts.out.set(count === pieceElems ? halves : halves.subarray(0, count));
    },
    decodeF16(dst, off, count) {
      blocks(dst, off, count, (d, n, at) => decF16(d, S + at * 2, d + n * 4));
    },
    encodeF16(src, off, count, out) {
      blocks(src, off, count, (d, n, at) => encF16(H + at * 2, d, H + (at + n) * 2), false);
      out.set(count === pieceElems ? halves : halves.subarray(0, count));
    },
  };
}
