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
