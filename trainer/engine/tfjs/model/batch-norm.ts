// Batch normalisation over NHWC activations, forward and a hand-written backward.
// Why hand-written: tfjs-core's stock gradient tiles every per-channel vector to the full
// activation size; here each per-channel reduction is one matMul with a ones row (wasm's Sum over
// leading axes transposes the whole tensor first), and dx is 4 broadcast element-wise ops.
import * as tf from '@tensorflow/tfjs-core';
import { BN_BACKWARD, BN_TRAIN, RELU_GRAD_ADD, hasFusedKernels } from '../kernels/fused-kernels';

export const BN_EPS = 1e-5;
/** Running-statistics momentum, as torch.nn.BatchNorm2d (new = (1-m)·old + m·batch). */
export const BN_MOMENTUM = 0.1;

/** Σ over rows of a [M, C] matrix as a [1, C] row: one fast matMul instead of a transposing Sum. */
export function channelSum(t2d: tf.Tensor2D, ones: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(ones, t2d);
}

export interface BnCache {
  /** Normalised input, [M, C]. */
  xhat: tf.Tensor2D;
  /** 1/sqrt(var + eps) of the statistics used, [1, C]. */
  invstd: tf.Tensor2D;
}

export interface BnTrainOut {
  y: tf.Tensor4D;
  cache: BnCache;
  /** Batch mean and unbiased variance ([C] each) for the running-statistics update. */
  mean: tf.Tensor1D;
  varUnbiased: tf.Tensor1D;
}

/** Training-mode BN on batch statistics (biased variance normalises, as torch), from stock ops. */
function bnForwardTrain(x: tf.Tensor4D, gamma: tf.Tensor1D, beta: tf.Tensor1D, ones: tf.Tensor2D): BnTrainOut {
  const c = x.shape[3];
  const m = x.size / c;
  const x2 = tf.reshape(x, [m, c]) as tf.Tensor2D;
  const mean = tf.div(channelSum(x2, ones), m) as tf.Tensor2D;
  const variance = tf.div(channelSum(tf.squaredDifference(x2, mean) as tf.Tensor2D, ones), m) as tf.Tensor2D;
  const invstd = tf.rsqrt(tf.add(variance, BN_EPS)) as tf.Tensor2D;
  const xhat = tf.mul(tf.sub(x2, mean), invstd) as tf.Tensor2D;
  const y = tf.reshape(tf.add(tf.mul(xhat, gamma), beta), x.shape) as tf.Tensor4D;
  return { y, cache: { xhat, invstd }, mean: tf.reshape(mean, [c]), varUnbiased: tf.reshape(tf.mul(variance, m / (m - 1)), [c]) };
}

/**
 * Training BN on batch statistics followed by an optional ReLU: `y` is post-ReLU when `relu`.
 * With `res` (a residual block's shortcut, which implies the ReLU) y = ReLU(BN(x) + res): the
 * block's end in one pass instead of an add and a ReLU over the activation.
 * One fused kernel where the backend has it (fused-kernels.ts), else the stock-op formulation.
 */
export function bnTrainRelu(x: tf.Tensor4D, gamma: tf.Tensor1D, beta: tf.Tensor1D, ones: () => tf.Tensor2D, relu: boolean, res: tf.Tensor4D | null = null): BnTrainOut {
  const c = x.shape[3];
  if (x.size / c < 2) throw new Error(`batch norm needs more than one value per channel in training (got ${x.size / c}): use a batch size ≥ 2`);
  if (!hasFusedKernels()) {
    const r = bnForwardTrain(x, gamma, beta, ones());
    return res ? { ...r, y: tf.relu(tf.add(r.y, res)) as tf.Tensor4D } : relu ? { ...r, y: tf.relu(r.y) } : r;
  }
  const inputs: tf.NamedTensorMap = { x, gamma, beta, ...(res ? { res } : {}) };
  const [y, xhat, mean, invstd, varUnbiased] = tf.engine().runKernel(BN_TRAIN, inputs, { relu: relu || res !== null, eps: BN_EPS } as unknown as tf.NamedAttrMap) as tf.Tensor[];
  return {
    y: y as tf.Tensor4D,
    cache: { xhat: tf.reshape(xhat!, [x.size / c, c]), invstd: tf.reshape(invstd!, [1, c]) },
    mean: mean as tf.Tensor1D,
    varUnbiased: varUnbiased as tf.Tensor1D,
  };
}

