import { describe, expect, it } from 'vitest';
import { AdamW, Sgd } from './optimizer';
import { learningRate } from './schedule';

describe('optimizers', () => {
  it('AdamW matches a hand computation of torch.optim.AdamW', () => {
    const p = Float32Array.of(1, -2);
    const g = Float32Array.of(0.5, 0.25);
    const opt = new AdamW(2, { momentum: 0, weightDecay: 0.01 });
    opt.step(p, g, 0.1);
    // step 1: m̂ = g, v̂ = g², update = lr·g/(|g|+eps) = ±lr; decay first: p·(1−lr·wd)
    expect(p[0]).toBeCloseTo(1 * (1 - 0.001) - 0.1, 6);
    expect(p[1]).toBeCloseTo(-2 * (1 - 0.001) - 0.1, 6);
    opt.step(p, g, 0.1);
    expect(opt.state().t).toBe(2);
  });

  it('SGD with momentum accumulates like torch', () => {
    const p = Float32Array.of(1);
    const opt = new Sgd(1, { momentum: 0.9, weightDecay: 0 });
    opt.step(p, Float32Array.of(1), 0.1); // buf = 1
    expect(p[0]).toBeCloseTo(0.9, 6);
    opt.step(p, Float32Array.of(1), 0.1); // buf = 1.9
    expect(p[0]).toBeCloseTo(0.71, 6);
  });

  it('restores state exactly from a checkpoint', () => {
    const a = new AdamW(3, { momentum: 0, weightDecay: 0 });
    const pa = Float32Array.of(1, 2, 3);
    a.step(pa, Float32Array.of(0.1, 0.2, 0.3), 0.01);
    const b = new AdamW(3, { momentum: 0, weightDecay: 0 });
    const s = a.state();
    b.loadState({ t: s.t, buffers: { m: s.buffers.m!.slice(), v: s.buffers.v!.slice() } });
    const pb = pa.slice();
    a.step(pa, Float32Array.of(0.3, 0.1, 0.2), 0.01);
    b.step(pb, Float32Array.of(0.3, 0.1, 0.2), 0.01);
    expect(Array.from(pb)).toEqual(Array.from(pa));
  });
});

/** The plain-JS (f64) updates the wasm kernels replaced, as the reference. */
function referenceAdamW(p: Float64Array, g: Float64Array, m: Float64Array, v: Float64Array, t: number, lr: number, wd: number): void {
  const [b1, b2, eps] = [0.9, 0.999, 1e-8];
  const c1 = 1 - b1 ** t;
  const c2 = 1 - b2 ** t;
  for (let i = 0; i < p.length; i++) {
    m[i] = b1 * m[i]! + (1 - b1) * g[i]!;
    v[i] = b2 * v[i]! + (1 - b2) * g[i]! * g[i]!;
    p[i] = p[i]! * (1 - lr * wd) - ((lr / c1) * m[i]!) / (Math.sqrt(v[i]!) / Math.sqrt(c2) + eps);
  }
}

function referenceSgd(p: Float64Array, g: Float64Array, buf: Float64Array, t: number, lr: number, wd: number, momentum: number): void {
  for (let i = 0; i < p.length; i++) {
    const gi = g[i]! + wd * p[i]!;
    buf[i] = t === 1 ? gi : momentum * buf[i]! + gi;
    p[i] = p[i]! - lr * buf[i]!;
  }
}

function seeded(n: number, seed: number, scale = 1): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

/** Relative error, absolute below 0.01 (values cancelling to ~0 carry f32 rounding of their inputs). */
function maxRelErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(1e-2, Math.abs(b[i]!)));
  return worst;
}

