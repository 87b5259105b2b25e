// The max-pool-with-argmax forward's inner loop (fused-kernels.ts) as wasm SIMD on tfjs-backend-wasm's
// heap, for channel counts that are a multiple of 4. Why: the plain-JS loop's `v > best` branch is
// unpredictable on real activations, ~20 ms a step for the imagenet stem's pool at 64² (batch 16);
// f32x4.gt + bitselect has no branch. Same semantics as the JS loop, which stays the reference:
//   pool_first(x, y, arg, idx, cBytes)  y[c] = x[c]; arg[c] = idx + c         (a window's first tap)
//   pool_max(x, y, arg, idx, cBytes)    where x[c] > y[c]: y[c] = x[c]; arg[c] = idx + c
// (a later tap wins only when strictly greater, so the first maximum in tap order is kept and NaN
// never replaces). Pointers are byte offsets into the heap; idx is x's flat element index.
import { I32, V128, advance, f32x4, get, i32, i32x4, kernelsPerMemory, set, v128, whileBelow, type WasmFunction } from '../../../util/wasm-asm';

const [X, Y, A, IDX, CB, J, IV, V, M] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const at = (p: number): number[] => [...get(p), ...get(J), ...i32.add];

function poolKernel(name: string, body: number[]): WasmFunction {
  return {
    name,
    params: [I32, I32, I32, I32, I32],
    locals: [[1, I32], [3, V128]],
    code: [
      ...get(IDX), ...i32x4.splat, ...i32x4.const(0, 1, 2, 3), ...i32x4.add, ...set(IV),
      ...whileBelow(J, CB, [
        ...at(X), ...v128.load(), ...set(V),
        ...body,
        ...get(IV), ...i32x4.const(4, 4, 4, 4), ...i32x4.add, ...set(IV),
        ...advance(J, 16),
      ]),
    ],
  };
}

function kernels(): WasmFunction[] {
  const first = poolKernel('pool_first', [...at(Y), ...get(V), ...v128.store(), ...at(A), ...get(IV), ...v128.store()]);
  const max = poolKernel('pool_max', [
    ...get(V), ...at(Y), ...v128.load(), ...f32x4.gt, ...set(M),
    ...at(Y), ...get(V), ...at(Y), ...v128.load(), ...get(M), ...v128.bitselect, ...v128.store(),
    ...at(A), ...get(IV), ...at(A), ...v128.load(), ...get(M), ...v128.bitselect, ...v128.store(),
  ]);
  return [first, max];
}

type K = (x: number, y: number, arg: number, idx: number, cBytes: number) => void;
export interface PoolSimd {
  pool_first: K;
  pool_max: K;
}

/** The kernels instantiated on `heap` (once per memory). */
export const poolSimdOn = kernelsPerMemory<PoolSimd>(kernels);
