import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../trainer/protocol';
import type { RunMeta } from './api';
import { describeExpected, oneRankRun, runExpected } from './run-expected';

const run = (id: string, worldSize: number, rate: number, over: Partial<RunMeta> = {}, config: Partial<RunMeta['config']> = {}): RunMeta => ({
  id, profile: 'lab', startedAt: `2026-11-26T0${id.length}:00:00Z`, status: 'ok', config: { ...DEFAULT_TRAIN_CONFIG, ...config }, hosts: [], worldSize, versions: {}, medianGlobalSamplesPerSec: rate,
  applied: { engine: 'torch', device: 'CUDA NVIDIA A100-SXM4-80GB (GPU 0)' }, ...over,
});

describe('expected vs achieved of a History run', () => {
  it('takes the one-rank rate from a one-rank run of the same configuration on the same device, and says so', () => {
    const three = run('r3', 3, 150);
    const one = run('r1', 1, 60);
    const otherBatch = run('rb', 1, 99, {}, { batchSize: 7 });
    const otherDevice = run('rd', 1, 99, { applied: { engine: 'torch', device: 'CUDA NVIDIA V100' } });
    expect(oneRankRun(three, [three, otherBatch, otherDevice, one])?.id).toBe('r1');
    const e = runExpected(three, [three, otherBatch, otherDevice, one]);
    expect(e.scaling).toEqual({ scaling: 150 / 180, oneRankSamplesPerSec: 60, source: 'history', fromRun: 'r1' });
    expect(e.mfu).toMatchObject({ gpu: 'A100', dtype: 'tf32' }); // torch's fp32 convs run as TF32 on Ampere
    expect(describeExpected(e)).toMatch(/^scaling 0\.83 \(one rank 60\.0 samples\/s, from History run r1\) · predicted: none \(no cohort check of this profile and configuration\) · MFU ≈ \d+% \(estimate/);
  });

  it('is unknown without such a run; no MFU on the CPU; the check hook wins when given', () => {
    const three = run('r3', 3, 150, { applied: { engine: 'tfjs', device: 'AMD EPYC (wasm SIMD, 1 thread)' } });
    const e = runExpected(three, [three]);
    expect(e.scaling.source).toBe('unknown');
    expect(e.mfu).toBeUndefined();
    expect(describeExpected(e)).toMatch(/scaling unknown/);
    const c = runExpected(three, [three], 150, { oneRankSamplesPerSec: 75, scaling: 0.7, checkedAt: 'x' });
    expect(c).toMatchObject({ scaling: { scaling: 150 / 225, source: 'check' }, predictedScaling: 0.7 });
  });

  it("takes the check the run recorded (RunMeta.check) and says which check", () => {
    const three = run('r3', 3, 150, { check: { checkedAt: '2026-11-26T12:03:40.000Z', oneRankSamplesPerSec: 60, scaling: 0.75, stepMs: 44, worldSize: 3 } });
    const e = runExpected(three, [three]);
    expect(e).toMatchObject({ scaling: { scaling: 150 / 180, source: 'check' }, predictedScaling: 0.75, checkedAt: '2026-11-26T12:03:40.000Z' });
    expect(describeExpected(e)).toMatch(/^scaling 0\.83 \(one rank 60\.0 samples\/s, from check of 2026-11-26 12:03 UTC\) vs predicted 0\.75 \(step 44 ms, check of 2026-11-26 12:03 UTC\)/);
  });
});