describe('wasm SIMD updates', () => {
  // 1031: not a multiple of the 4 f32x4 lanes, so the padded tail is exercised.
  for (const n of [1, 3, 1031]) {
    it(`AdamW equals the f64 reference to f32 rounding over 5 steps (${n} params, in place)`, () => {
      const opt = new AdamW(n, { momentum: 0, weightDecay: 0.05 });
      opt.params.set(seeded(n, 1));
      const p = Float64Array.from(opt.params);
      const [m, v] = [new Float64Array(n), new Float64Array(n)];
      for (let t = 1; t <= 5; t++) {
        const g = seeded(n, 10 + t, 0.1 * t);
        opt.grads.set(g);
        opt.step(opt.params, opt.grads, 1e-2);
        referenceAdamW(p, Float64Array.from(g), m, v, t, 1e-2, 0.05);
      }
      expect(maxRelErr(opt.params, p)).toBeLessThan(1e-5);
      expect(maxRelErr(opt.state().buffers.v!, v)).toBeLessThan(1e-5);
    });

    it(`SGD with momentum and weight decay equals the f64 reference (${n} params, foreign arrays)`, () => {
      const opt = new Sgd(n, { momentum: 0.9, weightDecay: 1e-3 });
      const p32 = seeded(n, 2);
      const p = Float64Array.from(p32);
      const buf = new Float64Array(n);
      for (let t = 1; t <= 5; t++) {
        const g = seeded(n, 20 + t);
        opt.step(p32, g, 0.05);
        referenceSgd(p, Float64Array.from(g), buf, t, 0.05, 1e-3, 0.9);
      }
      expect(maxRelErr(p32, p)).toBeLessThan(1e-5);
    });
  }

  it.each(['adamw', 'sgd'] as const)('%s updated range by range (a sharded step) equals the whole step bit for bit, and touches nothing else', (name) => {
    const n = 1031;
    const make = () => (name === 'adamw' ? new AdamW(n, { momentum: 0, weightDecay: 0.05 }) : new Sgd(n, { momentum: 0.9, weightDecay: 1e-3 }));
    const [whole, ranged, half] = [make(), make(), make()];
    for (const o of [whole, ranged, half]) o.params.set(seeded(n, 3));
    for (let t = 1; t <= 3; t++) {
      const g = seeded(n, 30 + t);
      for (const o of [whole, ranged, half]) o.grads.set(g);
      whole.step(whole.params, whole.grads, 1e-2);
      const update = ranged.beginStep(1e-2);
      for (const [s, e] of [[512, 1024], [0, 8], [8, 512], [1024, n]]) update(s!, e!);
      half.beginStep(1e-2)(0, 512); // only the first half, as a rank owning it does
    }
    expect(Buffer.from(ranged.params.buffer, 0, n * 4).equals(Buffer.from(whole.params.buffer, 0, n * 4))).toBe(true);
    for (const [k, b] of Object.entries(whole.state().buffers)) expect(Array.from((ranged.state().buffers as Record<string, Float32Array>)[k]!)).toEqual(Array.from(b));
    expect(Array.from(half.params.subarray(0, 512))).toEqual(Array.from(whole.params.subarray(0, 512)));
    expect(Array.from(half.params.subarray(512))).toEqual(Array.from(seeded(n, 3).subarray(512)));
    for (const b of Object.values(half.state().buffers)) expect(b.subarray(512).every((x) => x === 0)).toBe(true);
    expect(() => ranged.beginStep(1e-2)(2, 8)).toThrow(/multiple of 4/);
    expect(() => ranged.beginStep(1e-2)(0, 6)).toThrow(/multiple of 4/);
  });

  it('SGD without momentum is plain gradient descent, whatever the buffer held', () => {
    const opt = new Sgd(4, { momentum: 0, weightDecay: 0 });
    opt.loadState({ t: 3, buffers: { momentum: Float32Array.of(9, 9, 9, 9) } });
    const p = Float32Array.of(1, 2, 3, 4);
    opt.step(p, Float32Array.of(1, 1, 1, 1), 0.5);
    expect(Array.from(p)).toEqual([0.5, 1.5, 2.5, 3.5]);
  });
});

describe('learning-rate schedule', () => {
  const o = { lr: 1, warmupSteps: 4, totalSteps: 104, schedule: 'cosine' as const };
  it('warms up linearly then decays', () => {
    expect(learningRate(0, o)).toBeCloseTo(0.25);
    expect(learningRate(3, o)).toBeCloseTo(1);
    expect(learningRate(54, o)).toBeCloseTo(0.5);
    expect(learningRate(104, o)).toBeCloseTo(0);
    expect(learningRate(80, { ...o, schedule: 'step' })).toBeCloseTo(0.01);
    expect(learningRate(60, { ...o, schedule: 'step' })).toBeCloseTo(0.1);
  });
});
