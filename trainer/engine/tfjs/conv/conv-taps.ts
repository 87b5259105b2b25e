// The 'taps' convolution implementations (conv-kernels.ts) for 3×3 stride-1 pad-1 convs on 2×2
// inputs — ResNet-50's last stage at 64² and its third at 32². Why: there im2col + GEMM multiplies
// each output pixel by all 9 taps although only 4 of them meet the 2×2 input (the rest read the
// zero padding): 36 pixel-tap products per image where 16 carry data. Here each tap is a GEMM
// over exactly the (output, input) pixel pairs it connects, accumulated into the result: 2.25×
// fewer multiply-adds, no im2col matrix, and the same wasm GEMM (gemm-kernels.ts) on the heap.
//
// Pixels are numbered p = 2·oy + ox within an image (NHWC rows); tap (ky, kx) links output pixel
// p to input pixel p + shift, shift = 2·(ky − 1) + (kx − 1), where both lie in the 2×2 grid. A
// tap's pixels become GEMM rows across the batch with one row stride: all 4 pixels (stride 1 row),
// 2 pixels two apart (stride 2: rows 4b + p0 + 2j), or 1 pixel (stride 4); any other set is split.
import type * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from './conv-geometry';
import { emptyTensor, heapPtr, wasmBackend, wasmGemm } from '../kernels/gemm-kernels';

/** One GEMM of a tap: output pixels p0, p0 + stride, … (count per image) with the given pixel stride, across the batch. */
interface TapRows {
  tap: number;
  shift: number;
  p0: number;
  /** Pixel stride between consecutive rows; the rows of the whole batch are uniformly strided. */
  stride: number;
  /** Rows per image. */
  count: number;
}

/** The GEMMs of all 9 taps on a 2×2 grid (16 pixel pairs per image in 11 row sets). */
const TAP_ROWS: TapRows[] = (() => {
  const out: TapRows[] = [];
  for (let ky = 0; ky < 3; ky++) {
    for (let kx = 0; kx < 3; kx++) {
      const valid: number[] = [];
      for (let oy = 0; oy < 2; oy++) {
        for (let ox = 0; ox < 2; ox++) {
          const [iy, ix] = [oy + ky - 1, ox + kx - 1];
          if (iy >= 0 && iy < 2 && ix >= 0 && ix < 2) valid.push(2 * oy + ox);
        }
      }
      const base = { tap: 3 * ky + kx, shift: 2 * (ky - 1) + (kx - 1) };
      if (valid.length === 4) out.push({ ...base, p0: 0, stride: 1, count: 4 });
      else if (valid.length === 2 && valid[1]! - valid[0]! === 2) out.push({ ...base, p0: valid[0]!, stride: 2, count: 2 });
      else for (const p of valid) out.push({ ...base, p0: p, stride: 4, count: 1 });
    }
  }
  return out;
})();

/** Whether 'taps' applies: the wasm backend, 3×3 stride 1 pad 1 on a 2×2 input, channel counts the GEMM takes (multiples of 8). */
export function tapsSupports(g: ConvGeometry): boolean {
  return wasmBackend() !== null && g.k === 3 && g.stride === 1 && g.pad === 1 && g.inSize === 2 && g.outSize === 2 && g.cin % 8 === 0 && g.cout % 8 === 0;
}

const zeroed = <R extends tf.Rank>(shape: number[]): tf.Tensor<R> => {
  const t = emptyTensor<R>(shape);
  wasmGemm().view(heapPtr(t), t.size).fill(0);
  return t;
};

/**
 * y[p] = Σ_tap x[p + shift] · W_tap over the pixels each tap connects; with `transposed`, the input
 * gradient dx[p + shift] += dy[p] · W_tapᵀ (the same pairs the other way, W_tapᵀ read through strides).
 */
function tapsConv(src: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, transposed: boolean): tf.Tensor4D {
  const gm = wasmGemm();
  const n = src.shape[0];
  const [cIn, cOut] = transposed ? [g.cout, g.cin] : [g.cin, g.cout];
  const dst = zeroed<tf.Rank.R4>([n, 2, 2, cOut]);
  const [ps, pw, pd] = [heapPtr(src), heapPtr(w), heapPtr(dst)];
  for (const r of TAP_ROWS) {
    const [from, to] = transposed ? [r.p0, r.p0 + r.shift] : [r.p0 + r.shift, r.p0];
    const tap = pw + r.tap * g.cin * g.cout * 4;
    gm.gemm(n * r.count, cOut, cIn,
      { ptr: ps + from * cIn * 4, rs: r.stride * cIn * 4, cs: 4 },
      transposed ? { ptr: tap, rs: 4, cs: g.cout * 4 } : { ptr: tap, rs: g.cout * 4, cs: 4 },
      { ptr: pd + to * cOut * 4, ldc: r.stride * cOut * 4 }, true);
  }
  return dst;
}

export function tapsConvForward(x: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  return tapsConv(x, w, g, false);
}

export function tapsConvBackpropInput(dy: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  return tapsConv(dy, w, g, true);
}

/** dW_tap = Σ over the tap's pixel pairs of x[p + shift]ᵀ · dy[p] (xᵀ read through strides). */
export function tapsConvBackpropFilter(x: tf.Tensor4D, dy: tf.Tensor4D, g: ConvGeometry): tf.Tensor4D {
  const gm = wasmGemm();
  const n = x.shape[0];
  const dw = zeroed<tf.Rank.R4>([3, 3, g.cin, g.cout]);
  const [px, pdy, pdw] = [heapPtr(x), heapPtr(dy), heapPtr(dw)];
  for (const r of TAP_ROWS) {
    gm.gemm(g.cin, g.cout, n * r.count,
      { ptr: px + (r.p0 + r.shift) * g.cin * 4, rs: 4, cs: r.stride * g.cin * 4 },
      { ptr: pdy + r.p0 * g.cout * 4, rs: r.stride * g.cout * 4, cs: 4 },
      { ptr: pdw + r.tap * g.cin * g.cout * 4, ldc: g.cout * 4 }, true);
  }
  return dw;
}
