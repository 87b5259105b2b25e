// Batch-norm's per-element passes as wasm SIMD loops that run directly on tfjs-backend-wasm's heap
// (the module imports the backend's own memory, so tensors are read and written in place). Used by
// fused-kernels.ts when the channel count is a multiple of 4 (every ResNet-50 layer); the plain-JS
// loops there are the reference and the fallback. Layout: NHWC flattened to rows of C channels;
// pointers are byte offsets into the heap, per-channel vectors are C floats.
//
// Every kernel takes its pointers, then rows and rowBytes (= C·4):
//   col_sum(x, acc)                                  acc[c] += Σ_r x[r,c]
//   col_sqdev(x, mean, acc)                          acc[c] += Σ_r (x[r,c] − mean[c])²
//   norm(x, mean, invstd, gamma, beta, xhat, y)      xhat = (x − mean)·invstd; y = xhat·gamma + beta
//   norm_relu(…the same…)                            y = max(0, xhat·gamma + beta)
//   norm_add_relu(x, mean, invstd, gamma, beta, res, xhat, y)   y = max(0, xhat·gamma + beta + res)  (a residual block's end)
//   bwd_sums(dy, xhat, dbeta, dgamma)                dbeta[c] += Σ g; dgamma[c] += Σ g·xhat   (g = dy)
//   bwd_sums_masked(dy, xhat, out, dbeta, dgamma)    the same with g = out > 0 ? dy : 0 (ReLU backward)
//   bwd_dx(dy, xhat, a, b, c0, dx)                   dx = g·a + xhat·b + c0
//   bwd_dx_masked(dy, xhat, out, a, b, c0, dx)
//   relu_grad_add(a, dy, out, dst)                   dst = a + (out > 0 ? dy : 0)   (a residual block's input gradient)
import { I32, V128, advance, f32x4, get, i32, kernelsPerMemory, set, v128, whileBelow, type WasmFunction } from '../../../util/wasm-asm';

/** ptr + j (i32 locals) on the stack. */
const addr = (ptr: number, j: number): number[] => [...get(ptr), ...get(j), ...i32.add];
const vload = (ptr: number, j: number): number[] => [...addr(ptr, j), ...v128.load()];
const vstore = (ptr: number, j: number, value: number[]): number[] => [...addr(ptr, j), ...value, ...v128.store()];

/**
 * A kernel over `rows` rows of `rowBytes`: params are the pointers, then rows and rowBytes. `rowPtrs`
 * (indices into the params) advance by a row each row; the others are per-channel vectors indexed
 * by the channel offset J alone. `body(J)` handles one 4-channel vector.
 */
function rowKernel(name: string, nPtrs: number, rowPtrs: number[], vTemps: number, body: (j: number, t: number) => number[]): WasmFunction {
  const ROWS = nPtrs;
  const ROWBYTES = nPtrs + 1;
  const END = nPtrs + 2; // i32 locals: end of the row pointer 0, J
  const J = nPtrs + 3;
  const T = nPtrs + 4; // first v128 temp
  const first = rowPtrs[0] as number;
  return {
    name,
    params: new Array<number>(nPtrs + 2).fill(I32),
    locals: [[2, I32], ...(vTemps ? ([[vTemps, V128]] as [number, number][]) : [])],
    code: [
      ...get(first), ...get(ROWS), ...get(ROWBYTES), ...i32.mul, ...i32.add, ...set(END), // end = p0 + rows·rowBytes
      ...whileBelow(first, END, [
        ...i32.const(0), ...set(J),
        ...whileBelow(J, ROWBYTES, [...body(J, T), ...advance(J, 16)]),
        ...rowPtrs.flatMap((p) => [...get(p), ...get(ROWBYTES), ...i32.add, ...set(p)]),
      ]),
    ],
  };
}

