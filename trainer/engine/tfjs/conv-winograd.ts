// The 'winograd' convolution implementations (conv-kernels.ts) for 3×3 stride-1 pad-1 convs on the
// wasm backend: Winograd F(2×2, 3×3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016). Each 2×2 output tile costs 16 multiplies per (cin, cout) pair instead of 36,
// so these convs — ~37% of ResNet-50's FLOPs — need 2.25× fewer multiply-adds than im2col + GEMM.
// Why it matters here: the wasm GEMM already runs near the 128-bit FMA ceiling (gemm-kernels.ts),
// so fewer FLOPs is the only way left to make these layers faster.
//
// With T tiles (n · ⌈h/2⌉ · ⌈w/2⌉), all three passes are 16 independent GEMMs, one per position ξ
// of the 4×4 transformed tile, between "planes" laid out [16][rows][cols]:
//   forward  Y:  V = Bᵀ·d·B (input tiles, [16][T][cin]),  U = G·g·Gᵀ (filter, [16][cin][cout]),
//                M_ξ = V_ξ · U_ξ,  Y = Aᵀ·M·A per tile
//   dx:      the same with dy's tiles and the filter rotated 180° and transposed, which in the
//                transformed domain is U_{p(ξ)}ᵀ with p swapping rows/columns 0 and 3 (G·J = P·G),
//                so the GEMM reads U through strides and nothing is re-transformed
//   dw:      dM = A·dy·Aᵀ per tile ([16][T][cout]),  dU_ξ = V_ξᵀ · dM_ξ,  dW = Gᵀ·dU·G
// The transforms are wasm SIMD kernels over 4 channels at a time (generated from the transform
// matrices below); the GEMMs are gemm-kernels.ts's. Error: F(2×2, 3×3) adds only exact
// halvings/sums, well inside the 1e-4 relative tolerance the gradient tests hold every kernel to.
import type * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from './conv-kernels'; // type only: no runtime import cycle
import { buildModule, forRange, inc, op, wasmApi, type Code, type FuncDef } from './kernel-asm';
import { emptyTensor, heapPtr, Scratch, wasmBackend, wasmGemm, type Operand, type WasmGemm } from './gemm-kernels';

type Matrix = number[][];
const BT: Matrix = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]];
const AT: Matrix = [[1, 1, 1, 0], [0, 1, -1, -1]];
const G: Matrix = [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]];
const transpose = (m: Matrix): Matrix => m[0]!.map((_, j) => m.map((row) => row[j]!));

/** Position ξ = 4a + b of the transformed tile that the rotated filter's position (a, b) reads (p = [3, 1, 2, 0]). */
const ROTATED = Array.from({ length: 16 }, (_, xi) => {
  const p = [3, 1, 2, 0];
  return p[xi >> 2]! * 4 + p[xi & 3]!;
});

/** Whether Winograd applies: 3×3, stride 1, "same" padding, channel counts the SIMD transforms and the GEMM take. */
export function winogradSupports(g: ConvGeometry): boolean {
  return wasmBackend() !== null && g.k === 3 && g.stride === 1 && g.pad === 1 && g.inSize === g.outSize && g.inSize > 1 && g.cin % 8 === 0 && g.cout % 8 === 0;
}

/**
 * xf_<name>(src, dst, n, th, tw, vecs, sImg, sRow, sCol, sI, sJ, dImg, dRow, dCol, dI, dJ):
 * for every unit (b < n, y < th, x < tw) and every 4-float channel vector v < vecs, reads the
 * patch X[i][j] at src + b·sImg + y·sRow + x·sCol + i·sI + j·sJ + 16v, and writes
 * Z = L·X·R at dst + b·dImg + y·dRow + x·dCol + r·dI + s·dJ + 16v (all strides in bytes).
 */
