// Moving parameters and gradients between tfjs tensors and the flat Float32Array buffers with as
// few copies as possible: ~95 MB each way per step for ResNet-50, a real share of a wasm step.
import * as tf from '@tensorflow/tfjs-core';
import { wasmBackend } from '../kernels/gemm-kernels';

/** Copy a float32 tensor's values into out[offset…]: straight from the wasm heap when possible (one copy instead of two). */
export function readInto(t: tf.Tensor, out: Float32Array, offset: number): void {
  const be = wasmBackend();
  const entry = be?.dataIdMap.get(t.dataId);
  if (be && entry && entry.dtype === 'float32' && entry.memoryOffset !== null) {
    out.set(new Float32Array(be.wasm.asm.memory.buffer, entry.memoryOffset, t.size), offset);
    return;
  }
  out.set(t.dataSync() as Float32Array, offset);
}

/**
 * A tensor holding a copy of `src`. The wasm backend copies into its heap at creation; the cpu
 * (and tensorflow) backends keep a reference to the array, so they get a private copy.
 */
export function tensorFrom(src: Float32Array, shape: number[]): tf.Tensor {
  return tf.tensor(tf.getBackend() === 'wasm' ? src : src.slice(), shape, 'float32');
}

/**
 * Replaces the values of `t` by `src` where they live, in the wasm heap: one copy, and no
 * allocation, free or heap growth, instead of a new tensor per weight per step (`tensorFrom`).
 * Returns false when this is not safe or not possible, and the caller makes a new tensor: on
 * other backends, and when another tensor shares `t`'s data (refCount > 1: tf.reshape, identity
 * and friends alias the dataId instead of copying, and an alias would see the new values).
 *
 * tfjs treats tensor data as immutable, and the wasm backend relies on that in one place: its
 * XNNPACK conv2d / matMul operators keep a packed copy of a filter keyed by the tensor's id until
 * the tensor is disposed. Unregistering and re-registering the id in the backend's C++ registry
 * runs those disposal callbacks (the packed filters are dropped and rebuilt on the next call) while
 * the JS tensor, its dataId and its heap memory stay. Anything else that caches by tensor must
 * hook disposal the same way, or not be used on tensors passed here (the model's own weights).
 */
export function overwrite(t: tf.Tensor, src: Float32Array): boolean {
  if (t.dtype !== 'float32' || t.size !== src.length || t.isDisposed) return false;
  const be = wasmBackend();
  const entry = be?.dataIdMap.get(t.dataId);
  if (!be || !entry || entry.dtype !== 'float32' || entry.memoryOffset === null || entry.refCount !== 1) return false;
  const registry = be.wasm.tfjs;
  if (typeof registry?.registerTensor !== 'function' || typeof registry.disposeData !== 'function') return false;
  registry.disposeData(entry.id);
  registry.registerTensor(entry.id, t.size, entry.memoryOffset);
  new Float32Array(be.wasm.asm.memory.buffer, entry.memoryOffset, t.size).set(src);
  return true;
}
