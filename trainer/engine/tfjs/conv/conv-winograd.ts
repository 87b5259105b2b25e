// The Winograd convolution implementations (conv-kernels.ts 'winograd' and 'winograd4') for 3×3
// stride-1 pad-1 convs on the wasm backend: F(2×2, 3×3) and F(4×4, 3×3) (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016). An m×m output tile costs α² = (m+2)²
// multiplies per (cin, cout) pair instead of 9m², so these convs — ~37% of ResNet-50's FLOPs —
// need 2.25× (m = 2) or 4× (m = 4) fewer multiply-adds than im2col + GEMM. Why it matters here:
// the wasm GEMM already runs near the 128-bit FMA ceiling (gemm-kernels.ts), so fewer FLOPs is
// the only way left to make these layers faster.
//
// With T tiles (n · ⌈h/m⌉²), all three passes are α² independent GEMMs, one per position ξ of the
// transformed tile, between "planes" laid out [α²][rows][cols]:
//   forward  Y:  V = Bᵀ·d·B (input tiles, [α²][T][cin]),  U = G·g·Gᵀ (filter, [α²][cin][cout]),
//                M_ξ = V_ξ · U_ξ,  Y = Aᵀ·M·A per tile
//   dx:      the same on dy's tiles with U' = G·rot180(g)·Gᵀ (the taps read backwards through
//                negative strides), which the GEMM reads transposed (cin and cout swap roles)
//   dw:      dM = A·dy·Aᵀ per tile ([α²][T][cout]),  dU_ξ = V_ξᵀ · dM_ξ,  dW = Gᵀ·dU·G
// The transforms are wasm SIMD kernels over 4 channels at a time, generated from the transform
// matrices below; the GEMMs are gemm-kernels.ts's. Accuracy: checked against cpu autodiff at the
// 1e-4 relative tolerance of every kernel test (conv-wasm.test.ts, up to 264 channels); F(4×4)'s
// larger coefficients cost some precision, still inside it.
import type * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from './conv-geometry';
import { buildModule, concat, forRange, inc, op, wasmApi, type Code, type FuncDef } from '../../../util/wasm-asm';
import { emptyTensor, heapPtr, Scratch, wasmBackend, wasmGemm, type Operand, type WasmGemm } from '../kernels/gemm-kernels';

type Matrix = number[][];
const transpose = (m: Matrix): Matrix => m[0]!.map((_, j) => m.map((row) => row[j]!));

/** One Winograd algorithm F(m×m, 3×3): output tiles of m×m from input tiles of α×α (α = m + 2). */
interface WinogradVariant {
  /** output tile side */
  m: number;
  BT: Matrix;
  G: Matrix;
  AT: Matrix;
}

