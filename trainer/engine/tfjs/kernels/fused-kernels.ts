// Fused batch-norm (+ ReLU) and max-pool kernels, registered with tfjs for the wasm and cpu
// backends. Why: built from stock ops, one training BN is ~12 kernels (each a full pass over the
// activation, the channel sums as matMuls with a ones row that XNNPACK re-packs every call) and the
// stem's max-pool backward is 9 strided slices, compares and pads; at ResNet-50's small spatial
// sizes those passes and per-kernel overheads were ~20% of the step (profile in
// bench/results/tfjs-step.md). Each kernel here is one or two plain loops over the tensors' own
// memory (the wasm heap or the cpu backend's arrays), accumulating in f64.
//
// Backends without these kernels (tensorflow via tfjs-node) keep the stock-op formulation in
// batch-norm.ts / max-pool.ts: `hasFusedKernels()` says which to use.
import * as tf from '@tensorflow/tfjs-core';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';
import { bnSimdOn, type BnSimd } from './bn-simd';
import { heapPtr, wasmBackend } from './gemm-kernels';
import { poolSimdOn } from './pool-simd';

export const BN_TRAIN = 'CohortBatchNormTrain';
export const BN_BACKWARD = 'CohortBatchNormBackward';
export const MAX_POOL = 'CohortMaxPoolArgmax';
export const MAX_POOL_BACKWARD = 'CohortMaxPoolBackward';
export const RELU_GRAD_ADD = 'CohortReluGradAdd';
const BACKENDS = ['wasm', 'cpu'] as const;

type Typed = Float32Array | Int32Array;
interface Io {
  input(t: tf.TensorInfo): Typed;
  /** Allocate every output before taking any view: a wasm allocation may move the heap. */
  outputs(specs: { shape: number[]; dtype: 'float32' | 'int32' }[]): { infos: tf.TensorInfo[]; views: Typed[] };
}

/** The wasm backend's heap with its SIMD batch-norm kernels, when they apply (C a multiple of 4). */
interface SimdHeap {
  k: BnSimd;
  ptr(t: tf.TensorInfo): number;
  alloc(shape: number[]): tf.TensorInfo;
  view(t: tf.TensorInfo): Float32Array;
  free(t: tf.TensorInfo): void;
}

function simdHeap(channels: number): SimdHeap | null {
  const be = wasmBackend();
  if (channels % 4 !== 0 || !be) return null;
  const w = tf.backend() as unknown as BackendWasm;
  return {
    k: bnSimdOn(be.wasm.asm.memory),
    ptr: heapPtr,
    alloc: (shape) => w.makeOutput(shape, 'float32'),
    view: (t) => w.typedArrayFromHeap(t) as Float32Array,
    free: (t) => void w.disposeData(t.dataId, true),
  };
}

function io(backend: tf.KernelBackend): Io {
  const wasm = backend as Partial<BackendWasm>;
  if (wasm.typedArrayFromHeap && wasm.makeOutput) {
    const b = backend as BackendWasm;
    return {
      outputs(specs) {
        const infos = specs.map((s) => b.makeOutput(s.shape, s.dtype));
        return { infos, views: infos.map((i) => b.typedArrayFromHeap(i) as Typed) };
      },
      input: (t) => b.typedArrayFromHeap(t) as Typed,
    };
  }
  // cpu backend: readSync hands back the stored array itself (no copy).
  return {
    outputs(specs) {
      const views = specs.map((s) => (s.dtype === 'int32' ? new Int32Array(sizeOf(s.shape)) : new Float32Array(sizeOf(s.shape))));
      const cpu = backend as unknown as { makeTensorInfo(shape: number[], dtype: string, values: Typed): tf.TensorInfo };
      const infos = specs.map((s, i) => cpu.makeTensorInfo(s.shape, s.dtype, views[i]!));
      return { infos, views };
    },
    input: (t) => backend.readSync(t.dataId) as Typed,
  };
}

const sizeOf = (shape: number[]): number => shape.reduce((a, b) => a * b, 1);

function register(kernelName: string, kernelFunc: tf.KernelFunc): void {
  for (const backendName of BACKENDS) {
    if (!tf.getKernel(kernelName, backendName)) tf.registerKernel({ kernelName, backendName, kernelFunc });
  }
}

let enabled = true;
/** Turn the fused kernels off (tests and A/B benchmarks of the stock-op formulation). */
export function setFusedKernelsEnabled(on: boolean): void {
  enabled = on;
}

/** True when the current backend runs the kernels of this file. */
export function hasFusedKernels(): boolean {
  return enabled && tf.getKernel(BN_TRAIN, tf.getBackend()) !== undefined;
}