function transformKernel(name: string, L: Matrix, R: Matrix): FuncDef {
  const [SRC, DST, N, TH, TW, VECS, S_IMG, S_ROW, S_COL, S_I, S_J, D_IMG, D_ROW, D_COL, D_I, D_J] = Array.from({ length: 16 }, (_, i) => i);
  const a = L[0]!.length; // patch rows
  const b = R.length; // patch columns
  const p = L.length; // result rows
  const q = R[0]!.length; // result columns
  // i32 locals
  let next = 16;
  const [B, Y, X, V, SP, DP] = Array.from({ length: 6 }, () => next++);
  const srcOff = Array.from({ length: a * b }, () => next++);
  const dstOff = Array.from({ length: p * q }, () => next++);
  const i32Locals = next - 16;
  // v128 locals
  const xs = Array.from({ length: a * b }, () => next++);
  const t1 = Array.from({ length: p * b }, () => next++);
  const v128Locals = next - 16 - i32Locals;

  /** Σ coef·term as f32x4 code (terms are v128 locals; ±1 add/sub, other coefficients multiply). */
  const combination = (terms: [number, number][]): Code => {
    const live = terms.filter(([c]) => c !== 0);
    if (!live.length) return op.v128Zero;
    const code: Code = [];
    live.forEach(([c, local], k) => {
      const mag = Math.abs(c);
      code.push(...op.get(local));
      if (mag !== 1) code.push(...op.f32x4Const(mag), ...op.f32x4Mul);
      if (k === 0) {
        if (c < 0) code.push(...op.f32x4Neg);
      } else code.push(...(c < 0 ? op.f32x4Sub : op.f32x4Add));
    });
    return code;
  };
  const offsets = (locals: number[], cols: number, si: number, sj: number): Code =>
    locals.flatMap((local, e) => [...op.get(si), ...op.i32(Math.floor(e / cols)), ...op.mul, ...op.get(sj), ...op.i32(e % cols), ...op.mul, ...op.add, ...op.set(local)]);
  const perVector: Code = [
    ...xs.flatMap((local, e) => [...op.get(SP), ...op.get(srcOff[e]!), ...op.add, ...op.v128Load(0), ...op.set(local)]),
    // t1 = L · X (p × b)
    ...t1.flatMap((local, e) => {
      const r = Math.floor(e / b);
      const j = e % b;
      return [...combination(L[r]!.map((c, i) => [c, xs[i * b + j]!])), ...op.set(local)];
    }),
    // Z = t1 · R, stored as it is made
    ...dstOff.flatMap((off, e) => {
      const r = Math.floor(e / q);
      const s = e % q;
      return [...op.get(DP), ...op.get(off), ...op.add, ...combination(R.map((row, j) => [row[s]!, t1[r * b + j]!])), ...op.v128Store(0)];
    }),
    ...inc(SP, 16), ...inc(DP, 16),
  ];
  const unitBase = (base: number, img: number, row: number, col: number): Code => [
    ...op.get(base), ...op.get(B), ...op.get(img), ...op.mul, ...op.add, ...op.get(Y), ...op.get(row), ...op.mul, ...op.add, ...op.get(X), ...op.get(col), ...op.mul, ...op.add,
  ];
  const body: Code = [
    ...offsets(srcOff, b, S_I, S_J),
    ...offsets(dstOff, q, D_I, D_J),
    ...forRange(B, op.get(N), forRange(Y, op.get(TH), forRange(X, op.get(TW),
      unitBase(SRC, S_IMG, S_ROW, S_COL), op.set(SP),
      unitBase(DST, D_IMG, D_ROW, D_COL), op.set(DP),
      forRange(V, op.get(VECS), perVector),
    ))),
  ];
  return { name, params: 16, i32Locals, v128Locals, body };
}

type XfFn = (src: number, dst: number, n: number, th: number, tw: number, vecs: number, sImg: number, sRow: number, sCol: number, sI: number, sJ: number, dImg: number, dRow: number, dCol: number, dI: number, dJ: number) => void;

interface Transforms {
  /** 4×4 input patch → Bᵀ·d·B */
  input: XfFn;
  /** 4×4 product tile → Aᵀ·m·A (2×2) */
  output: XfFn;
  /** 2×2 output-gradient tile → A·dy·Aᵀ (4×4) */
  gradOut: XfFn;
  /** 3×3 filter → G·g·Gᵀ (4×4) */
  filter: XfFn;
  /** 4×4 filter gradient → Gᵀ·dU·G (3×3) */
  filterGrad: XfFn;
}

export function winogradModuleBytes(): Uint8Array<ArrayBuffer> {
  return buildModule([
    transformKernel('input', BT, transpose(BT)),
    transformKernel('output', AT, transpose(AT)),
    transformKernel('grad_out', transpose(AT), AT),
    transformKernel('filter', G, transpose(G)),
    transformKernel('filter_grad', transpose(G), G),
  ]);
}

interface Wino {
  gemm: WasmGemm;
  xf: Transforms;
  scratch: Scratch;
  heap: { asm: { memory: { buffer: ArrayBuffer } } };
}
let cached: { backend: unknown; wino: Wino } | null = null;

