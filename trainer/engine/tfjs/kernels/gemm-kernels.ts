// A single-precision GEMM in hand-written WebAssembly SIMD that runs directly on tfjs-backend-wasm's
// heap (no copies in or out), plus the im2col/col2im kernels the 'gemm' convolutions use
// (conv-gemm.ts). Why: tfjs's XNNPACK is built without FMA, and the stock-op formulations of the
// conv gradients spend as much time in Transpose / StridedSlice / Pad / Slice as in the matMuls.
// With relaxed SIMD (`f32x4.relaxed_madd`; V8 flag --experimental-wasm-relaxed-simd on Node 20)
// the inner product is one fused multiply-add; without it the same kernel uses f32x4.mul +
// f32x4.add (gemmInfo() says which).
//
//   C[M,N] (+)= A[M,K] · B[K,N], f32, any strides for A and B (so Xᵀ·dY and dY·Wᵀ need no transpose)
//
// GotoBLAS structure: B is packed per (KC × NC) block into 8-column panels, A per KC into MR-row
// panels; the microkernel keeps an MR×8 tile of C in 2·MR v128 registers and streams one A panel
// against all B panels of the block. Packing absorbs the strides, so transposed operands cost the
// same as plain ones.
//
// MR = 4 and one k step per loop iteration (U = 1), because of how V8's TurboFan compiles it (read
// with node --print-wasm-code): memory loads stay in program order at the top of the loop body
// while the FMAs sink to their uses, so every load of an iteration is live at once. MR = 6 with 4
// k steps unrolled (the textbook 12-accumulator tile) needed 12 + 8 + 24 registers and spilled
// ~40 vectors to the stack per iteration; MR = 4, U = 1 needs 8 accumulators + 2 B + 4 broadcast A
// = 14 of x86's 16 xmm registers (V8 keeps one as scratch) and spills none. Measured on ResNet-50's
// 64² GEMM shapes: 35-41 GFLOP/s against 26-31 for MR = 6, U = 4; MR = 5 or 3, U = 2 were slower.
//
// Measured (bench/results/gemm.md): FMA is worth ~1.1-1.3× over mul+add on a plain GEMM here.
// PyTorch's oneDNN (AVX-512) does 90-150 GFLOP/s on one core on the same convolutions: 128-bit
// wasm SIMD cannot close that gap.
import * as tf from '@tensorflow/tfjs-core';
import { buildModule, forRange, inc, op, relaxedSimdAvailable, wasmApi, type Code, type FuncDef, type WasmMemory } from '../../../util/wasm-asm';

export const MR = 4;
export const NR = 8;
const KC = 256;
const NC = 512;

const U = 1; // k steps per loop iteration (see the top of the file: more spills)

/**
 * kernel_<mr>(ap, bp, c, ldc, kc, np, acc): for each of np packed B panels j (kc×8 floats each,
 * consecutive), the C tile [mr×8] at c + 32·j (row stride ldc bytes) = (acc ? C : 0) + Ap · Bp_j,
 * with Ap the packed [kc × mr] A panel. Both operands are always packed: reading a transposed A
 * (colᵀ) or a row-major B in place measured slower on every ResNet-50 shape but equal on a few.
 */
