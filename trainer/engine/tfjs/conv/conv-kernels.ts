// Convolution forward and gradient implementations for NHWC tensors with HWIO filters.
// Why several of each: the stock wasm backend has no Conv2DBackpropFilter kernel at all, and its
// Conv2DBackpropInput is a naive loop (5-10× slower than the forward XNNPACK conv on the same
// shape). Every gradient here is rewritten as forward convolutions and matMuls, the kernels wasm
// runs fast. Which candidate wins depends on the shape (e.g. im2col beats the transposed conv
// when the output is 1×1), so `--compile` times them per layer (see conv-autotune.ts). On the wasm
// backend there is also 'gemm' for each: a hand-written wasm GEMM (relaxed-SIMD FMA when V8 has it)
// with im2col/col2im kernels, on the tensors' heap memory (conv-gemm.ts).
import * as tf from '@tensorflow/tfjs-core';
import { centerOnly, type ConvGeometry } from './conv-geometry';
import { gemmConvAvailable, gemmConvBackpropFilter, gemmConvBackpropInput, gemmConvForward, gemmConvSupports } from './conv-gemm';
import { tapsConvBackpropFilter, tapsConvBackpropInput, tapsConvForward, tapsSupports } from './conv-taps';
import { winogradConvBackpropFilter, winogradConvBackpropInput, winogradConvForward, winogradSupports } from './conv-winograd';

/** 'winograd': F(2×2, 3×3); 'winograd4': F(4×4, 3×3) (conv-winograd.ts). */
type WinogradImpl = 'winograd' | 'winograd4';
/** 'taps': 3×3 on a 2×2 input, one GEMM per tap over only the pixels it connects (conv-taps.ts). */
export type ConvFwdImpl = 'conv2d' | 'center' | 'gemm' | 'taps' | WinogradImpl;
export type ConvDxImpl = 'backprop-input' | 'matmul' | 'matmul-t' | 'rot-conv' | 'col2im' | 'center' | 'gemm' | 'taps' | WinogradImpl;
export type ConvDwImpl = 'conv-t' | 'im2col' | 'matmul' | 'center' | 'gemm' | 'taps' | WinogradImpl;
const WINOGRAD_TILE: Record<WinogradImpl, number> = { winograd: 2, winograd4: 4 };
const isWinograd = (impl: string): impl is WinogradImpl => impl in WINOGRAD_TILE;
export interface ConvImpl {
  fwd: ConvFwdImpl;
  dx: ConvDxImpl;
  dw: ConvDwImpl;
}

/** The 'gemm' implementations this geometry can use on the active backend (none off the wasm backend). */
function gemmFits(g: ConvGeometry): { fwd: boolean; dx: boolean; dw: boolean } {
  return gemmConvAvailable() ? gemmConvSupports(g, centerOnly(g)) : { fwd: false, dx: false, dw: false };
}

export function candidates(g: ConvGeometry): { fwd: ConvFwdImpl[]; dx: ConvDxImpl[]; dw: ConvDwImpl[] } {
  const center = centerOnly(g) && g.k > 1;
  const gemm = gemmFits(g);
  const special = [...(winogradSupports(g) ? (['winograd', 'winograd4'] as const) : []), ...(tapsSupports(g) ? (['taps'] as const) : [])];
  return {
    fwd: [...(center ? (['conv2d', 'center'] as const) : (['conv2d'] as const)), ...(gemm.fwd ? (['gemm'] as const) : []), ...special],
    dx: [...(g.k === 1 ? (['matmul', 'matmul-t'] as const) : (['rot-conv', 'col2im'] as const)), 'backprop-input', ...(center ? (['center'] as const) : []), ...(gemm.dx ? (['gemm'] as const) : []), ...special],
    dw: [...(g.k === 1 ? (['matmul'] as const) : (['conv-t', 'im2col'] as const)), ...(center ? (['center'] as const) : []), ...(gemm.dw ? (['gemm'] as const) : []), ...special],
  };
}

