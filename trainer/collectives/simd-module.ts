// A tiny hand-assembled WebAssembly SIMD module with the ring's inner loops. Hand-assembled
// because it is well under 1 KB and a wasm toolchain would be a large dependency for it; every
// function is checked against the scalar code in reduce-kernel.test.ts (all 65536 halves, every
// f32 exponent at the rounding boundaries, random/edge floats). All functions loop
// `while (d < dEnd)`; pointers need not be aligned.
//
//   add_f32(d, s, dEnd)  f32 d[i] += s[i]                  (4 lanes per step)
//   add_f16(d, s, dEnd)  f32 d[i] += half s[i]             (8 lanes per step)
//   dec_f16(d, s, dEnd)  f32 d[i]  = half s[i]
//   enc_f16(d, s, dEnd)  half d[i] = f32 s[i], RNE         (d steps 16 bytes, s 32)
//   div_f32(d, s, dEnd)  f32 d[i] /= f32 with bits s       (the average's divisor)
//
// The half conversions are M. Maratyszcza's fp16_ieee_to_fp32_value / fp16_ieee_from_fp32_value
// (the FP16 library, also PyTorch's c10::Half): they let the FPU do the rounding, so they take
// fewer lane ops than the integer algorithms of fp16.ts, and give the same bits.

import { FunctionConstants, I32, V128, V128Globals, advance, f32x4, get, i16x8, i32, i32x4, load, moduleBytes, set, store, v128, whileBelow } from '../util/wasm-asm';

// Locals: 0 d, 1 s, 2 dEnd (params), 3..8 v128 temporaries, then the function's constants.
const D = 0;
const S = 1;
const END = 2;
const TEMPS = 6;
const T0 = 3;
const T1 = 4;
const T2 = 5;
const T3 = 6;
const T4 = 7;
const T5 = 8;
const op = {
  and: v128.and, or: v128.or, xor: v128.xor, bitselect: v128.bitselect,
  i32lt_s: i32x4.ltS, i32gt_s: i32x4.gtS, maxS: i32x4.maxS,
  narrowU: i16x8.narrowI32x4U, extLowU: i32x4.extendLowI16x8U, extHighU: i32x4.extendHighI16x8U,
  shl: i32x4.shl, shrU: i32x4.shrU, add: i32x4.add,
  fadd: f32x4.add, fsub: f32x4.sub, fmul: f32x4.mul, fdiv: f32x4.div, splat: i32x4.splat,
};
const shl = (n: number): number[] => [...i32.const(n), ...op.shl];
const shrU = (n: number): number[] => [...i32.const(n), ...op.shrU];

/** The module's constants; each kernel's live in locals after its temporaries (V128Globals says why not inline). */
const constants = new V128Globals();

/**
 * i32x4 of half bits (local h, zero-extended) → f32 bits on the stack. Uses local t.
 * M. Maratyszcza's fp16_ieee_to_fp32_value (FP16 library; PyTorch's c10::Half uses it): normal
 * halves are rebiased with one multiply by 2^-112, subnormals come out of the FPU exactly as
 * bits(m | 0.5f) − 0.5f.
 */
function halfToFloat(k: FunctionConstants, h: number, t: number): number[] {
  return [
    // subnormal (and zero): bits((h << 17 >> 17) | 0.5f) − 0.5f  (h << 17 >> 17 = the magnitude)
    ...get(h), ...shl(17), ...set(t), ...get(t), ...shrU(17), ...k.u32(0x3f000000), ...op.or, ...k.f32(0.5), ...op.fsub,
    // normal, inf, nan: bits((h << 17 >> 4) + (224 << 23)) × 2^-112
    ...get(t), ...shrU(4), ...set(t), ...get(t), ...k.u32(0x70000000), ...op.add, ...k.f32(2 ** -112), ...op.fmul,
    ...get(t), ...k.u32(0x00800000), ...op.i32lt_s, ...op.bitselect, // exponent 0: the subnormal value
    ...get(h), ...k.u32(0x8000), ...op.and, ...shl(16), ...op.or, // sign
  ];
}

