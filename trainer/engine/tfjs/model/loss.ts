// Softmax cross-entropy (mean over the batch), written out stably: tfjs has no LogSoftmax kernel
// on wasm or cpu, and exp() of raw logits overflows. logp = z − max − log Σ exp(z − max).
import * as tf from '@tensorflow/tfjs-core';

export interface LossOut {
  /** Mean loss, scalar. */
  loss: tf.Scalar;
  /** d(mean loss)/d logits = (softmax − onehot) / N, [N, K]. */
  dlogits: tf.Tensor2D;
  /** Per-sample log-probabilities, [N, K]. */
  logp: tf.Tensor2D;
}

export function logSoftmax(z: tf.Tensor2D): tf.Tensor2D {
  const shifted = tf.sub(z, tf.max(z, 1, true));
  return tf.sub(shifted, tf.log(tf.sum(tf.exp(shifted), 1, true)));
}

export function softmaxCrossEntropy(z: tf.Tensor2D, labels: tf.Tensor1D): LossOut {
  const [n, k] = z.shape;
  const onehot = tf.oneHot(labels, k);
  const logp = logSoftmax(z);
  const loss = tf.div(tf.neg(tf.sum(tf.mul(onehot, logp))), n) as tf.Scalar;
  const dlogits = tf.div(tf.sub(tf.exp(logp), onehot), n) as tf.Tensor2D;
  return { loss, dlogits, logp };
}

/** Checks labels before they reach oneHot (which silently yields an all-zero row when out of range). */
export function checkLabels(labels: Int32Array, batch: number, classes: number): void {
  if (labels.length < batch) throw new Error(`labels: need ${batch} labels for batch ${batch}, got ${labels.length}`);
  for (let i = 0; i < batch; i++) {
    const l = labels[i] as number;
    if (!(l >= 0 && l < classes)) throw new Error(`labels[${i}] = ${l} is outside [0, ${classes}): the model has ${classes} classes (--classes)`);
  }
}
