// IEEE 754 binary16 conversion for the wire. Encoding rounds to nearest, ties to even, keeps
// inf/nan (nan stays a quiet nan) and produces subnormals; it is F. Giesen's
// float_to_half_fast3_rtne done with integer ops on the float's bits, so the common (normal)
// case has no branches beyond the range checks. Decoding is one lookup in a 65536-entry table.

const scratchF = new Float32Array(1);
const scratchU = new Uint32Array(scratchF.buffer);

/** Bits of the f32 with bit pattern `bits` rounded to binary16. */
function encodeBits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  let f = bits & 0x7fffffff;
  if (f >= 0x47800000) {
    // ≥ 65536 (or inf/nan): values in [65520, 65536) overflow to inf in the normal branch below.
    return sign | (f > 0x7f800000 ? 0x7e00 : 0x7c00);
  }
  if (f < 0x38800000) {
    // Below the smallest normal half: adding 0.5 lines the half's subnormal ulp (2^-24) up with
    // the f32 ulp of 0.5, so the FPU's own round-to-nearest-even does the rounding.
    scratchU[0] = f;
    scratchF[0] = scratchF[0] + 0.5;
    return sign | (scratchU[0] - 0x3f000000);
  }
  const mantOdd = (f >>> 13) & 1;
  f += -0x38000000 + 0xfff + mantOdd; // rebias exponent 127 → 15 and round
  return sign | (f >>> 13);
}

export function f32ToF16(value: number): number {
  scratchF[0] = value;
  return encodeBits(scratchU[0]);
}

function buildDecodeTable(): Float32Array {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) table[h] = sign * mant * 2 ** -24;
    else if (exp === 31) table[h] = mant === 0 ? sign * Infinity : NaN;
    else table[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return table;
}

let decodeTable: Float32Array | undefined;

/**
 * The f16 bits → f32 value table, built on first use: every rank and helper process loads this module,
 * and only fp16 exchange needs it (building it took 10–31 ms of a tiny rank's start, session 14).
 */
export function f16DecodeTable(): Float32Array {
  return (decodeTable ??= buildDecodeTable());
}

export function f16ToF32(bits: number): number {
  return f16DecodeTable()[bits & 0xffff]!;
}

/** dst[dstOff + i] = f16(src[srcOff + i]) for i < count. `srcBits` is a Uint32Array view of the f32 data. */
export function encodeF16(srcBits: Uint32Array, srcOff: number, dst: Uint16Array, dstOff: number, count: number): void {
  for (let i = 0; i < count; i++) dst[dstOff + i] = encodeBits(srcBits[srcOff + i]!);
}

export function decodeF16(src: Uint16Array, srcOff: number, dst: Float32Array, dstOff: number, count: number): void {
  const t = f16DecodeTable();
  for (let i = 0; i < count; i++) dst[dstOff + i] = t[src[srcOff + i]!]!;
}

/** dst[dstOff + i] += f32(src[srcOff + i]): the wire carries halves, the sum stays f32. */
export function addF16Into(src: Uint16Array, srcOff: number, dst: Float32Array, dstOff: number, count: number): void {
  const t = f16DecodeTable();
  for (let i = 0; i < count; i++) dst[dstOff + i]! += t[src[srcOff + i]!]!;
}

/** Round every value of `buf[off, off+count)` through binary16 in place (what a receiver would see). */
export function roundThroughF16(bits: Uint32Array, buf: Float32Array, off: number, count: number): void {
  const t = f16DecodeTable();
  for (let i = 0; i < count; i++) buf[off + i] = t[encodeBits(bits[off + i]!)]!;
}