/**
 * v128 of f32 (local x) → i32x4 of half bits on the stack. Uses locals a, b.
 * M. Maratyszcza's fp16_ieee_from_fp32_value: scaling |x| by 2^112 · 2^-110 sends what overflows
 * the half range to inf, and adding a power of two chosen from x's exponent (never below 2^-14)
 * lines the half's last mantissa bit up with the f32's, so the FPU's own round-to-nearest-even
 * rounds normals and subnormals alike. Bit-identical to fp16.ts's encoder (reduce-kernel.test.ts
 * sweeps every exponent at every rounding boundary).
 */
function floatToHalf(k: FunctionConstants, x: number, a: number, b: number): number[] {
  return [
    ...get(x), ...k.u32(0x7fffffff), ...op.and, ...set(a), // a = |x| bits
    ...k.u32(0x7e00), // nan (selected below)
    // 2^(max(e, −14) − 13) + |x|·4 (0 or inf outside the range): the FPU rounds at the half's ulp
    ...get(a), ...k.u32(0x7f800000), ...op.and, ...k.u32(0x38800000), ...op.maxS, ...k.u32(0x07800000), ...op.add,
    ...get(a), ...k.f32(2 ** 112), ...op.fmul, ...k.f32(2 ** -110), ...op.fmul,
    ...op.fadd, ...set(b),
    ...get(b), ...shrU(13), ...k.u32(0x7c00), ...op.and, ...get(b), ...k.u32(0x0fff), ...op.and, ...op.add, // exponent + mantissa
    ...get(a), ...k.u32(0x7f800000), ...op.i32gt_s, ...op.bitselect, // nan vs the rest
    ...get(x), ...get(a), ...op.xor, ...shrU(16), ...op.or, // sign
  ];
}

function loop(body: number[], dStep: number, sStep: number): number[] {
  return whileBelow(D, END, [...body, ...advance(D, dStep), ...advance(S, sStep)]);
}

interface Kernel {
  code: number[];
  constants: number;
}

/** A kernel whose loop body uses constants from `k`: their locals are set before the loop. */
function kernel(build: (k: FunctionConstants) => number[]): Kernel {
  const k = new FunctionConstants(constants, 3 + TEMPS);
  const body = build(k);
  return { code: [...k.prologue(), ...body], constants: k.count };
}

const addF32 = kernel(() => loop(store(D, 0, [...load(D), ...load(S), ...op.fadd]), 16, 16));
const convertHalves = (withAdd: boolean): Kernel =>
  kernel((k) => {
    const one = (ext: number[], off: number): number[] =>
      store(D, off, [
        ...(withAdd ? load(D, off) : []),
        ...load(S), ...ext, ...set(T0), ...halfToFloat(k, T0, T1),
        ...(withAdd ? op.fadd : []),
      ]);
    return loop([...one(op.extLowU, 0), ...one(op.extHighU, 16)], 32, 16);
  });
const encF16 = kernel((k) =>
  loop(
    store(D, 0, [
      ...load(S, 0), ...set(T0), ...floatToHalf(k, T0, T1, T2), ...set(T3),
      ...load(S, 16), ...set(T5), ...floatToHalf(k, T5, T1, T2), ...set(T4),
      ...get(T3), ...get(T4), ...op.narrowU,
    ]),
    16,
    32,
  ),
);

const divF32 = kernel(() => loop(store(D, 0, [...load(D), ...get(S), ...op.splat, ...op.fdiv]), 16, 0));

export const SIMD_EXPORTS = ['add_f32', 'add_f16', 'dec_f16', 'enc_f16', 'div_f32'] as const;

/** The module bytes; it imports its memory as env.mem (`pages` × 64 KiB fixed, or any growable one). */
export function simdModuleBytes(memory: number | { growable: true }): Uint8Array {
  const kernels = [addF32, convertHalves(true), convertHalves(false), encF16, divF32];
  return moduleBytes(
    memory,
    SIMD_EXPORTS.map((n, i) => ({ name: n, params: [I32, I32, I32], locals: [[TEMPS + kernels[i]!.constants, V128]], code: kernels[i]!.code })),
    constants.inits,
  );
}
