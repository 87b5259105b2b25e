// The 'gemm' convolution implementations (conv-kernels.ts): forward, input gradient and filter
// gradient as one call of the hand-written wasm GEMM (gemm-kernels.ts) each, on the wasm backend's
// heap. 1×1 stride-1 convs are plain GEMMs over the tensors as they are; everything else goes
// through an im2col matrix built by a wasm kernel in a reused scratch block (the stride-2 1×1
// subsample is an im2col with k = 1). Transposed operands (Xᵀ, Wᵀ, colᵀ) are strides to the GEMM,
// never materialised, which is what removes the Transpose / StridedSlice / Pad / Slice kernels the
// stock-op formulations need. Outputs are fresh tensors written in place (never shared dataIds).
import type * as tf from '@tensorflow/tfjs-core';
import type { ConvGeometry } from './conv-geometry';
import { emptyTensor, heapPtr, wasmBackend, wasmGemm, type WasmGemm } from '../kernels/gemm-kernels';

/** Whether the 'gemm' implementations can run: the active backend is tfjs-backend-wasm. */
export function gemmConvAvailable(): boolean {
  return wasmBackend() !== null;
}

/** Which of the three 'gemm' implementations fit this geometry (the GEMM's N must be a multiple of 8). */
export function gemmConvSupports(g: ConvGeometry, center: boolean): { fwd: boolean; dx: boolean; dw: boolean } {
  const dxN = center || g.k === 1 ? g.cin : g.k * g.k * g.cin;
  return { fwd: g.cout % 8 === 0, dx: dxN % 8 === 0, dw: g.cout % 8 === 0 };
}

const plain1x1 = (g: ConvGeometry): boolean => g.k === 1 && g.stride === 1 && g.pad === 0;

/** Byte offset of the centre tap's [cin, cout] block in an HWIO filter. */
const centerOffset = (g: ConvGeometry): number => {
  const c = (g.k - 1) / 2;
  return (c * g.k + c) * g.cin * g.cout * 4;
};

/** x's im2col matrix [n·out², k·k·cin] in the column scratch; returns its pointer. */
function im2col(gm: WasmGemm, x: tf.Tensor4D, g: ConvGeometry): number {
  const n = x.shape[0];
  const kk = g.k * g.k * g.cin;
  const col = gm.colScratch.get(n * g.outSize * g.outSize * kk * 4);
  gm.im2col(col, heapPtr(x), n, g.inSize, g.inSize, g.cin, g.k, g.stride, g.pad, g.outSize, g.outSize);
  return col;
}

/** `center`: only the filter's centre tap meets data (1×1 input, "same" padding). */
export function gemmConvForward(x: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, center: boolean): tf.Tensor4D {
  const gm = wasmGemm();
  const n = x.shape[0];
  const rows = n * g.outSize * g.outSize;
  const y = emptyTensor<tf.Rank.R4>([n, g.outSize, g.outSize, g.cout]);
  const out = { ptr: heapPtr(y), ldc: g.cout * 4 };
  if (center || plain1x1(g)) {
    const wp = heapPtr(w) + (center ? centerOffset(g) : 0);
    gm.gemm(rows, g.cout, g.cin, { ptr: heapPtr(x), rs: g.cin * 4, cs: 4 }, { ptr: wp, rs: g.cout * 4, cs: 4 }, out);
  } else {
    const kk = g.k * g.k * g.cin;
    const col = im2col(gm, x, g);
    gm.gemm(rows, g.cout, kk, { ptr: col, rs: kk * 4, cs: 4 }, { ptr: heapPtr(w), rs: g.cout * 4, cs: 4 }, out);
  }
  return y;
}

/** dx = dy · Wᵀ (Wᵀ read through strides), then col2im (a strided scatter for 1×1 stride 2). */
export function gemmConvBackpropInput(dy: tf.Tensor4D, w: tf.Tensor4D, g: ConvGeometry, center: boolean): tf.Tensor4D {
  const gm = wasmGemm();
  const n = dy.shape[0];
  const rows = n * g.outSize * g.outSize;
  const dyOp = { ptr: heapPtr(dy), rs: g.cout * 4, cs: 4 };
  const dx = emptyTensor<tf.Rank.R4>([n, g.inSize, g.inSize, g.cin]);
  if (center || plain1x1(g)) {
    // B[co, ci] = W[ci, co]
    const wp = heapPtr(w) + (center ? centerOffset(g) : 0);
    gm.gemm(rows, g.cin, g.cout, dyOp, { ptr: wp, rs: 4, cs: g.cout * 4 }, { ptr: heapPtr(dx), ldc: g.cin * 4 });
    return dx;
  }
  const kk = g.k * g.k * g.cin;
  const col = gm.colScratch.get(rows * kk * 4);
  // dcol [rows, kk] = dy · W2dᵀ, W2d = W as [kk, cout]
  gm.gemm(rows, kk, g.cout, dyOp, { ptr: heapPtr(w), rs: 4, cs: g.cout * 4 }, { ptr: col, ldc: kk * 4 });
  const dxPtr = heapPtr(dx);
  gm.view(dxPtr, dx.size).fill(0);
  gm.col2im(col, dxPtr, n, g.inSize, g.inSize, g.cin, g.k, g.stride, g.pad, g.outSize, g.outSize);
  return dx;
}

/** dW = colᵀ · dy (colᵀ read through strides; for 1×1 stride 1, col is x itself). */
export function gemmConvBackpropFilter(x: tf.Tensor4D, dy: tf.Tensor4D, g: ConvGeometry, center: boolean): tf.Tensor4D {
  const gm = wasmGemm();
  const n = x.shape[0];
  const rows = n * g.outSize * g.outSize;
  const dyOp = { ptr: heapPtr(dy), rs: g.cout * 4, cs: 4 };
  const dw = emptyTensor<tf.Rank.R4>([g.k, g.k, g.cin, g.cout]);
  const dwPtr = heapPtr(dw);
  if (center) {
    gm.view(dwPtr, dw.size).fill(0);
    gm.gemm(g.cin, g.cout, rows, { ptr: heapPtr(x), rs: 4, cs: g.cin * 4 }, dyOp, { ptr: dwPtr + centerOffset(g), ldc: g.cout * 4 });
  } else if (plain1x1(g)) {
    gm.gemm(g.cin, g.cout, rows, { ptr: heapPtr(x), rs: 4, cs: g.cin * 4 }, dyOp, { ptr: dwPtr, ldc: g.cout * 4 });
  } else {
    const kk = g.k * g.k * g.cin;
    const col = im2col(gm, x, g);
    gm.gemm(kk, g.cout, rows, { ptr: col, rs: 4, cs: kk * 4 }, dyOp, { ptr: dwPtr, ldc: g.cout * 4 });
  }
  return dw;
}