/** BN on given (running) statistics: eval mode, and training with frozen BN. */
export function bnForwardStats(x: tf.Tensor4D, gamma: tf.Tensor1D, beta: tf.Tensor1D, mean: tf.Tensor1D, variance: tf.Tensor1D): { y: tf.Tensor4D; cache: BnCache } {
  const c = x.shape[3];
  const x2 = tf.reshape(x, [x.size / c, c]);
  const invstd = tf.reshape(tf.rsqrt(tf.add(variance, BN_EPS)), [1, c]) as tf.Tensor2D;
  const xhat = tf.mul(tf.sub(x2, mean), invstd) as tf.Tensor2D;
  return { y: tf.reshape(tf.add(tf.mul(xhat, gamma), beta), x.shape) as tf.Tensor4D, cache: { xhat, invstd } };
}

/** Eval-only BN folded into one scale and one shift (no cache kept). */
export function bnInfer(x: tf.Tensor4D, gamma: tf.Tensor1D, beta: tf.Tensor1D, mean: tf.Tensor1D, variance: tf.Tensor1D): tf.Tensor4D {
  const scale = tf.mul(gamma, tf.rsqrt(tf.add(variance, BN_EPS)));
  const shift = tf.sub(beta, tf.mul(mean, scale));
  return tf.add(tf.mul(x, scale), shift) as tf.Tensor4D;
}

export interface BnGrads {
  dx: tf.Tensor4D;
  dgamma: tf.Tensor1D;
  dbeta: tf.Tensor1D;
}

/**
 * Backward of bnTrainRelu / bnForwardTrain (`batchStats` true: the statistics depend on x) or of
 * bnForwardStats (false: constants), through the ReLU when `reluOut` (its post-ReLU output) is
 * given. `dy` is [N,H,W,C]; returns dx of the same shape.
 */
export function bnBackward(dy: tf.Tensor4D, cache: BnCache, gamma: tf.Tensor1D, ones: () => tf.Tensor2D, batchStats: boolean, reluOut: tf.Tensor4D | null = null): BnGrads {
  const c = dy.shape[3];
  const m = dy.size / c;
  if (hasFusedKernels()) {
    const inputs: tf.NamedTensorMap = { dy, xhat: cache.xhat, invstd: cache.invstd, gamma, ...(reluOut ? { out: reluOut } : {}) };
    const [dx, dgamma, dbeta] = tf.engine().runKernel(BN_BACKWARD, inputs, { batchStats } as unknown as tf.NamedAttrMap) as tf.Tensor[];
    return { dx: dx as tf.Tensor4D, dgamma: dgamma as tf.Tensor1D, dbeta: dbeta as tf.Tensor1D };
  }
  // ReLU backward fused into the mask multiply: step(out) is 1 where the ReLU passed.
  const g = tf.reshape(reluOut ? tf.mul(dy, tf.step(reluOut)) : dy, [m, c]) as tf.Tensor2D;
  const dbeta = channelSum(g, ones());
  const dgamma = channelSum(tf.mul(g, cache.xhat) as tf.Tensor2D, ones());
  const a = tf.mul(gamma, cache.invstd); // [1, C]
  let dx: tf.Tensor;
  if (batchStats) {
    // dx = a·(g − dbeta/M − xhat·dgamma/M), regrouped as g·a + xhat·b + c0 with per-channel b, c0.
    const b = tf.mul(a, tf.div(dgamma, -m));
    const c0 = tf.mul(a, tf.div(dbeta, -m));
    dx = tf.add(tf.add(tf.mul(g, a), tf.mul(cache.xhat, b)), c0);
  } else {
    dx = tf.mul(g, a);
  }
  return { dx: tf.reshape(dx, dy.shape) as tf.Tensor4D, dgamma: tf.reshape(dgamma, [c]), dbeta: tf.reshape(dbeta, [c]) };
}

/**
 * a + dy·[out > 0]: a residual block's input gradient, its main path's `a` plus the identity
 * shortcut's, which is dy through the block's final ReLU (`out` its post-ReLU output).
 */
export function reluGradAdd(a: tf.Tensor4D, dy: tf.Tensor4D, out: tf.Tensor4D): tf.Tensor4D {
  if (hasFusedKernels()) return tf.engine().runKernel(RELU_GRAD_ADD, { a, dy, out }) as tf.Tensor4D;
  return tf.add(a, tf.mul(dy, tf.step(out))) as tf.Tensor4D;
}