/** The stock-op implementation used without --compile. */
function stockDefault(g: ConvGeometry): ConvImpl {
  return { fwd: 'conv2d', dx: g.k === 1 ? 'matmul' : 'rot-conv', dw: g.k === 1 ? 'matmul' : 'conv-t' };
}

/**
 * The implementation used without --compile. On the wasm backend, 3×3 stride-1 convs use Winograd
 * (bench/results/winograd.md): F(4×4, 3×3) from 8×8 outputs up (4× fewer multiply-adds), F(2×2,
 * 3×3) below that, except the filter gradient, which takes F(4×4) on 4×4 outputs too (one tile per
 * image: its GEMMs are over tiles, so it wins there where the forward's transforms do not). On
 * 2×2 inputs all three passes use 'taps' (one GEMM per tap over the pixels it connects, 16 of
 * im2col's 36 pixel-tap products: 1.7-2.0× faster than 'gemm', and than F(2×2) for the filter
 * gradient). Everything else is 'gemm' except the
 * 3-channel stem's forward (its im2col copies 3 floats at a time; XNNPACK's conv2d is faster
 * there). Measured with fresh weights every step (XNNPACK re-packs its filter per tensor) at 32²
 * and 64², batch 16 (bench/results/gemm.md, winograd.md). Elsewhere the generic stock-op rewrite.
 */
export function defaultImpl(g: ConvGeometry): ConvImpl {
  if (tapsSupports(g)) return { fwd: 'taps', dx: 'taps', dw: 'taps' };
  const stock = stockDefault(g);
  const gemm = gemmFits(g);
  const fwdGemm = gemm.fwd && (centerOnly(g) || g.cin % 4 === 0);
  const wino: WinogradImpl | null = !winogradSupports(g) ? null : g.outSize >= 8 ? 'winograd4' : 'winograd';
  const winoFwdDx = wino && g.outSize >= 4 ? wino : null;
  const winoDw = wino && g.outSize >= 4 ? 'winograd4' : wino;
  return {
    fwd: winoFwdDx ?? (fwdGemm ? 'gemm' : stock.fwd),
    dx: winoFwdDx ?? (gemm.dx ? 'gemm' : stock.dx),
    dw: winoDw ?? (gemm.dw ? 'gemm' : stock.dw),
  };
}

type Pad4 = [[number, number], [number, number], [number, number], [number, number]];
function pad4(t: number, b: number, l: number, r: number): Pad4 {
  return [[0, 0], [t, b], [l, r], [0, 0]];
}

function as2d(t: tf.Tensor, cols: number): tf.Tensor2D {
  return tf.reshape(t, [t.size / cols, cols]);
}

function centerTap(w: tf.Tensor4D, g: ConvGeometry): tf.Tensor2D {
  const c = (g.k - 1) / 2;
  return tf.reshape(tf.slice(w, [c, c, 0, 0], [1, 1, g.cin, g.cout]), [g.cin, g.cout]);
}

/** Strided 1×1 sampling of x (what a 1×1 stride-s conv reads). */
function subsample(x: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  if (g.stride === 1) return x;
  const n = x.shape[0];
  return tf.stridedSlice(x, [0, 0, 0, 0], [n, (g.outSize - 1) * g.stride + 1, (g.outSize - 1) * g.stride + 1, g.cin], [1, g.stride, g.stride, 1]) as tf.Tensor4D;
}

/** Insert stride-1 zeros after every element of the spatial axes: [N,H,W,C] → [N,H·s,W·s,C]. */
function dilate(t: tf.Tensor4D, s: number): tf.Tensor4D {
  if (s === 1) return t;
  const [n, h, w, c] = t.shape;
  const six = tf.reshape(t, [n, h, 1, w, 1, c]);
  const padded = tf.pad(six, [[0, 0], [0, 0], [0, s - 1], [0, 0], [0, s - 1], [0, 0]]);
  return tf.reshape(padded, [n, h * s, w * s, c]);
}