function microkernel(mr: number, fma: boolean): FuncDef {
  const [AP, BP, C, LDC, KCL, NP, ACC, K, A, CC] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const acc = (r: number, h: number): number => 10 + 2 * r + h;
  const B0 = 10 + 2 * mr;
  const B1 = B0 + 1;
  const AV = B0 + 2;
  const madd = (r: number, h: number): Code =>
    fma
      ? [...op.get(AV), ...op.get(h ? B1 : B0), ...op.get(acc(r, h)), ...op.f32x4RelaxedMadd, ...op.set(acc(r, h))]
      : [...op.get(AV), ...op.get(h ? B1 : B0), ...op.f32x4Mul, ...op.get(acc(r, h)), ...op.f32x4Add, ...op.set(acc(r, h))];
  /** One k step reading A at a+ao and B at bp+bo. */
  const step = (ao: number, bo: number): Code => [
    ...op.get(BP), ...op.v128Load(bo), ...op.set(B0),
    ...op.get(BP), ...op.v128Load(bo + 16), ...op.set(B1),
    ...Array.from({ length: mr }, (_, r) => [...op.get(A), ...op.load32Splat(ao + 4 * r), ...op.set(AV), ...madd(r, 0), ...madd(r, 1)]).flat(),
  ];
  const rows = (each: (r: number) => Code): Code => [
    ...op.get(C), ...op.set(CC),
    ...Array.from({ length: mr }, (_, r) => [...each(r), ...inc(CC, op.get(LDC))]).flat(),
  ];
  const body: Code = op.block(op.loop(
    op.get(NP), op.eqz, op.brIf(1),
    // acc ? load the C tile : zeros
    op.get(ACC),
    op.ifElse(
      rows((r) => [...op.get(CC), ...op.v128Load(0), ...op.set(acc(r, 0)), ...op.get(CC), ...op.v128Load(16), ...op.set(acc(r, 1))]),
      Array.from({ length: mr }, (_, r) => [...op.v128Zero, ...op.set(acc(r, 0)), ...op.v128Zero, ...op.set(acc(r, 1))]).flat(),
    ),
    op.get(AP), op.set(A), op.get(KCL), op.set(K),
    // k unrolled by U, then (U > 1) the remainder one at a time; bp runs on through the panels.
    op.block(op.loop(
      op.get(K), op.i32(U), op.ltU, op.brIf(1),
      ...Array.from({ length: U }, (_, s) => step(s * mr * 4, s * 32)),
      inc(A, U * mr * 4), inc(BP, U * 32), inc(K, -U),
      op.br(0),
    )),
    U > 1
      ? op.block(op.loop(
        op.get(K), op.eqz, op.brIf(1),
        step(0, 0),
        inc(A, mr * 4), inc(BP, 32), inc(K, -1),
        op.br(0),
      ))
      : [],
    rows((r) => [...op.get(CC), ...op.get(acc(r, 0)), ...op.v128Store(0), ...op.get(CC), ...op.get(acc(r, 1)), ...op.v128Store(16)]),
    inc(C, 32), inc(NP, -1),
    op.br(0),
  ));
  return { name: `kernel_${mr}`, params: 7, i32Locals: 3, v128Locals: 2 * mr + 3, body };
}

/** pack_a_<mr>(dst, src, rs, ks, kc): dst[k·mr + r] = src[r·rs + k·ks] (strides in bytes). */
function packA(mr: number): FuncDef {
  const [DST, SRC, RS, KS, KCL] = [0, 1, 2, 3, 4];
  const p = (r: number): number => (r === 0 ? SRC : 5 + r - 1);
  const body: Code = [
    ...Array.from({ length: mr - 1 }, (_, i) => [...op.get(p(i)), ...op.get(RS), ...op.add, ...op.set(p(i + 1))]).flat(),
    ...op.block(op.loop(
      op.get(KCL), op.eqz, op.brIf(1),
      ...Array.from({ length: mr }, (_, r) => [...op.get(DST), ...op.get(p(r)), ...op.f32Load(0), ...op.f32Store(4 * r), ...inc(p(r), op.get(KS))]),
      inc(DST, 4 * mr), inc(KCL, -1),
      op.br(0),
    )),
  ];
  return { name: `pack_a_${mr}`, params: 5, i32Locals: Math.max(0, mr - 1), body };
}

/**
 * pack_b(dst, src, ks, ns, kc, np): np panels of 8 columns, each kc rows of 8 consecutive floats:
 * dst[(j·kc + k)·8 + t] = src[k·ks + (8j + t)·ns]. Contiguous rows (ns = 4) copy two v128 per row.
 */
function packB(): FuncDef {
  const [DST, SRC, KS, NS, KCL, NP, S, K, J] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const contiguous: Code = op.block(op.loop(
    op.get(K), op.eqz, op.brIf(1),
    op.get(DST), op.get(S), op.v128Load(0), op.v128Store(0),
    op.get(DST), op.get(S), op.v128Load(16), op.v128Store(16),
    inc(S, op.get(KS)), inc(DST, 32), inc(K, -1),
    op.br(0),
  ));
  const gathered: Code = op.block(op.loop(
    op.get(K), op.eqz, op.brIf(1),
    ...Array.from({ length: NR }, (_, t) => [...op.get(DST), ...op.get(S), ...(t ? [...op.get(NS), ...op.i32(t), ...op.mul, ...op.add] : []), ...op.f32Load(0), ...op.f32Store(4 * t)]),
    inc(S, op.get(KS)), inc(DST, 32), inc(K, -1),
    op.br(0),
  ));
  const body: Code = [
    ...op.i32(0), ...op.set(J),
    ...op.block(op.loop(
      op.get(J), op.get(NP), op.eq, op.brIf(1),
      // S = src + 8·j·ns
      op.get(SRC), op.get(J), op.i32(8), op.mul, op.get(NS), op.mul, op.add, op.set(S),
      op.get(KCL), op.set(K),
      op.get(NS), op.i32(4), op.eq,
      op.ifElse(contiguous, gathered),
      inc(J, 1),
      op.br(0),
    )),
  ];
  return { name: 'pack_b', params: 6, i32Locals: 3, body };
}