function wino(): Wino {
  const be = wasmBackend();
  if (!be) throw new Error('winograd conv: needs the wasm backend');
  if (!cached || cached.backend !== be) {
    const ex = new wasmApi.Instance(new wasmApi.Module(winogradModuleBytes()), { env: { mem: be.wasm.asm.memory } }).exports;
    const xf: Transforms = { input: ex['input'] as XfFn, output: ex['output'] as XfFn, gradOut: ex['grad_out'] as XfFn, filter: ex['filter'] as XfFn, filterGrad: ex['filter_grad'] as XfFn };
    cached = { backend: be, wino: { gemm: wasmGemm(), xf, scratch: new Scratch(be.wasm), heap: be.wasm } };
  }
  // wasmGemm() follows FMA forcing (tests); refresh it every call.
  cached.wino.gemm = wasmGemm();
  return cached.wino;
}

/** Carves one scratch block into 64-byte-aligned pieces of the given byte sizes. */
function carve(w: Wino, sizes: number[]): number[] {
  const aligned = sizes.map((s) => Math.ceil(s / 64) * 64);
  let p = w.scratch.get(aligned.reduce((a, b) => a + b, 0));
  return aligned.map((s) => {
    const at = p;
    p += s;
    return at;
  });
}

interface Tiling {
  n: number;
  /** tiles per side */
  t: number;
  /** all tiles (the GEMMs' row count) */
  tiles: number;
}
const tiling = (n: number, g: ConvGeometry): Tiling => {
  const t = Math.ceil(g.outSize / 2);
  return { n, t, tiles: n * t * t };
};

/**
 * Copies grid [n, h, h, c] into a zeroed [n, side, side, c] at offset (at, at): the padded input
 * the 4×4 tiles read (at = 1, side = 2t + 2) or an even-sized output gradient (at = 0, side = 2t).
 */
function padGrid(w: Wino, dst: number, src: number, n: number, h: number, c: number, side: number, at: number): void {
  const heap = new Uint8Array(w.heap.asm.memory.buffer);
  const pix = c * 4;
  heap.fill(0, dst, dst + n * side * side * pix);
  for (let b = 0; b < n; b++) {
    for (let y = 0; y < h; y++) {
      const from = src + ((b * h + y) * h) * pix;
      heap.copyWithin(dst + ((b * side + y + at) * side + at) * pix, from, from + h * pix);
    }
  }
}

/** Crops [n, side, side, c] (side = 2t) to [n, h, h, c] (odd h: the last tile's extra row/column is dropped). */
function cropGrid(w: Wino, dst: number, src: number, n: number, h: number, c: number, side: number): void {
  const heap = new Uint8Array(w.heap.asm.memory.buffer);
  const pix = c * 4;
  for (let b = 0; b < n; b++) {
    for (let y = 0; y < h; y++) {
      const from = src + ((b * side + y) * side) * pix;
      heap.copyWithin(dst + ((b * h + y) * h) * pix, from, from + h * pix);
    }
  }
}

/** Tiles of a padded grid ([n, 2t+2, 2t+2, c]) → planes [16][tiles][c]. */
function inputTiles(w: Wino, planes: number, grid: number, tl: Tiling, c: number): void {
  const side = 2 * tl.t + 2;
  const pix = c * 4;
  const plane = tl.tiles * pix;
  w.xf.input(grid, planes, tl.n, tl.t, tl.t, c / 4, side * side * pix, 2 * side * pix, 2 * pix, side * pix, pix, tl.t * tl.t * pix, tl.t * pix, pix, 4 * plane, plane);
}

/** Planes [16][tiles][c] → 2×2 tiles of an even grid [n, 2t, 2t, c]. */
function outputTiles(w: Wino, grid: number, planes: number, tl: Tiling, c: number): void {
  const side = 2 * tl.t;
  const pix = c * 4;
  const plane = tl.tiles * pix;
  w.xf.output(planes, grid, tl.n, tl.t, tl.t, c / 4, tl.t * tl.t * pix, tl.t * pix, pix, 4 * plane, plane, side * side * pix, 2 * side * pix, 2 * pix, side * pix, pix);
}

/** U = G·g·Gᵀ for every (ci, co): HWIO filter → planes [16][cin][cout]. */
function filterPlanes(w: Wino, u: number, filter: number, g: ConvGeometry): void {
  const tap = g.cin * g.cout * 4;
  const row = g.cout * 4;
  w.xf.filter(filter, u, 1, g.cin, 1, g.cout / 4, 0, row, 0, 3 * tap, tap, 0, row, 0, 4 * tap, tap);
}

/** The GEMM operands of plane ξ: rows × cols starting at base. */
const planeOp = (base: number, xi: number, rows: number, cols: number, transposed = false): Operand => ({
  ptr: base + xi * rows * cols * 4,
  rs: transposed ? 4 : cols * 4,
  cs: transposed ? cols * 4 : 4,
});