/**
 * Training BN on batch statistics over x [M, C] (NHWC flattened), optional ReLU after; with the
 * optional input `res` [M, C] (a residual block's shortcut), y = ReLU(BN(x) + res) and `relu` must be set.
 * Outputs: y [M, C], xhat [M, C], mean [C], invstd [C], unbiased variance [C].
 */
register(BN_TRAIN, ({ inputs, attrs, backend }) => {
  const { x, gamma, beta, res } = inputs as { x: tf.TensorInfo; gamma: tf.TensorInfo; beta: tf.TensorInfo; res?: tf.TensorInfo };
  const { relu, eps } = attrs as unknown as { relu: boolean; eps: number };
  if (res && !relu) throw new Error(`${BN_TRAIN}: a residual input needs relu (the block's output is ReLU(BN(x) + res))`);
  const c = x.shape[x.shape.length - 1] as number;
  const m = sizeOf(x.shape) / c;
  const h = io(backend as tf.KernelBackend);
  const { infos, views } = h.outputs([
    { shape: x.shape, dtype: 'float32' },
    { shape: x.shape, dtype: 'float32' },
    { shape: [c], dtype: 'float32' },
    { shape: [c], dtype: 'float32' },
    { shape: [c], dtype: 'float32' },
  ]);
  const [y, xhat, mean, invstd, varUnbiased] = views as Float32Array[] as [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
  const sh = simdHeap(c);
  if (sh) {
    const [yI, xhatI, meanI, invstdI] = infos as [tf.TensorInfo, tf.TensorInfo, tf.TensorInfo, tf.TensorInfo];
    const [px, rowBytes] = [sh.ptr(x), c * 4];
    mean.fill(0);
    invstd.fill(0);
    sh.k.col_sum(px, sh.ptr(meanI), m, rowBytes);
    for (let k = 0; k < c; k++) mean[k] = mean[k]! / m;
    sh.k.col_sqdev(px, sh.ptr(meanI), sh.ptr(invstdI), m, rowBytes); // Σ(x−mean)² lands in invstd first
    for (let k = 0; k < c; k++) {
      const sq = invstd[k]!;
      varUnbiased[k] = sq / (m - 1);
      invstd[k] = 1 / Math.sqrt(sq / m + eps);
    }
    const stats = [px, sh.ptr(meanI), sh.ptr(invstdI), sh.ptr(gamma), sh.ptr(beta)];
    if (res) sh.k.norm_add_relu(...stats, sh.ptr(res), sh.ptr(xhatI), sh.ptr(yI), m, rowBytes);
    else (relu ? sh.k.norm_relu : sh.k.norm)(...stats, sh.ptr(xhatI), sh.ptr(yI), m, rowBytes);
    return infos;
  }
  const xs = h.input(x);
  const g = h.input(gamma);
  const bt = h.input(beta);
  const rs = res ? h.input(res) : null;
  const sum = new Float64Array(c);
  for (let i = 0, o = 0; i < m; i++, o += c) for (let k = 0; k < c; k++) sum[k]! += xs[o + k]!;
  for (let k = 0; k < c; k++) sum[k] = sum[k]! / m;
  const sq = new Float64Array(c);
  for (let i = 0, o = 0; i < m; i++, o += c) {
    for (let k = 0; k < c; k++) {
      const d = xs[o + k]! - sum[k]!;
      sq[k]! += d * d;
    }
  }
  for (let k = 0; k < c; k++) {
    mean[k] = sum[k]!;
    invstd[k] = 1 / Math.sqrt(sq[k]! / m + eps);
    varUnbiased[k] = sq[k]! / (m - 1);
  }
  for (let i = 0, o = 0; i < m; i++, o += c) {
    for (let k = 0; k < c; k++) {
      const xh = (xs[o + k]! - sum[k]!) * invstd[k]!;
      xhat[o + k] = xh;
      const v = Math.fround(xh * g[k]! + bt[k]!) + (rs ? rs[o + k]! : 0);
      y[o + k] = relu && !(v > 0) ? 0 : v;
    }
  }
  return infos;
});

/**
 * Backward of BN (+ ReLU when `out`, the forward's post-ReLU output, is given as the mask source).
 * `batchStats`: the statistics were the batch's (they depend on x); else constants (frozen BN).
 * Inputs dy [M, C], xhat [M, C], invstd [C], gamma [C] (+ out [M, C]). Outputs dx [M, C], dgamma, dbeta [C].
 */
register(BN_BACKWARD, ({ inputs, attrs, backend }) => {
  const { dy, xhat, invstd, gamma, out } = inputs as Record<'dy' | 'xhat' | 'invstd' | 'gamma', tf.TensorInfo> & { out?: tf.TensorInfo };
  const { batchStats } = attrs as unknown as { batchStats: boolean };
  const c = dy.shape[dy.shape.length - 1] as number;
  const m = sizeOf(dy.shape) / c;
  const h = io(backend as tf.KernelBackend);
  const { infos, views } = h.outputs([
    { shape: dy.shape, dtype: 'float32' },
    { shape: [c], dtype: 'float32' },
    { shape: [c], dtype: 'float32' },
  ]);
  const [dx, dgamma, dbeta] = views as [Float32Array, Float32Array, Float32Array];
  const sh = simdHeap(c);
  if (sh) {
    const [dxI, dgammaI, dbetaI] = infos as [tf.TensorInfo, tf.TensorInfo, tf.TensorInfo];
    const scratch = sh.alloc([3 * c]); // a, b, c0 (this allocation may grow the heap: views are taken after it)
    const rowBytes = c * 4;
    const [pdy, pxh, pout] = [sh.ptr(dy), sh.ptr(xhat), out ? sh.ptr(out) : 0];
    const [vdg, vdb, vs, vg, vis] = [sh.view(dgammaI), sh.view(dbetaI), sh.view(scratch), h.input(gamma), h.input(invstd)];
    vdg.fill(0);
    vdb.fill(0);
    if (out) sh.k.bwd_sums_masked(pdy, pxh, pout, sh.ptr(dbetaI), sh.ptr(dgammaI), m, rowBytes);
    else sh.k.bwd_sums(pdy, pxh, sh.ptr(dbetaI), sh.ptr(dgammaI), m, rowBytes);
    for (let k = 0; k < c; k++) {
      const a = vg[k]! * vis[k]!;
      vs[k] = a;
      vs[c + k] = batchStats ? (-a * vdg[k]!) / m : 0;
      vs[2 * c + k] = batchStats ? (-a * vdb[k]!) / m : 0;
    }
    const [pa, pb, pc] = [sh.ptr(scratch), sh.ptr(scratch) + rowBytes, sh.ptr(scratch) + 2 * rowBytes];
    if (out) sh.k.bwd_dx_masked(pdy, pxh, pout, pa, pb, pc, sh.ptr(dxI), m, rowBytes);
    else sh.k.bwd_dx(pdy, pxh, pa, pb, pc, sh.ptr(dxI), m, rowBytes);
    sh.free(scratch);
    return infos;
  }
  const g = h.input(dy);
  const xh = h.input(xhat);
  const is = h.input(invstd);
  const gm = h.input(gamma);
  const mask = out ? h.input(out) : null;
  const sb = new Float64Array(c);
  const sg = new Float64Array(c);
  for (let i = 0, o = 0; i < m; i++, o += c) {
    for (let k = 0; k < c; k++) {
      const gi = mask && !(mask[o + k]! > 0) ? 0 : g[o + k]!;
      sb[k]! += gi;
      sg[k]! += gi * xh[o + k]!;
    }
  }
  // dx = a·(g − dbeta/M − xhat·dgamma/M) with a = gamma·invstd; frozen statistics: dx = a·g.
  const a = new Float64Array(c);
  const b = new Float64Array(c);
  const c0 = new Float64Array(c);
  for (let k = 0; k < c; k++) {
    dbeta[k] = sb[k]!;
    dgamma[k] = sg[k]!;
    a[k] = gm[k]! * is[k]!;
    b[k] = batchStats ? (-a[k]! * sg[k]!) / m : 0;
    c0[k] = batchStats ? (-a[k]! * sb[k]!) / m : 0;
  }
  for (let i = 0, o = 0; i < m; i++, o += c) {
    for (let k = 0; k < c; k++) {
      const gi = mask && !(mask[o + k]! > 0) ? 0 : g[o + k]!;
      dx[o + k] = gi * a[k]! + xh[o + k]! * b[k]! + c0[k]!;
    }
  }
  return infos;
});

/** dst = a + (out > 0 ? dy : 0), all [M, C]: a residual block's input gradient (the main path's `a` plus the shortcut's, through the block's ReLU). */
register(RELU_GRAD_ADD, ({ inputs, backend }) => {
  const { a, dy, out } = inputs as Record<'a' | 'dy' | 'out', tf.TensorInfo>;
  const c = a.shape[a.shape.length - 1] as number;
  const h = io(backend as tf.KernelBackend);
  const { infos, views } = h.outputs([{ shape: a.shape, dtype: 'float32' }]);
  const sh = simdHeap(c);
  if (sh) {
    sh.k.relu_grad_add(sh.ptr(a), sh.ptr(dy), sh.ptr(out), sh.ptr(infos[0]!), sizeOf(a.shape) / c, c * 4);
    return infos[0]!;
  }
  const [va, vdy, vout, dst] = [h.input(a), h.input(dy), h.input(out), views[0] as Float32Array];
  for (let i = 0; i < dst.length; i++) dst[i] = va[i]! + (vout[i]! > 0 ? vdy[i]! : 0);
  return infos[0]!;
});

interface PoolAttrs {
  k: number;
  stride: number;
  pad: number;
  outSize: number;
}

/**
 * Max-pool NHWC with the index (into x) of each window's first maximum in row-major tap order,
 * as torch and the cpu backend route the gradient. Padding never wins (it is −∞).
 */
register(MAX_POOL, ({ inputs, attrs, backend }) => {
  const { x } = inputs as { x: tf.TensorInfo };
  const { k, stride, pad, outSize } = attrs as unknown as PoolAttrs;
  const [n, hIn, wIn, c] = x.shape as [number, number, number, number];
  const h = io(backend as tf.KernelBackend);
  const shape = [n, outSize, outSize, c];
  const { infos, views } = h.outputs([
    { shape, dtype: 'float32' },
    { shape, dtype: 'int32' },
  ]);
  const [y, arg] = views as [Float32Array, Int32Array];
  const be = c % 4 === 0 ? wasmBackend() : null;
  if (be) {
    // The same walk with the per-channel loop as SIMD on the heap (pool-simd.ts).
    const ps = poolSimdOn(be.wasm.asm.memory);
    const [px, py, pa] = [heapPtr(x), heapPtr(infos[0]!), heapPtr(infos[1]!)];
    const cb = c * 4;
    let o = 0;
    for (let b = 0; b < n; b++) {
      for (let oy = 0; oy < outSize; oy++) {
        const y0 = Math.max(0, oy * stride - pad);
        const y1 = Math.min(hIn, oy * stride - pad + k);
        for (let ox = 0; ox < outSize; ox++, o += c) {
          const x0 = Math.max(0, ox * stride - pad);
          const x1 = Math.min(wIn, ox * stride - pad + k);
          for (let iy = y0; iy < y1; iy++) {
            for (let ix = x0; ix < x1; ix++) {
              const base = ((b * hIn + iy) * wIn + ix) * c;
              (iy === y0 && ix === x0 ? ps.pool_first : ps.pool_max)(px + 4 * base, py + 4 * o, pa + 4 * o, base, cb);
            }
          }
        }
      }
    }
    return infos;
  }
  const xs = h.input(x);
  const best = new Float32Array(c);
  const at = new Int32Array(c);
  let o = 0;
  for (let b = 0; b < n; b++) {
    for (let oy = 0; oy < outSize; oy++) {
      for (let ox = 0; ox < outSize; ox++) {
        best.fill(-Infinity);
        at.fill(-1);
        for (let ky = 0; ky < k; ky++) {
          const iy = oy * stride - pad + ky;
          if (iy < 0 || iy >= hIn) continue;
          for (let kx = 0; kx < k; kx++) {
            const ix = ox * stride - pad + kx;
            if (ix < 0 || ix >= wIn) continue;
            const base = ((b * hIn + iy) * wIn + ix) * c;
            for (let ch = 0; ch < c; ch++) {
              const v = xs[base + ch]!;
              if (v > best[ch]! || at[ch] === -1) {
                best[ch] = v;
                at[ch] = base + ch;
              }
            }
          }
        }
        y.set(best, o);
        arg.set(at, o);
        o += c;
      }
    }
  }
  return infos;
});

/** dx [N,H,W,C] of MAX_POOL: each window's dy added at its argmax. Inputs dy, argmax; attr inShape. */
register(MAX_POOL_BACKWARD, ({ inputs, attrs, backend }) => {
  const { dy, argmax } = inputs as { dy: tf.TensorInfo; argmax: tf.TensorInfo };
  const { inShape } = attrs as unknown as { inShape: number[] };
  const h = io(backend as tf.KernelBackend);
  const { infos, views } = h.outputs([{ shape: inShape, dtype: 'float32' }]);
  const dx = views[0] as Float32Array;
  dx.fill(0); // wasm outputs are uninitialised heap
  const g = h.input(dy);
  const arg = h.input(argmax);
  for (let i = 0; i < g.length; i++) dx[arg[i]!]! += g[i]!;
  return infos[0]!; // one output: a TensorInfo, not an array (runKernel would return [dx])
});
