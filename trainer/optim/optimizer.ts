// Optimizers over the one flat parameter buffer (the same layout the allreduce fuses gradients
// into). Semantics follow torch.optim so results compare with the PyTorch engine and the seeds.
import type { OptimizerName } from '../protocol';

export interface Optimizer {
  readonly name: OptimizerName;
  /** Updates `params` in place from the (already averaged) gradients at learning rate `lr`. */
  step(params: Float32Array, grads: Float32Array, lr: number): void;
  /** State for checkpoints: named flat buffers plus the step counter. */
  state(): { t: number; buffers: Record<string, Float32Array> };
  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void;
}

export interface OptimizerOptions {
  momentum: number;
  weightDecay: number;
}

/** torch.optim.AdamW: decoupled weight decay, bias-corrected moments. */
export class AdamW implements Optimizer {
  readonly name = 'adamw' as const;
  private m: Float32Array;
  private v: Float32Array;
  private t = 0;

  constructor(
    size: number,
    private readonly o: OptimizerOptions & { beta1?: number; beta2?: number; eps?: number },
  ) {
    this.m = new Float32Array(size);
    this.v = new Float32Array(size);
  }

  step(params: Float32Array, grads: Float32Array, lr: number): void {
    const b1 = this.o.beta1 ?? 0.9;
    const b2 = this.o.beta2 ?? 0.999;
    const eps = this.o.eps ?? 1e-8;
    this.t++;
    const c1 = 1 - b1 ** this.t;
    const c2 = 1 - b2 ** this.t;
    const decay = 1 - lr * this.o.weightDecay;
    const stepSize = lr / c1;
    const sqrtC2 = Math.sqrt(c2);
    const { m, v } = this;
    for (let i = 0; i < params.length; i++) {
      const g = grads[i]!;
      const mi = (m[i] = b1 * m[i]! + (1 - b1) * g);
      const vi = (v[i] = b2 * v[i]! + (1 - b2) * g * g);
      params[i] = params[i]! * decay - (stepSize * mi) / (Math.sqrt(vi) / sqrtC2 + eps);
    }
  }

  state() {
    return { t: this.t, buffers: { m: this.m, v: this.v } };
  }

  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void {
    this.t = s.t;
    this.m.set(requireBuffer(s.buffers, 'm', this.m.length));
    this.v.set(requireBuffer(s.buffers, 'v', this.v.length));
  }
}

/** torch.optim.SGD with momentum (dampening 0, not Nesterov) and coupled weight decay. */
export class Sgd implements Optimizer {
  readonly name = 'sgd' as const;
  private buf: Float32Array;
  private t = 0;

  constructor(
    size: number,
    private readonly o: OptimizerOptions,
  ) {
    this.buf = new Float32Array(size);
  }

  step(params: Float32Array, grads: Float32Array, lr: number): void {
    const { momentum, weightDecay } = this.o;
    const first = this.t === 0;
    this.t++;
    const b = this.buf;
    for (let i = 0; i < params.length; i++) {
      const g = grads[i]! + weightDecay * params[i]!;
      const bi = momentum === 0 ? g : (b[i] = first ? g : momentum * b[i]! + g);
      params[i] = params[i]! - lr * bi;
    }
  }

  state() {
    return { t: this.t, buffers: { momentum: this.buf } };
  }

  loadState(s: { t: number; buffers: Record<string, Float32Array> }): void {
    this.t = s.t;
    this.buf.set(requireBuffer(s.buffers, 'momentum', this.buf.length));
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