/** F(2×2, 3×3), points 0, ±1, ∞: only ±1 and ½ in the transforms; 2.25× fewer multiply-adds. */
const F2: WinogradVariant = {
  m: 2,
  BT: [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
  G: [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
  AT: [[1, 1, 1, 0], [0, 1, -1, -1]],
};

/**
 * F(4×4, 3×3), points 0, ±1, ±2, ∞ (Lavin & Gray's matrices): 36 multiplies per 16 outputs
 * instead of 144, 4× fewer multiply-adds, with larger transform coefficients (still inside the
 * 1e-4 relative tolerance on these layers in f32: conv-wasm.test.ts).
 */
const F4: WinogradVariant = {
  m: 4,
  BT: [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
  G: [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]],
  AT: [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
};

/** Whether Winograd applies: 3×3, stride 1, "same" padding, channel counts the SIMD transforms and the GEMM take. */
export function winogradSupports(g: ConvGeometry): boolean {
  return wasmBackend() !== null && g.k === 3 && g.stride === 1 && g.pad === 1 && g.inSize === g.outSize && g.inSize > 1 && g.cin % 8 === 0 && g.cout % 8 === 0;
}

/**
 * xf_<name>(src, dst, n, th, tw, vecs, sImg, sRow, sCol, sI, sJ, dImg, dRow, dCol, dI, dJ, tmp):
 * for every unit (b < n, y < th, x < tw) and every 4-float channel vector v < vecs, reads the
 * patch X[i][j] at src + b·sImg + y·sRow + x·sCol + i·sI + j·sJ + 16v, and writes
 * Z = L·X·R at dst + b·dImg + y·dRow + x·dCol + r·dI + s·dJ + 16v (all strides in bytes).
 * `tmp`: 16·rows(L)·cols(X) bytes of scratch for L·X.
 *
 * Why through memory: V8's TurboFan keeps a basic block's loads in program order at its top and
 * sinks the arithmetic to its uses (see gemm-kernels.ts), so a patch transformed in registers had
 * all α² loads live at once and spilled most of them. Here L·X is made one column at a time and
 * stored to `tmp` (the stores keep each column's loads after the previous column's work), then
 * Z one row at a time from it: at most max(α, 3) + a few vectors are live.
 */
function transformKernel(name: string, L: Matrix, R: Matrix): FuncDef {
  const [SRC, DST, N, TH, TW, VECS, S_IMG, S_ROW, S_COL, S_I, S_J, D_IMG, D_ROW, D_COL, D_I, D_J, TMP] = Array.from({ length: 17 }, (_, i) => i);
  const a = L[0]!.length; // patch rows
  const b = R.length; // patch columns
  const p = L.length; // result rows
  const q = R[0]!.length; // result columns
  // i32 locals
  let next = 17;
  const [B, Y, X, V, SP, DP, COL, ROW, PTR] = Array.from({ length: 9 }, () => next++);
  const i32Locals = next - 17;
  // v128 locals: one column of X, or one row of L·X
  const vals = Array.from({ length: Math.max(a, b) }, () => next++);
  const v128Locals = vals.length;

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
  /** t1[r][j] lives at tmp + 16·(r·b + j). */
  const t1At = (r: number, j: number): number => 16 * (r * b + j);
  // concat, not spread and flat(): wasm-asm.ts says why.
  const perVector: Code = concat([
    // t1 = L · X, column by column
    op.get(SP), op.set(COL),
    ...Array.from({ length: b }, (_, j) => concat([
      op.get(COL), op.set(PTR),
      ...Array.from({ length: a }, (_, i) => concat([op.get(PTR), op.v128Load(0), op.set(vals[i]!), i < a - 1 ? inc(PTR, op.get(S_I)) : []])),
      ...Array.from({ length: p }, (_, r) => concat([op.get(TMP), combination(L[r]!.map((c, i) => [c, vals[i]!])), op.v128Store(t1At(r, j))])),
      j < b - 1 ? inc(COL, op.get(S_J)) : [],
    ])),
    // Z = t1 · R, row by row, stored as it is made
    op.get(DP), op.set(ROW),
    ...Array.from({ length: p }, (_, r) => concat([
      ...Array.from({ length: b }, (_, j) => concat([op.get(TMP), op.v128Load(t1At(r, j)), op.set(vals[j]!)])),
      op.get(ROW), op.set(PTR),
      ...Array.from({ length: q }, (_, s) => concat([op.get(PTR), combination(R.map((row, j) => [row[s]!, vals[j]!])), op.v128Store(0), s < q - 1 ? inc(PTR, op.get(D_J)) : []])),
      r < p - 1 ? inc(ROW, op.get(D_I)) : [],
    ])),
    inc(SP, 16), inc(DP, 16),
  ]);
  const unitBase = (base: number, img: number, row: number, col: number): Code => [
    ...op.get(base), ...op.get(B), ...op.get(img), ...op.mul, ...op.add, ...op.get(Y), ...op.get(row), ...op.mul, ...op.add, ...op.get(X), ...op.get(col), ...op.mul, ...op.add,
  ];
  const body: Code = [
    ...forRange(B, op.get(N), forRange(Y, op.get(TH), forRange(X, op.get(TW),
      unitBase(SRC, S_IMG, S_ROW, S_COL), op.set(SP),
      unitBase(DST, D_IMG, D_ROW, D_COL), op.set(DP),
      forRange(V, op.get(VECS), perVector),
    ))),
  ];
  return { name, params: 17, i32Locals, v128Locals, body };
}

type XfFn = (src: number, dst: number, n: number, th: number, tw: number, vecs: number, sImg: number, sRow: number, sCol: number, sI: number, sJ: number, dImg: number, dRow: number, dCol: number, dI: number, dJ: number, tmp: number) => void;

interface Transforms {
  /** α×α input patch → Bᵀ·d·B */
  input: XfFn;
  /** α×α product tile → Aᵀ·m·A (m×m) */
  output: XfFn;
  /** m×m output-gradient tile → A·dy·Aᵀ (α×α) */
  gradOut: XfFn;
  /** 3×3 filter → G·g·Gᵀ (α×α) */
  filter: XfFn;
  /** α×α filter gradient → Gᵀ·dU·G (3×3) */
  filterGrad: XfFn;
}

const VARIANTS = [F2, F4];

function winogradModuleBytes(): Uint8Array<ArrayBuffer> {
  return buildModule(VARIANTS.flatMap((v) => [
    transformKernel(`input${v.m}`, v.BT, transpose(v.BT)),
    transformKernel(`output${v.m}`, v.AT, transpose(v.AT)),
    transformKernel(`grad_out${v.m}`, transpose(v.AT), v.AT),
    transformKernel(`filter${v.m}`, v.G, transpose(v.G)),
    transformKernel(`filter_grad${v.m}`, transpose(v.G), v.G),
  ]));
}

interface Wino {
  gemm: WasmGemm;
  /** the transforms by output tile side m */
  xf: Map<number, Transforms>;
  scratch: Scratch;
  /** The transforms' own scratch (16·α² bytes, see transformKernel), apart from `scratch`, which moves when it grows. */
  tmp: number;
  heap: { asm: { memory: { buffer: ArrayBuffer } } };
}
let cached: { backend: unknown; wino: Wino } | null = null;

function wino(): Wino {
  const be = wasmBackend();
  if (!be) throw new Error('winograd conv: needs the wasm backend');
  if (!cached || cached.backend !== be) {
    const ex = new wasmApi.Instance(new wasmApi.Module(winogradModuleBytes()), { env: { mem: be.wasm.asm.memory } }).exports;
    const fn = (name: string): XfFn => ex[name] as XfFn;
    const xf = new Map(VARIANTS.map((v) => [v.m, { input: fn(`input${v.m}`), output: fn(`output${v.m}`), gradOut: fn(`grad_out${v.m}`), filter: fn(`filter${v.m}`), filterGrad: fn(`filter_grad${v.m}`) }]));
    const tmp = new Scratch(be.wasm).get(16 * Math.max(...VARIANTS.map((v) => (v.m + 2) ** 2)));
    cached = { backend: be, wino: { gemm: wasmGemm(), xf, scratch: new Scratch(be.wasm), tmp, heap: be.wasm } };
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
  /** output tile side */
  m: number;
  /** input tile side, m + 2 */
  alpha: number;
  /** tiles per image side */
  t: number;
  /** all tiles (the GEMMs' row count) */
  tiles: number;
  /** the transformed tile's positions: α², one GEMM each */
  planes: number;
}
const tiling = (n: number, g: ConvGeometry, m: number): Tiling => {
  const t = Math.ceil(g.outSize / m);
  return { n, m, alpha: m + 2, t, tiles: n * t * t, planes: (m + 2) * (m + 2) };
};

/**
 * Copies grid [n, h, h, c] into a zeroed [n, side, side, c] at offset (at, at): the padded input
 * the α×α tiles read (at = 1, side = m·t + 2) or an output gradient padded to whole tiles (at = 0, side = m·t).
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

/** Crops [n, side, side, c] (side = m·t) to [n, h, h, c] (the last tiles' rows/columns past h are dropped). */
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

/**
 * A tile transform between a grid ([n, side, side, c], a tile every m pixels; tile element (i, j)
 * at pixel (i, j) from the tile's origin) and planes ([α²][tiles][c]; element (i, j) of a
 * transformed tile in plane α·i + j). `toPlanes`: grid → planes, else planes → grid.
 */
function tileTransform(w: Wino, f: XfFn, grid: number, planes: number, tl: Tiling, c: number, side: number, toPlanes: boolean): void {
  const pix = c * 4;
  const plane = tl.tiles * pix;
  const onGrid = [side * side * pix, tl.m * side * pix, tl.m * pix, side * pix, pix] as const;
  const onPlanes = [tl.t * tl.t * pix, tl.t * pix, pix, tl.alpha * plane, plane] as const;
  if (toPlanes) f(grid, planes, tl.n, tl.t, tl.t, c / 4, ...onGrid, ...onPlanes, w.tmp);
  else f(planes, grid, tl.n, tl.t, tl.t, c / 4, ...onPlanes, ...onGrid, w.tmp);
}

/**
 * U = G·g·Gᵀ for every (ci, co): HWIO filter → planes [α²][cin][cout]. `rotated`: of the filter
 * turned 180° (taps read backwards through negative strides), which the input gradient convolves with.
 */
function filterPlanes(w: Wino, xf: Transforms, tl: Tiling, u: number, filter: number, g: ConvGeometry, rotated: boolean): void {
  const tap = g.cin * g.cout * 4;
  const row = g.cout * 4;
  const plane = g.cin * row;
  const [src, sI, sJ] = rotated ? [filter + 8 * tap, -3 * tap, -tap] : [filter, 3 * tap, tap];
  xf.filter(src, u, 1, g.cin, 1, g.cout / 4, 0, row, 0, sI, sJ, 0, row, 0, tl.alpha * plane, plane, w.tmp);
}

/** The GEMM operands of plane ξ: rows × cols starting at base. */
const planeOp = (base: number, xi: number, rows: number, cols: number, transposed = false): Operand => ({
  ptr: base + xi * rows * cols * 4,
  rs: transposed ? 4 : cols * 4,
  cs: transposed ? cols * 4 : 4,
});

/**
 * Y = conv(x, w) by F(m×m, 3×3); with `rotated`, the input gradient: dy as x, and the filter
 * turned 180° and transposed (its planes are made [cin][cout] and the GEMM reads them transposed).
 */
function winogradConv(x: tf.Tensor4D, w4: tf.Tensor4D, g: ConvGeometry, m: number, rotated: boolean): tf.Tensor4D {
  const w = wino();
  const xf = w.xf.get(m)!;
  const n = x.shape[0];
  const tl = tiling(n, g, m);
  const [cIn, cOut] = rotated ? [g.cout, g.cin] : [g.cin, g.cout];
  const side = m * tl.t + 2;
  const outSide = m * tl.t;
  const whole = outSide === g.outSize;
  const [grid, v, u, prod, out] = carve(w, [n * side * side * cIn * 4, tl.planes * tl.tiles * cIn * 4, tl.planes * g.cin * g.cout * 4, tl.planes * tl.tiles * cOut * 4, whole ? 0 : n * outSide * outSide * cOut * 4]);
  padGrid(w, grid!, heapPtr(x), n, g.inSize, cIn, side, 1);
  tileTransform(w, xf.input, grid!, v!, tl, cIn, side, true);
  filterPlanes(w, xf, tl, u!, heapPtr(w4), g, rotated);
  for (let xi = 0; xi < tl.planes; xi++) {
    // forward: B = U_ξ [cin, cout]; input gradient: B[co, ci] = U'_ξ[ci, co]
    w.gemm.gemm(tl.tiles, cOut, cIn, planeOp(v!, xi, tl.tiles, cIn), planeOp(u!, xi, g.cin, g.cout, rotated), { ptr: prod! + xi * tl.tiles * cOut * 4, ldc: cOut * 4 });
  }
  const y = emptyTensor<tf.Rank.R4>([n, g.outSize, g.outSize, cOut]);
  if (whole) tileTransform(w, xf.output, heapPtr(y), prod!, tl, cOut, outSide, false);
  else {
    tileTransform(w, xf.output, out!, prod!, tl, cOut, outSide, false);
    cropGrid(w, heapPtr(y), out!, n, g.outSize, cOut, outSide);
  }
  return y;
}

/** `m`: the output tile side, 2 for F(2×2, 3×3) or 4 for F(4×4, 3×3). */
export function winogradConvForward(x: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, m: number): tf.Tensor4D {
  return winogradConv(x, w, g, m, false);
}

/** dx = full correlation of dy with the filter rotated 180° and transposed: the forward algorithm on dy. */
export function winogradConvBackpropInput(dy: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, m: number): tf.Tensor4D {
  return winogradConv(dy, w, g, m, true);
}

/** dW = Gᵀ·(Σ_tiles V_ξᵀ · dM_ξ)·G with V the input tiles and dM = A·dy·Aᵀ. */
export function winogradConvBackpropFilter(x: tf.Tensor4D, dy: tf.Tensor4D, g: ConvGeometry, m: number): tf.Tensor4D {
  const w = wino();
  const xf = w.xf.get(m)!;
  const n = x.shape[0];
  const tl = tiling(n, g, m);
  const side = m * tl.t + 2;
  const dySide = m * tl.t;
  const whole = dySide === g.outSize;
  const pix = g.cout * 4;
  const [grid, v, dm, du, dyWhole] = carve(w, [n * side * side * g.cin * 4, tl.planes * tl.tiles * g.cin * 4, tl.planes * tl.tiles * pix, tl.planes * g.cin * pix, whole ? 0 : n * dySide * dySide * pix]);
  padGrid(w, grid!, heapPtr(x), n, g.inSize, g.cin, side, 1);
  tileTransform(w, xf.input, grid!, v!, tl, g.cin, side, true);
  let dyGrid = heapPtr(dy);
  if (!whole) {
    padGrid(w, dyWhole!, dyGrid, n, g.outSize, g.cout, dySide, 0);
    dyGrid = dyWhole!;
  }
  tileTransform(w, xf.gradOut, dyGrid, dm!, tl, g.cout, dySide, true);
  for (let xi = 0; xi < tl.planes; xi++) {
    w.gemm.gemm(g.cin, g.cout, tl.tiles, planeOp(v!, xi, tl.tiles, g.cin, true), planeOp(dm!, xi, tl.tiles, g.cout), { ptr: du! + xi * g.cin * pix, ldc: pix });
  }
  const dw = emptyTensor<tf.Rank.R4>([3, 3, g.cin, g.cout]);
  const tap = g.cin * pix;
  xf.filterGrad(du!, heapPtr(dw), 1, g.cin, 1, g.cout / 4, 0, pix, 0, tl.alpha * tap, tap, 0, pix, 0, 3 * tap, tap, w.tmp);
  return dw;
}
