// Moving parameters and gradients between tfjs tensors and the flat Float32Array buffers with as
// few copies as possible: ~95 MB each way per step for ResNet-50, a real share of a wasm step.
import * as tf from '@tensorflow/tfjs-core';

/** The bits of the wasm backend we read: the heap and where each tensor lives in it. */
interface WasmBackendView {
  wasm: { HEAPF32: Float32Array };
  dataIdMap: { get(id: object): { memoryOffset: number | null; dtype: string } | undefined };
}

function wasmView(): WasmBackendView | null {
  if (tf.getBackend() !== 'wasm') return null;
  const b: unknown = tf.backend();
  const v = b as Partial<WasmBackendView>;
  if (!v.wasm || !(v.wasm.HEAPF32 instanceof Float32Array) || !v.dataIdMap || typeof v.dataIdMap.get !== 'function') return null;
  return v as WasmBackendView;
}

/** Copy a float32 tensor's values into out[offset…]: straight from the wasm heap when possible (one copy instead of two). */
export function readInto(t: tf.Tensor, out: Float32Array, offset: number): void {
  const v = wasmView();
  const entry = v?.dataIdMap.get(t.dataId);
  if (v && entry && entry.dtype === 'float32' && entry.memoryOffset !== null) {
    const start = entry.memoryOffset / 4;
    out.set(v.wasm.HEAPF32.subarray(start, start + t.size), offset);
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