/**
 * The filter rotated 180° with in/out swapped, [k,k,cout,cin]. Flipping both spatial axes is
 * reversing the k·k taps: contiguous slices concatenated backwards (wasm's Reverse kernel is
 * ~6× slower on these shapes).
 */
function rotateFilter(w: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  const kk = g.k * g.k;
  const taps = tf.reshape(w, [kk, g.cin, g.cout]);
  const rev = tf.concat(Array.from({ length: kk }, (_, i) => tf.slice(taps, [kk - 1 - i, 0, 0], [1, g.cin, g.cout])), 0);
  return tf.reshape(tf.transpose(rev, [0, 2, 1]), [g.k, g.k, g.cout, g.cin]);
}

/**
 * col2im: sums window-tap contributions back onto the input grid. `piece(t)` is tap t's
 * ([N, outSize, outSize, c]) values; each is dilated by the stride, shifted to its (ky, kx)
 * offset in the padded frame, summed, and the padding is cropped. Shared with max-pool backward.
 */
export function scatterTaps(piece: (tap: number) => tf.Tensor4D, g: Pick<ConvGeometry, 'inSize' | 'outSize' | 'k' | 'stride' | 'pad'>, n: number, c: number): tf.Tensor4D {
  const hp = g.inSize + 2 * g.pad;
  const span = g.outSize * g.stride;
  let acc: tf.Tensor4D | null = null;
  for (let ky = 0; ky < g.k; ky++) {
    for (let kx = 0; kx < g.k; kx++) {
      let p = dilate(piece(ky * g.k + kx), g.stride);
      // Crop what falls past the padded frame (only dilation zeros or rows no window reaches).
      const h = Math.min(span, hp - ky);
      const w = Math.min(span, hp - kx);
      if (h < span || w < span) p = tf.slice(p, [0, 0, 0, 0], [n, h, w, c]);
      const placed = tf.pad(p, pad4(ky, hp - ky - h, kx, hp - kx - w));
      acc = acc ? (tf.add(acc, placed) as tf.Tensor4D) : placed;
    }
  }
  const full = acc as tf.Tensor4D;
  return g.pad === 0 ? full : tf.slice(full, [0, g.pad, g.pad, 0], [n, g.inSize, g.inSize, c]);
}

/** A 1×1 stride-s conv's input gradient from its values at the sampled positions: zeros elsewhere. */
function scatterStrided(dxs: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  if (g.stride === 1) return dxs;
  const n = dxs.shape[0];
  const d = dilate(dxs, g.stride);
  const have = g.outSize * g.stride;
  if (have === g.inSize) return d;
  if (have > g.inSize) return tf.slice(d, [0, 0, 0, 0], [n, g.inSize, g.inSize, g.cin]);
  return tf.pad(d, pad4(0, g.inSize - have, 0, g.inSize - have));
}

/**
 * A plan may name a Winograd or 'taps' implementation where it does not apply (made on the wasm
 * backend, read on another; another shape): then 'gemm', which in turn falls back to the stock op.
 */
function orGemm<I extends ConvFwdImpl | ConvDxImpl | ConvDwImpl>(impl: I, g: ConvGeometry): I | 'gemm' {
  return (isWinograd(impl) && !winogradSupports(g)) || (impl === 'taps' && !tapsSupports(g)) ? 'gemm' : impl;
}

export function convForward(x: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, impl: ConvFwdImpl): tf.Tensor4D {
  impl = orGemm(impl, g);
  if (isWinograd(impl)) return winogradConvForward(x, w, g, WINOGRAD_TILE[impl]);
  if (impl === 'taps') return tapsConvForward(x, w, g);
  if (impl === 'gemm') impl = gemmFits(g).fwd ? 'gemm' : stockDefault(g).fwd;
  if (impl === 'gemm') return gemmConvForward(x, w, g, centerOnly(g));
  if (impl === 'center') {
    const n = x.shape[0];
    return tf.reshape(tf.matMul(as2d(x, g.cin), centerTap(w, g)), [n, 1, 1, g.cout]);
  }
  return tf.conv2d(x, w, g.stride, g.pad === 0 ? 'valid' : pad4(g.pad, g.pad, g.pad, g.pad));
}

