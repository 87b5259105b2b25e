import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from './backend';
import { applyCompilePlan, compileTrainStep } from './compile';
import { streamRng } from '../../data/rng';
import { createResNet50, type TfjsResNetInternals } from './model/resnet50';
import { allUnits } from './model/resnet50-spec';

describe('--compile (per-layer conv autotune)', () => {
  const models: TfjsResNetInternals[] = [];
  beforeAll(async () => {
    await initBackend('wasm');
  });
  afterAll(() => {
    for (const m of models) m.dispose();
  });

  it('times candidates, applies a plan, reports it honestly, and leaves the gradients unchanged', async () => {
    const opts = { classes: 10, stem: 'imagenet' as const, imageSize: 32, seed: 9, freezeBn: true };
    const m = createResNet50(opts);
    const other = createResNet50(opts);
    models.push(m, other);
    const u = streamRng(1, 'compile-test');
    const batch = 2;
    const images = Float32Array.from({ length: batch * 32 * 32 * 3 }, () => u() - 0.5);
    const labels = Int32Array.from([1, 7]);
    const before = new Float32Array(m.paramCount);
    m.trainStep(images, labels, batch, before);
    const logs: string[] = [];
    const r = await compileTrainStep(m, { images, labels, batch }, { reps: 1, log: (s) => logs.push(s) });
    expect(r.durationMs).toBeGreaterThan(0);
    expect(r.baselineStepMs).toBeGreaterThan(0);
    expect(r.compiledStepMs).toBeGreaterThan(0);
    expect(r.speedup).toBeCloseTo(r.baselineStepMs / r.compiledStepMs, 6);
    // Never slower than the defaults: a tuned plan that loses on the whole step is not kept.
    expect(r.compiledStepMs).toBeLessThanOrEqual(r.baselineStepMs);
    expect(r.detail).toMatch(/chosen .* \(\d+\.\d+×\)|kept the defaults .* the tuned plan's trainStep measured \d+ ms CPU against \d+ ms/);
    expect(r.detail).toMatch(/autotuned conv kernels per layer: \d+ distinct geometries timed over 53 conv layers/);
    // The plan covers every conv and is what the model now runs.
    const convs = allUnits(m.spec).map((x) => x.conv);
    expect(Object.keys(r.plan).sort()).toEqual([...convs].sort());
    for (const c of convs) expect(m.getImpl(c)).toEqual(r.plan[c]);
    // At 32² layer4's 3×3 convs see a 1×1 input: the centre-tap matMul is among the candidates timed.
    expect(logs.some((l) => /3x3\/1 512->512 @1: .*center/.test(l))).toBe(true);
    // Same gradients (up to float summation order) after compile.
    const after = new Float32Array(m.paramCount);
    m.trainStep(images, labels, batch, after);
    let num = 0;
    let den = 0;
    for (let i = 0; i < after.length; i++) {
      num = Math.max(num, Math.abs((after[i] as number) - (before[i] as number)));
      den = Math.max(den, Math.abs(before[i] as number));
    }
    expect(num / den).toBeLessThan(1e-4);
    // Another rank applying the plan computes bit-identical gradients.
    applyCompilePlan(other, r.plan);
    const theirs = new Float32Array(other.paramCount);
    other.trainStep(images, labels, batch, theirs);
    expect(Buffer.from(theirs.buffer).equals(Buffer.from(after.buffer))).toBe(true);
  });
});