/**
 * The im2col family over NHWC grids, one (pixel, tap) segment of c floats at a time:
 *   im2col(col, grid, n, h, w, c, k, s, p, oh, ow): col[(b,oy,ox), (ky,kx,ci)] = grid[b, oy·s+ky−p, ox·s+kx−p, ci] (0 outside)
 *   col2im(col, grid, ...):                          grid[b, oy·s+ky−p, ox·s+kx−p, ci] += col[(b,oy,ox), (ky,kx,ci)] (outside dropped)
 * (col is [n·oh·ow, k·k·c] row-major: the GEMM operand of a k×k conv; k = 1 is a strided subsample.)
 */
function convCols(scatterAdd: boolean): FuncDef {
  const [COL, GRID, N, H, W, C, K, S, P, OH, OW] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const [B, OY, OX, KY, KX, IY, IX, Q, CB, CV, PTR] = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21];
  const at = (base: number): Code => [...op.get(base), ...op.get(Q), ...op.add];
  const vecPart = (body: Code): Code => op.block(op.loop(op.get(Q), op.get(CV), op.geU, op.brIf(1), body, inc(Q, 16), op.br(0)));
  const tail = (body: Code): Code => op.block(op.loop(op.get(Q), op.get(CB), op.geU, op.brIf(1), body, inc(Q, 4), op.br(0)));
  const inside: Code = scatterAdd
    ? [
      ...op.i32(0), ...op.set(Q),
      ...vecPart([...at(PTR), ...at(PTR), ...op.v128Load(0), ...at(COL), ...op.v128Load(0), ...op.f32x4Add, ...op.v128Store(0)]),
      ...tail([...at(PTR), ...at(PTR), ...op.f32Load(0), ...at(COL), ...op.f32Load(0), ...op.f32Add, ...op.f32Store(0)]),
    ]
    : [
      ...op.i32(0), ...op.set(Q),
      ...vecPart([...at(COL), ...at(PTR), ...op.v128Load(0), ...op.v128Store(0)]),
      ...tail([...at(COL), ...at(PTR), ...op.f32Load(0), ...op.f32Store(0)]),
    ];
  const outside: Code = scatterAdd
    ? []
    : [
      ...op.i32(0), ...op.set(Q),
      ...vecPart([...at(COL), ...op.v128Zero, ...op.v128Store(0)]),
      ...tail([...at(COL), ...op.f32Zero, ...op.f32Store(0)]),
    ];
  const body: Code = [
    ...op.get(C), ...op.i32(4), ...op.mul, ...op.set(CB),
    ...op.get(CB), ...op.i32(~15), ...op.and, ...op.set(CV),
    ...forRange(B, op.get(N), forRange(OY, op.get(OH), forRange(OX, op.get(OW), forRange(KY, op.get(K),
      // iy = oy·s + ky − p
      op.get(OY), op.get(S), op.mul, op.get(KY), op.add, op.get(P), op.sub, op.set(IY),
      forRange(KX, op.get(K),
        op.get(OX), op.get(S), op.mul, op.get(KX), op.add, op.get(P), op.sub, op.set(IX),
        // unsigned compares: negative coordinates are huge
        op.get(IY), op.get(H), op.ltU, op.get(IX), op.get(W), op.ltU, op.and,
        op.ifElse(
          [
            // ptr = grid + ((b·h + iy)·w + ix)·c·4
            ...op.get(GRID), ...op.get(B), ...op.get(H), ...op.mul, ...op.get(IY), ...op.add, ...op.get(W), ...op.mul, ...op.get(IX), ...op.add, ...op.get(CB), ...op.mul, ...op.add, ...op.set(PTR),
            ...inside,
          ],
          outside,
        ),
        inc(COL, op.get(CB)),
      ),
    )))),
  ];
  return { name: scatterAdd ? 'col2im' : 'im2col', params: 11, i32Locals: 11, body };
}