function kernels(): WasmFunction[] {
  // Param order matches the comment at the top of the file.
  const colSum = rowKernel('col_sum', 2, [0], 0, (j) => vstore(1, j, [...vload(1, j), ...vload(0, j), ...f32x4.add]));
  const colSqdev = rowKernel('col_sqdev', 3, [0], 1, (j, t) => [
    ...vload(0, j), ...vload(1, j), ...f32x4.sub, ...set(t),
    ...vstore(2, j, [...vload(2, j), ...get(t), ...get(t), ...f32x4.mul, ...f32x4.add]),
  ]);
  const norm = (relu: boolean): WasmFunction =>
    // x 0, mean 1, invstd 2, gamma 3, beta 4, xhat 5, y 6
    rowKernel(relu ? 'norm_relu' : 'norm', 7, [0, 5, 6], 1, (j, t) => [
      ...vload(0, j), ...vload(1, j), ...f32x4.sub, ...vload(2, j), ...f32x4.mul, ...set(t),
      ...vstore(5, j, get(t)),
      ...vstore(6, j, relu
        ? [...v128.zero, ...get(t), ...vload(3, j), ...f32x4.mul, ...vload(4, j), ...f32x4.add, ...f32x4.pmax]
        : [...get(t), ...vload(3, j), ...f32x4.mul, ...vload(4, j), ...f32x4.add]),
    ]);
  // x 0, mean 1, invstd 2, gamma 3, beta 4, res 5, xhat 6, y 7: the same sums as norm, then + res, in
  // the order the unfused add(norm(x), res) rounds them.
  const normAddRelu = rowKernel('norm_add_relu', 8, [0, 5, 6, 7], 1, (j, t) => [
    ...vload(0, j), ...vload(1, j), ...f32x4.sub, ...vload(2, j), ...f32x4.mul, ...set(t),
    ...vstore(6, j, get(t)),
    ...vstore(7, j, [...v128.zero, ...get(t), ...vload(3, j), ...f32x4.mul, ...vload(4, j), ...f32x4.add, ...vload(5, j), ...f32x4.add, ...f32x4.pmax]),
  ]);
  // g = dy, or dy where out > 0 else +0 (the ReLU's backward).
  const grad = (masked: boolean, dy: number, out: number, j: number): number[] =>
    masked ? [...vload(dy, j), ...vload(out, j), ...v128.zero, ...f32x4.gt, ...v128.and] : vload(dy, j);
  const bwdSums = (masked: boolean): WasmFunction => {
    // dy 0, xhat 1, [out 2], dbeta, dgamma
    const o = masked ? 1 : 0;
    const [DB, DG] = [2 + o, 3 + o];
    return rowKernel(masked ? 'bwd_sums_masked' : 'bwd_sums', 4 + o, masked ? [0, 1, 2] : [0, 1], 1, (j, t) => [
      ...grad(masked, 0, 2, j), ...set(t),
      ...vstore(DB, j, [...vload(DB, j), ...get(t), ...f32x4.add]),
      ...vstore(DG, j, [...vload(DG, j), ...get(t), ...vload(1, j), ...f32x4.mul, ...f32x4.add]),
    ]);
  };
  const bwdDx = (masked: boolean): WasmFunction => {
    // dy 0, xhat 1, [out 2], a, b, c0, dx
    const o = masked ? 1 : 0;
    const [A, B, C0, DX] = [2 + o, 3 + o, 4 + o, 5 + o];
    return rowKernel(masked ? 'bwd_dx_masked' : 'bwd_dx', 6 + o, masked ? [0, 1, 2, DX] : [0, 1, DX], 0, (j) =>
      vstore(DX, j, [...grad(masked, 0, 2, j), ...vload(A, j), ...f32x4.mul, ...vload(1, j), ...vload(B, j), ...f32x4.mul, ...f32x4.add, ...vload(C0, j), ...f32x4.add]),
    );
  };
  // a 0, dy 1, out 2, dst 3
  const reluGradAdd = rowKernel('relu_grad_add', 4, [0, 1, 2, 3], 0, (j) => vstore(3, j, [...vload(0, j), ...grad(true, 1, 2, j), ...f32x4.add]));
  return [colSum, colSqdev, norm(false), norm(true), normAddRelu, bwdSums(false), bwdSums(true), bwdDx(false), bwdDx(true), reluGradAdd];
}

type K = (...ptrs: number[]) => void;
export interface BnSimd {
  col_sum: K;
  col_sqdev: K;
  norm: K;
  norm_relu: K;
  norm_add_relu: K;
  bwd_sums: K;
  bwd_sums_masked: K;
  bwd_dx: K;
  bwd_dx_masked: K;
  relu_grad_add: K;
}

/** The kernels instantiated on `heap` (once per memory). */
export const bnSimdOn = kernelsPerMemory<BnSimd>(kernels);