/** Gradient of the conv output w.r.t. its input. `wT` (filter as [cout, cin] for 1×1) may be passed precomputed. */
export function convBackpropInput(dy: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, impl: ConvDxImpl): tf.Tensor4D {
  const n = dy.shape[0];
  impl = orGemm(impl, g);
  if (impl === 'gemm') impl = gemmFits(g).dx ? 'gemm' : stockDefault(g).dx;
  switch (impl) {
    case 'winograd':
    case 'winograd4':
      return winogradConvBackpropInput(dy, w, g, WINOGRAD_TILE[impl]);
    case 'taps':
      return tapsConvBackpropInput(dy, w, g);
    case 'gemm':
      return gemmConvBackpropInput(dy, w, g, centerOnly(g));
    case 'backprop-input':
      return tf.engine().runKernel('Conv2DBackpropInput', { dy, filter: w }, {
        strides: g.stride, pad: g.pad === 0 ? 'valid' : [[0, 0], [g.pad, g.pad], [g.pad, g.pad], [0, 0]],
        dataFormat: 'NHWC', inputShape: [n, g.inSize, g.inSize, g.cin],
      } as unknown as tf.NamedAttrMap) as tf.Tensor4D;
    case 'center': {
      // dxᵀ = W_c · dyᵀ: transposes only the small dy, never the weight.
      const dxt = tf.matMul(centerTap(w, g), tf.transpose(as2d(dy, g.cout)));
      return tf.reshape(tf.transpose(dxt), [n, 1, 1, g.cin]);
    }
    case 'matmul-t': {
      if (g.k !== 1) throw new Error(`conv dx impl 'matmul-t' needs a 1×1 filter, got ${g.k}×${g.k}`);
      const dxt = tf.matMul(tf.reshape(w, [g.cin, g.cout]), tf.transpose(as2d(dy, g.cout)));
      return scatterStrided(tf.reshape(tf.transpose(dxt), [n, g.outSize, g.outSize, g.cin]), g);
    }
    case 'col2im': {
      // dcolᵀ = W2d · dyᵀ ([k·k·cin, M]): the weight is only read, never transposed (on tiny
      // spatial sizes the weight dwarfs the activations). Then col2im: each tap's slice is
      // dilated by the stride, shifted to its offset and summed, and the padding cropped.
      const dcol = tf.reshape(tf.transpose(tf.matMul(tf.reshape(w, [g.k * g.k * g.cin, g.cout]), tf.transpose(as2d(dy, g.cout)))), [n, g.outSize, g.outSize, g.k * g.k * g.cin]);
      const dcol4 = dcol as tf.Tensor4D;
      return scatterTaps((t) => tf.slice(dcol4, [0, 0, 0, t * g.cin], [n, g.outSize, g.outSize, g.cin]), g, n, g.cin);
    }
    case 'matmul': {
      if (g.k !== 1) throw new Error(`conv dx impl 'matmul' needs a 1×1 filter, got ${g.k}×${g.k}`);
      // Explicit transpose of the (small) filter: wasm's transposed matMul path is 5-10× slower.
      const wt = tf.transpose(tf.reshape(w, [g.cin, g.cout]));
      return scatterStrided(tf.reshape(tf.matMul(as2d(dy, g.cout), wt), [n, g.outSize, g.outSize, g.cin]), g);
    }
    case 'rot-conv': {
      // dx = full correlation of (dilated) dy with the filter rotated 180° and in/out swapped.
      const wr = rotateFilter(w, g);
      let d = dilate(dy, g.stride);
      let len = g.outSize * g.stride;
      const padL = g.k - 1 - g.pad;
      let padR = g.inSize - len - padL + g.k - 1;
      if (padR < 0) {
        len += padR;
        d = tf.slice(d, [0, 0, 0, 0], [n, len, len, g.cout]);
        padR = 0;
      }
      if (padL < 0) throw new Error(`conv dx impl 'rot-conv' needs pad < k (k=${g.k}, pad=${g.pad})`);
      return tf.conv2d(d, wr, 1, padL === 0 && padR === 0 ? 'valid' : pad4(padL, padR, padL, padR));
    }
  }
}

