// The true peak of tfjs's tensor bytes, not the largest of a few samples. tfjs has no allocation hook,
// and tf.profile() records every kernel with its shapes (far too costly around a training loop), so
// this watches the engine's own counter: tf.memory().numBytes is `engine.state.numBytes`, which the
// engine updates on every tensor allocation and disposal (engine.ts trackTensor / disposeTensor /
// the in-place write). An accessor on that field keeps the highest value it takes: one comparison
// per tensor. What it measures, per backend:
// - every backend: the bytes of all live tensors' data as tfjs accounts them (a peak between two
//   samples, e.g. activations alive only inside a step, is caught);
// - tensorflow (tfjs-node, CPU or GPU): libtensorflow's allocator holds more than that; on a GPU the
//   process's own device bytes come from nvidia-smi (step.memory gpuProcessBytes), not from here;
// - wasm: the wasm heap grows to the allocator's high-water mark and never shrinks; this is the
//   tensors' share of it.
// One watcher per engine (the rank's). If the engine's state is replaced (tf.engine().reset()) the
// watch moves to the new state at the next read and the peak starts again from its value there; if
// the field cannot be watched the peak falls back to sampling, and `exact` says so.
import * as tf from '@tensorflow/tfjs-core';

interface CountingState {
  numBytes: number;
}

export class TensorBytesPeak {
  private peakBytes = 0;
  private watched: CountingState | undefined;
  private value = 0;
  /** False when the counter could not be watched: peak() is then the largest value read. */
  exact = true;
  private disposed = false;

  constructor(private readonly engine: () => { state: CountingState } = () => tf.engine() as unknown as { state: CountingState }) {
    this.watch();
  }

  /** tf.memory().numBytes now. */
  current(): number {
    this.watch();
    return this.engine().state.numBytes;
  }

  /** The highest numBytes since construction or the last reset(). */
  peak(): number {
    const now = this.current();
    this.peakBytes = Math.max(this.peakBytes, now);
    return this.peakBytes;
  }

  /** Warm-up is over: the peak from now on is the training loop's. */
  reset(): void {
    this.peakBytes = this.current();
  }

  private watch(): void {
    const state = this.engine().state;
    if (this.disposed || state === this.watched) return;
    const moved = this.watched !== undefined;
    this.unwatch();
    this.value = state.numBytes;
    this.peakBytes = moved ? this.value : Math.max(this.peakBytes, this.value);
    try {
      Object.defineProperty(state, 'numBytes', {
        configurable: true,
        enumerable: true,
        get: () => this.value,
        set: (v: number) => {
          this.value = v;
          if (v > this.peakBytes) this.peakBytes = v;
        },
      });
      this.watched = state;
    } catch {
      this.exact = false;
    }
  }

  private unwatch(): void {
    const s = this.watched;
    if (!s) return;
    const v = this.value;
    Object.defineProperty(s, 'numBytes', { configurable: true, enumerable: true, writable: true, value: v });
    this.watched = undefined;
  }

  /** Puts the plain field back (with its current value). */
  dispose(): void {
    if (this.disposed) return;
    this.unwatch();
    this.disposed = true;
  }
}
