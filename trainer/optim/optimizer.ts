// Optimizers over the one flat parameter buffer (the same layout the allreduce fuses gradients
// into). Semantics follow torch.optim so results compare with the PyTorch engine and the seeds.
import type { OptimizerName } from '../protocol';
import { COLLECTIVE_SCRATCH_BYTES, type ReduceHome } from '../collectives';
import { FlatBuffers } from './update-kernels';

export interface Optimizer {
  readonly name: OptimizerName;
  /**
   * The parameter and gradient buffers the update runs on in place (wasm memory, see
   * update-kernels.ts). Train with these; `step` on other arrays copies through them.
   */
  readonly params: Float32Array;
  readonly grads: Float32Array;
  /** Their memory and free scratch in it, for the collective to reduce `grads` in place (Collective.registerMemory). */
  readonly home: ReduceHome;
  /** Updates `params` in place from the (already averaged) gradients at learning rate `lr`. */
  step(params: Float32Array, grads: Float32Array, lr: number): void;
  /**
   * Starts the next step at learning rate `lr` and returns the update of one range of the own
   * buffers, [start, end) with start a multiple of 4 and end a multiple of 4 or the end: for a step
   * whose ranges are updated as they become ready (Collective.shardedUpdate). Every element must be
   * updated once per step; on other ranges `params` and the state stay as they were.
   */
  beginStep(lr: number): (start: number, end: number) => void;
  /** State for checkpoints: named flat buffers plus the step counter. */
  state(): { t: number; buffers: Record<string, Float32Array> };
  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void;
}

export interface OptimizerOptions {
  momentum: number;
  weightDecay: number;
}

/** Buffers 0 and 1 are params and grads; the rest are the optimizer's state. */
abstract class FlatOptimizer {
  protected readonly mem: FlatBuffers;
  protected t = 0;
  readonly params: Float32Array;
  readonly grads: Float32Array;

  readonly home: ReduceHome;

  constructor(size: number, stateBuffers: number) {
    this.mem = new FlatBuffers(2 + stateBuffers, size, COLLECTIVE_SCRATCH_BYTES);
    [this.params, this.grads] = this.mem.views as [Float32Array, Float32Array];
    this.home = { memory: this.mem.memory, scratchOffset: this.mem.scratchOffset };
  }

  step(params: Float32Array, grads: Float32Array, lr: number): void {
    const own = params === this.params;
    if (!own) this.params.set(params);
    if (grads !== this.grads) this.grads.set(grads);
    this.beginStep(lr)(0, this.params.length);
    if (!own) params.set(this.params);
  }

  beginStep(lr: number): (start: number, end: number) => void {
    this.t++;
    const size = this.params.length;
    return (start, end) => {
      if (!(start >= 0 && start <= end && end <= size && start % 4 === 0 && (end % 4 === 0 || end === size))) {
        throw new Error(`optimizer: cannot update the range [${start}, ${end}) of ${size} parameters (it must start on a multiple of 4 and end on one or at the end)`);
      }
      // The SIMD kernels run 4 floats at a time: a range ending at the buffer's end runs on into its padding.
      if (end > start) this.update(lr, start * 4, end === size ? this.mem.paddedBytes : end * 4);
    };
  }

  /**
   * One update over bytes [from, to) of the own buffers (multiples of 16); `this.t` is already the
   * new step count (1 on the first).
   */
  protected abstract update(lr: number, from: number, to: number): void;
}

/** torch.optim.AdamW: decoupled weight decay, bias-corrected moments. */
export class AdamW extends FlatOptimizer implements Optimizer {
  readonly name = 'adamw' as const;

  constructor(
    size: number,
    private readonly o: OptimizerOptions & { beta1?: number; beta2?: number; eps?: number },
  ) {
    super(size, 2);
  }

  protected update(lr: number, from: number, to: number): void {
    const b1 = this.o.beta1 ?? 0.9;
    const b2 = this.o.beta2 ?? 0.999;
    const eps = this.o.eps ?? 1e-8;
    const c1 = 1 - b1 ** this.t;
    const c2 = 1 - b2 ** this.t;
    const [p, g, m, v] = this.mem.offsets as [number, number, number, number];
    this.mem.kernels.adamw(p + from, g + from, m + from, v + from, p + to, b1, 1 - b1, b2, 1 - b2, 1 - lr * this.o.weightDecay, lr / c1, Math.sqrt(c2), eps);
  }

  state() {
    const [, , m, v] = this.mem.views as [Float32Array, Float32Array, Float32Array, Float32Array];
    return { t: this.t, buffers: { m, v } };
  }

  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void {
    const { m, v } = this.state().buffers;
    this.t = s.t;
    m.set(requireBuffer(s.buffers, 'm', m.length));
    v.set(requireBuffer(s.buffers, 'v', v.length));
  }
}

/** torch.optim.SGD with momentum (dampening 0, not Nesterov) and coupled weight decay. */
export class Sgd extends FlatOptimizer implements Optimizer {
  readonly name = 'sgd' as const;

  constructor(
    size: number,
    private readonly o: OptimizerOptions,
  ) {
    super(size, 1);
  }

  protected update(lr: number, from: number, to: number): void {
    const [p, g, b] = this.mem.offsets as [number, number, number];
    // torch's first step sets buf = g: momentum 0 on the first step does that from any buf.
    const momentum = this.t === 1 ? 0 : this.o.momentum;
    this.mem.kernels.sgd(p + from, g + from, b + from, p + to, lr, this.o.weightDecay, momentum);
  }

  state() {
    return { t: this.t, buffers: { momentum: this.mem.views[2] as Float32Array } };
  }

  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void {
    const buf = this.mem.views[2] as Float32Array;
    this.t = s.t;
    buf.set(requireBuffer(s.buffers, 'momentum', buf.length));
  }
}

export function createOptimizer(name: OptimizerName, size: number, o: OptimizerOptions): Optimizer {
  return name === 'adamw' ? new AdamW(size, o) : new Sgd(size, o);
}

function requireBuffer(buffers: Record<string, Float32Array>, name: string, length: number): Float32Array {
  const b = buffers[name];
  if (!b || b.length !== length) throw new Error(`checkpoint optimizer state "${name}" is missing or has ${b?.length ?? 0} values, expected ${length}`);
  return b;
}