export function gemmModuleBytes(fma: boolean): Uint8Array<ArrayBuffer> {
  const funcs: FuncDef[] = [];
  for (let mr = 1; mr <= MR; mr++) {
    funcs.push(packA(mr));
    funcs.push(microkernel(mr, fma));
  }
  funcs.push(packB(), convCols(false), convCols(true));
  return buildModule(funcs);
}

type KernelFn = (ap: number, bp: number, c: number, ldc: number, kc: number, np: number, acc: number) => void;
type PackAFn = (dst: number, src: number, rs: number, ks: number, kc: number) => void;
type PackBFn = (dst: number, src: number, ks: number, ns: number, kc: number, np: number) => void;
/** (col, grid, n, h, w, c, k, s, p, oh, ow), see convCols. */
export type ColsFn = (col: number, grid: number, n: number, h: number, w: number, c: number, k: number, s: number, p: number, oh: number, ow: number) => void;

interface EmscriptenHeap {
  asm: { memory: WasmMemory };
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  /** The backend's C++ tensor registry (tensor-io.ts overwrite re-registers a tensor to run its disposal callbacks). */
  tfjs?: { registerTensor(id: number, size: number, memoryOffset: number): void; disposeData(id: number): void };
}
/** The bits of tfjs-backend-wasm read here and in tensor-io.ts: the heap and where each tensor lives in it. */
interface WasmBackendLike {
  wasm: EmscriptenHeap;
  dataIdMap: { get(id: unknown): { id: number; memoryOffset: number | null; dtype: string; refCount: number } | undefined };
}

/** A matrix operand in the wasm heap: element (i, j) is at ptr + i·rs + j·cs bytes. */
export interface Operand {
  ptr: number;
  rs: number;
  cs: number;
}

/** A heap block grown on demand (never shrunk); its pointer is valid until the next get() that grows it. */
export class Scratch {
  private ptr = 0;
  private bytes = 0;
  constructor(private readonly heap: EmscriptenHeap) {}

  /** A 64-byte-aligned pointer to at least `bytes` bytes. */
  get(bytes: number): number {
    if (bytes > this.bytes) {
      if (this.ptr) this.heap._free(this.ptr);
      this.bytes = Math.max(bytes, Math.ceil(this.bytes * 1.5));
      this.ptr = this.heap._malloc(this.bytes + 64) >>> 0;
      if (!this.ptr) throw new Error(`wasm gemm: cannot allocate ${this.bytes} bytes of scratch`);
    }
    return (this.ptr + 63) & ~63;
  }
}

export class WasmGemm {
  readonly fma: boolean;
  private readonly kernels: KernelFn[] = [];
  private readonly packAs: PackAFn[] = [];
  private readonly packB: PackBFn;
  /** im2col / col2im over NHWC grids in the heap (see convCols). */
  readonly im2col: ColsFn;
  readonly col2im: ColsFn;
  private readonly packScratch: Scratch;
  /** Scratch for callers' im2col matrices (separate from the packing scratch the GEMM itself uses). */
  readonly colScratch: Scratch;

  constructor(private readonly heap: EmscriptenHeap, fma: boolean) {
    this.fma = fma;
    const inst = new wasmApi.Instance(new wasmApi.Module(gemmModuleBytes(fma)), { env: { mem: heap.asm.memory } });
    const ex = inst.exports;
    for (let mr = 1; mr <= MR; mr++) {
      this.kernels[mr] = ex[`kernel_${mr}`] as KernelFn;
      this.packAs[mr] = ex[`pack_a_${mr}`] as PackAFn;
    }
    this.packB = ex['pack_b'] as PackBFn;
    this.im2col = ex['im2col'] as ColsFn;
    this.col2im = ex['col2im'] as ColsFn;
    this.packScratch = new Scratch(heap);
    this.colScratch = new Scratch(heap);
  }

  /** A Float32Array over the heap (re-made on every call: a tfjs allocation may grow the memory and detach older views). */
  view(ptr: number, length: number): Float32Array {
    return new Float32Array(this.heap.asm.memory.buffer, ptr, length);
  }

