// A tiny hand-assembled WebAssembly SIMD module with the ring's inner loops. Hand-assembled
// because it is ~150 bytes and a wasm toolchain would be a large dependency for it; every
// function is checked against the scalar code in reduce-kernel.test.ts (all 65536 halves, and
// random/edge floats). All functions loop `while (d < dEnd)` over 16-byte-aligned pointers.
//
//   add_f32(d, s, dEnd)  f32 d[i] += s[i]                  (4 lanes per step)
//   add_f16(d, s, dEnd)  f32 d[i] += half s[i]             (8 lanes per step)
//   dec_f16(d, s, dEnd)  f32 d[i]  = half s[i]
//   enc_f16(d, s, dEnd)  half d[i] = f32 s[i], RNE         (d steps 16 bytes, s 32)
//   div_f32(d, s, dEnd)  f32 d[i] /= f32 with bits s       (the average's divisor)
//
// The half conversions are F. Giesen's branch-free half_to_float / float_to_half_fast3_rtne,
// the same algorithms as fp16.ts, with selects instead of branches.

import { I32, V128, advance, f32x4, get, i32x4, load, moduleBytes, set, simd, store, v128, whileBelow } from '../util/wasm-asm';

// Locals: 0 d, 1 s, 2 dEnd (params), 3..8 v128 temporaries.
const D = 0;
const S = 1;
const END = 2;
/** v128.const with the same u32 in all four lanes. */
const splat = (u32: number): number[] => i32x4.const(u32, u32, u32, u32);
const op = {
  and: v128.and, or: v128.or, xor: v128.xor, bitselect: v128.bitselect,
  i32eq: simd(0x37), i32lt_s: simd(0x39), i32gt_s: simd(0x3b), i32ge_s: simd(0x3f),
  narrowU: simd(0x86), extLowU: simd(0xa9), extHighU: simd(0xaa),
  shl: simd(0xab), shrU: simd(0xad), add: i32x4.add, sub: i32x4.sub,
  fadd: f32x4.add, fsub: f32x4.sub, fdiv: f32x4.div, splat: i32x4.splat,
};
const shl = (n: number): number[] => [0x41, n, ...op.shl];
const shrU = (n: number): number[] => [0x41, n, ...op.shrU];

/** i32x4 of half bits (local h) → f32 bits, leaves result on the stack. Uses locals o, e. */
function halfToFloat(h: number, o: number, e: number): number[] {
  return [
    ...get(h), ...splat(0x7fff), ...op.and, ...shl(13), ...set(o), // o = (h & 0x7fff) << 13
    ...get(o), ...splat(0x0f800000), ...op.and, ...set(e), // e = exponent bits
    ...get(o), ...splat(0x38000000), ...op.add, // o + (127-15)<<23
    ...get(e), ...splat(0x0f800000), ...op.i32eq, ...splat(0x38000000), ...op.and, ...op.add, ...set(o), // inf/nan: + (128-16)<<23
    // zero/subnormal: (o + 1<<23) as float − 2^-14
    ...get(o), ...splat(0x00800000), ...op.add, ...splat(0x38800000), ...op.fsub,
    ...get(o),
    ...get(e), ...splat(0), ...op.i32eq,
    ...op.bitselect,
    ...get(h), ...splat(0x8000), ...op.and, ...shl(16), ...op.or, // sign
  ];
}

/** v128 of f32 (local x) → i32x4 of half bits on the stack. Uses locals sg, f. */
function floatToHalf(x: number, sg: number, f: number): number[] {
  return [
    ...get(x), ...splat(0x80000000), ...op.and, ...set(sg),
    ...get(x), ...get(sg), ...op.xor, ...set(f), // f = |x| bits
    // big (≥ 65536, inf, nan): nan → 0x7e00, else 0x7c00
    ...splat(0x7e00), ...splat(0x7c00), ...get(f), ...splat(0x7f800000), ...op.i32gt_s, ...op.bitselect,
    // subnormal result: bits(|x| + 0.5f) − bits(0.5f)
    ...get(f), ...splat(0x3f000000), ...op.fadd, ...splat(0x3f000000), ...op.sub,
    // normal: (f − (112<<23) + 0xfff + ((f >> 13) & 1)) >> 13
    ...get(f), ...splat(0xc8000fff), ...op.add, ...get(f), ...shrU(13), ...splat(1), ...op.and, ...op.add, ...shrU(13),
    ...get(f), ...splat(0x38800000), ...op.i32lt_s, ...op.bitselect, // subnormal vs normal
    ...get(f), ...splat(0x47800000), ...op.i32ge_s, ...op.bitselect, // big vs the rest
    ...get(sg), ...shrU(16), ...op.or,
  ];
}

function loop(body: number[], dStep: number, sStep: number): number[] {
  return whileBelow(D, END, [...body, ...advance(D, dStep), ...advance(S, sStep)]);
}

const T0 = 3;
const T1 = 4;
const T2 = 5;
const T3 = 6;
const T4 = 7;

const addF32 = loop(store(D, 0, [...load(D), ...load(S), ...op.fadd]), 16, 16);
const convertHalves = (withAdd: boolean): number[] => {
  const one = (ext: number[], off: number): number[] =>
    store(D, off, [
      ...(withAdd ? load(D, off) : []),
      ...load(S), ...ext, ...set(T0), ...halfToFloat(T0, T1, T2),
      ...(withAdd ? op.fadd : []),
    ]);
  return loop([...one(op.extLowU, 0), ...one(op.extHighU, 16)], 32, 16);
};
const encF16 = loop(
  store(D, 0, [
    ...load(S, 0), ...set(T0), ...floatToHalf(T0, T1, T2), ...set(T3),
    ...load(S, 16), ...set(T0), ...floatToHalf(T0, T1, T2), ...set(T4),
    ...get(T3), ...get(T4), ...op.narrowU,
  ]),
  16,
  32,
);

const divF32 = loop(store(D, 0, [...load(D), ...get(S), ...op.splat, ...op.fdiv]), 16, 0);

export const SIMD_EXPORTS = ['add_f32', 'add_f16', 'dec_f16', 'enc_f16', 'div_f32'] as const;

/** The module bytes; it imports its memory as env.mem (`pages` × 64 KiB fixed, or any growable one). */
export function simdModuleBytes(memory: number | { growable: true }): Uint8Array {
  const codes = [addF32, convertHalves(true), convertHalves(false), encF16, divF32];
  return moduleBytes(
    memory,
    SIMD_EXPORTS.map((n, i) => ({ name: n, params: [I32, I32, I32], locals: [[6, V128]], code: codes[i] as number[] })),
  );
}
