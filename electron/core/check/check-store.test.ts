// What a run records of the profile's last check (RunMeta.check): only a check that planned it
// (same settings that change one rank's step, same world size).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../../trainer/protocol';
import type { CheckResult } from '../../../trainer/protocol/check';
import { CheckStore, checkForRun } from './check-store';
import { computeKey } from './compute-source';

const config = { ...DEFAULT_TRAIN_CONFIG, batchSize: 4 };
const result = (over: Partial<NonNullable<CheckResult['prediction']>> = {}): CheckResult => ({
  v: 1, profile: 'p', checkedAt: '2026-11-26T12:00:00.000Z', durationMs: 1, hosts: [], links: [], consistency: [], problems: [], ok: true,
  prediction: { worldSize: 3, stepMs: 500, computeMs: 200, computeSource: 'measured', computeKey: computeKey(config, ['cpu×2 no-gpu tfjs wasm slots=1']), gradientBytes: 1, wire: 'fp32', exchangeMs: 300, scaling: 0.4, bottleneck: 'b', ...over },
});

describe('checkForRun', () => {
  it("takes the check's prediction when it planned this run: one rank's rate from its compute time", () => {
    expect(checkForRun(result(), config, 3)).toEqual({ checkedAt: '2026-11-26T12:00:00.000Z', oneRankSamplesPerSec: 20, scaling: 0.4, stepMs: 500, worldSize: 3 });
  });
  it('none for another world size, other settings, no prediction or no check', () => {
    expect(checkForRun(result(), config, 2)).toBeUndefined();
    expect(checkForRun(result(), { ...config, batchSize: 8 }, 3)).toBeUndefined();
    expect(checkForRun(result(), { ...config, fp16: !config.fp16 }, 3)).toBeUndefined();
    expect(checkForRun({ ...result(), prediction: undefined } as unknown as CheckResult, config, 3)).toBeUndefined();
    expect(checkForRun(undefined, config, 3)).toBeUndefined();
  });
});

describe('CheckStore', () => {
  it("reads a check saved before session 8: a host's engine refusal as {error: string, hint} becomes the one error shape", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-checks-'));
    try {
      const old = { ...result(), hosts: [{ host: 'h1', address: 'h1', reachable: true, report: { v: 1, engine: { error: '--engine torch: no Python with PyTorch found', hint: 'install PyTorch' } } }, { host: 'h2', address: 'h2', reachable: true, report: { v: 1, engine: { name: 'tfjs', reason: 'default' } } }] };
      writeFileSync(join(dir, 'p.json'), JSON.stringify(old));
      const r = new CheckStore(dir).last('p')!;
      expect(r.hosts[0]!.report!.engine).toEqual({ error: { code: 'engine-unavailable', message: '--engine torch: no Python with PyTorch found', hint: 'install PyTorch' } });
      expect(r.hosts[1]!.report!.engine).toEqual({ name: 'tfjs', reason: 'default' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