  /**
   * C (+)= A·B with A [m×k], B [k×n], C [m×n] (C's column stride must be 4 bytes: rows contiguous).
   * n must be a multiple of 8.
   */
  gemm(m: number, n: number, k: number, a: Operand, b: Operand, c: { ptr: number; ldc: number }, accumulate = false): void {
    if (n % NR !== 0) throw new Error(`wasm gemm: n=${n} is not a multiple of ${NR}`);
    if (m === 0 || n === 0) return;
    if (k === 0) {
      if (!accumulate) for (let i = 0; i < m; i++) this.view(c.ptr + i * c.ldc, n).fill(0);
      return;
    }
    const kcMax = Math.min(KC, k);
    const ncMax = Math.min(NC, n);
    const aBytes = MR * kcMax * 4;
    const base = this.packScratch.get(aBytes + kcMax * ncMax * 4 + 64);
    const ap = base;
    const bp = (base + aBytes + 63) & ~63;
    for (let n0 = 0; n0 < n; n0 += NC) {
      const nc = Math.min(NC, n - n0);
      const np = nc / NR;
      for (let k0 = 0; k0 < k; k0 += KC) {
        const kc = Math.min(KC, k - k0);
        this.packB(bp, b.ptr + k0 * b.rs + n0 * b.cs, b.rs, b.cs, kc, np);
        const acc = accumulate || k0 > 0 ? 1 : 0;
        for (let m0 = 0; m0 < m; m0 += MR) {
          const mr = Math.min(MR, m - m0);
          this.packAs[mr]!(ap, a.ptr + m0 * a.rs + k0 * a.cs, a.rs, a.cs, kc);
          this.kernels[mr]!(ap, bp, c.ptr + m0 * c.ldc + n0 * 4, c.ldc, kc, np, acc);
        }
      }
    }
  }
}

const cached = new Map<boolean, { backend: unknown; gemm: WasmGemm }>();

/** The wasm backend's heap access, or null when the active backend is not tfjs-backend-wasm. */
export function wasmBackend(): WasmBackendLike | null {
  if (tf.getBackend() !== 'wasm') return null;
  const be = tf.backend() as unknown as Partial<WasmBackendLike>;
  return be.wasm?.asm?.memory instanceof wasmApi.Memory && be.dataIdMap ? (be as WasmBackendLike) : null;
}

let forced: boolean | null = null;
/** Tests and benchmarks: force the FMA (true) or mul+add (false) kernels, or back to detection (null). */
export function forceGemmFma(fma: boolean | null): void {
  forced = fma;
}

/** Whether wasmGemm() uses fused multiply-add (relaxed SIMD), and why, for the engine's reports. */
export function gemmInfo(): { fma: boolean; detail: string } {
  const fma = forced ?? relaxedSimdAvailable();
  return {
    fma,
    detail: fma
      ? 'wasm GEMM kernels use relaxed-SIMD FMA (f32x4.relaxed_madd)'
      : `wasm GEMM kernels use f32x4.mul + f32x4.add (${forced === false ? 'FMA disabled' : 'relaxed SIMD unavailable: run node with --experimental-wasm-relaxed-simd for FMA'})`,
  };
}

/** The GEMM bound to the active wasm backend's heap (FMA when relaxed SIMD is available unless `fma` says otherwise). */
export function wasmGemm(fma = forced ?? relaxedSimdAvailable()): WasmGemm {
  const be = wasmBackend();
  if (!be) throw new Error(`wasm gemm: needs the wasm backend (active: ${tf.getBackend()})`);
  let c = cached.get(fma);
  if (!c || c.backend !== be) {
    c = { backend: be, gemm: new WasmGemm(be.wasm, fma) };
    cached.set(fma, c);
  }
  return c.gemm;
}

/** Byte offset of a tensor's data in the wasm heap. */
export function heapPtr(t: Pick<tf.TensorInfo, 'dataId'>): number {
  const be = wasmBackend();
  const d = be?.dataIdMap.get(t.dataId);
  if (!d || d.memoryOffset === null) throw new Error('wasm gemm: tensor is not in the wasm heap');
  return d.memoryOffset;
}

/** A fresh float32 tensor owned by the wasm backend (uninitialised memory: every element must be written). */
export function emptyTensor<R extends tf.Rank>(shape: number[]): tf.Tensor<R> {
  const be = tf.backend() as unknown as { makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo };
  return tf.engine().makeTensorFromTensorInfo(be.makeOutput(shape, 'float32')) as tf.Tensor<R>;
}