/** Gradient of the conv output w.r.t. the filter (what wasm has no kernel for), HWIO. */
export function convBackpropFilter(x: tf.Tensor4D, dy: tf.Tensor4D, g: ConvGeometry, impl: ConvDwImpl): tf.Tensor4D {
  const n = x.shape[0];
  impl = orGemm(impl, g);
  if (impl === 'gemm') impl = gemmFits(g).dw ? 'gemm' : stockDefault(g).dw;
  switch (impl) {
    case 'winograd':
    case 'winograd4':
      return winogradConvBackpropFilter(x, dy, g, WINOGRAD_TILE[impl]);
    case 'taps':
      return tapsConvBackpropFilter(x, dy, g);
    case 'gemm':
      return gemmConvBackpropFilter(x, dy, g, centerOnly(g));
    case 'center': {
      const c = (g.k - 1) / 2;
      const dwc = tf.matMul(tf.transpose(as2d(x, g.cin)), as2d(dy, g.cout));
      return tf.pad(tf.reshape(dwc, [1, 1, g.cin, g.cout]), [[c, c], [c, c], [0, 0], [0, 0]]);
    }
    case 'matmul': {
      if (g.k !== 1) throw new Error(`conv dw impl 'matmul' needs a 1×1 filter, got ${g.k}×${g.k}`);
      const xs = subsample(x, g);
      return tf.reshape(tf.matMul(tf.transpose(as2d(xs, g.cin)), as2d(dy, g.cout)), [1, 1, g.cin, g.cout]);
    }
    case 'conv-t': {
      // dW[ky,kx,ci,co] = Σ_{n,oy,ox} xpad[n, oy·s+ky, ox·s+kx, ci] · dy[n,oy,ox,co]: a conv of x with
      // batch and channels swapped ([ci,H,W,n]) by dy used as a filter ([oy,ox,n,co]) dilated by s.
      const xt = tf.transpose(x, [3, 1, 2, 0]) as tf.Tensor4D;
      const f = tf.transpose(dy, [1, 2, 0, 3]) as tf.Tensor4D;
      const need = (g.outSize - 1) * g.stride + g.k;
      const bottom = need - g.inSize - g.pad;
      let src = xt;
      let padB = bottom;
      if (bottom < 0) {
        src = tf.slice(xt, [0, 0, 0, 0], [g.cin, g.inSize + bottom, g.inSize + bottom, n]);
        padB = 0;
      }
      const r = tf.conv2d(src, f, 1, g.pad === 0 && padB === 0 ? 'valid' : pad4(g.pad, padB, g.pad, padB), 'NHWC', g.stride);
      return tf.transpose(r, [1, 2, 0, 3]);
    }
    case 'im2col': {
      const xp = g.pad === 0 ? x : tf.pad(x, pad4(g.pad, g.pad, g.pad, g.pad));
      const cols: tf.Tensor4D[] = [];
      const span = (g.outSize - 1) * g.stride + 1;
      for (let ky = 0; ky < g.k; ky++) {
        for (let kx = 0; kx < g.k; kx++) {
          cols.push(tf.stridedSlice(xp, [0, ky, kx, 0], [n, ky + span, kx + span, g.cin], [1, g.stride, g.stride, 1]) as tf.Tensor4D);
        }
      }
      const col = as2d(tf.concat(cols, 3), g.k * g.k * g.cin);
      return tf.reshape(tf.matMul(tf.transpose(col), as2d(dy, g.cout)), [g.k, g.k, g.cin, g.cout]);
    }
  }
}