/** Y = conv(x, w) by F(2×2, 3×3); also the input gradient, with `rotated` (dy as x, the rotated filter). */
function winogradConv(x: tf.Tensor4D, w4: tf.Tensor4D, g: ConvGeometry, rotated: boolean): tf.Tensor4D {
  const w = wino();
  const n = x.shape[0];
  const tl = tiling(n, g);
  const [cIn, cOut] = rotated ? [g.cout, g.cin] : [g.cin, g.cout];
  const side = 2 * tl.t + 2;
  const even = 2 * tl.t === g.outSize;
  const [grid, v, u, m, out] = carve(w, [n * side * side * cIn * 4, 16 * tl.tiles * cIn * 4, 16 * g.cin * g.cout * 4, 16 * tl.tiles * cOut * 4, even ? 0 : n * 4 * tl.t * tl.t * cOut * 4]);
  padGrid(w, grid!, heapPtr(x), n, g.inSize, cIn, side, 1);
  inputTiles(w, v!, grid!, tl, cIn);
  filterPlanes(w, u!, heapPtr(w4), g);
  for (let xi = 0; xi < 16; xi++) {
    // forward: U_ξ [cin, cout]; dx: B[co, ci] = U_{p(ξ)}[ci, co]
    const b = rotated ? planeOp(u!, ROTATED[xi]!, g.cin, g.cout, true) : planeOp(u!, xi, g.cin, g.cout);
    w.gemm.gemm(tl.tiles, cOut, cIn, planeOp(v!, xi, tl.tiles, cIn), b, { ptr: m! + xi * tl.tiles * cOut * 4, ldc: cOut * 4 });
  }
  const y = emptyTensor<tf.Rank.R4>([n, g.outSize, g.outSize, cOut]);
  if (even) outputTiles(w, heapPtr(y), m!, tl, cOut);
  else {
    outputTiles(w, out!, m!, tl, cOut);
    cropGrid(w, heapPtr(y), out!, n, g.outSize, cOut, 2 * tl.t);
  }
  return y;
}

export function winogradConvForward(x: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  return winogradConv(x, w, g, false);
}

/** dx = full correlation of dy with the filter rotated 180° and transposed: the forward algorithm on dy. */
export function winogradConvBackpropInput(dy: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  return winogradConv(dy, w, g, true);
}

/** dW = Gᵀ·(Σ_tiles V_ξᵀ · dM_ξ)·G with V the input tiles and dM = A·dy·Aᵀ. */
export function winogradConvBackpropFilter(x: tf.Tensor4D, dy: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  const w = wino();
  const n = x.shape[0];
  const tl = tiling(n, g);
  const side = 2 * tl.t + 2;
  const even = 2 * tl.t === g.outSize;
  const pix = g.cout * 4;
  const [grid, v, dm, du, dyEven] = carve(w, [n * side * side * g.cin * 4, 16 * tl.tiles * g.cin * 4, 16 * tl.tiles * pix, 16 * g.cin * pix, even ? 0 : n * 4 * tl.t * tl.t * pix]);
  padGrid(w, grid!, heapPtr(x), n, g.inSize, g.cin, side, 1);
  inputTiles(w, v!, grid!, tl, g.cin);
  let dyGrid = heapPtr(dy);
  if (!even) {
    padGrid(w, dyEven!, dyGrid, n, g.outSize, g.cout, 2 * tl.t, 0);
    dyGrid = dyEven!;
  }
  const dySide = 2 * tl.t;
  const plane = tl.tiles * pix;
  w.xf.gradOut(dyGrid, dm!, tl.n, tl.t, tl.t, g.cout / 4, dySide * dySide * pix, 2 * dySide * pix, 2 * pix, dySide * pix, pix, tl.t * tl.t * pix, tl.t * pix, pix, 4 * plane, plane);
  for (let xi = 0; xi < 16; xi++) {
    w.gemm.gemm(g.cin, g.cout, tl.tiles, planeOp(v!, xi, tl.tiles, g.cin, true), planeOp(dm!, xi, tl.tiles, g.cout), { ptr: du! + xi * g.cin * pix, ldc: pix });
  }
  const dw = emptyTensor<tf.Rank.R4>([3, 3, g.cin, g.cout]);
  const tap = g.cin * pix;
  w.xf.filterGrad(du!, heapPtr(dw), 1, g.cin, 1, g.cout / 4, 0, pix, 0, 4 * tap, tap, 0, pix, 0, 3 * tap, tap);
  return dw;
}
