import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../../trainer/protocol';
import { spreadOf, type RunMeta } from '../../../electron/common';
import { compareRuns, nonDefaultSettings } from './compare';

const run = (id: string, rates: number[], extra: Partial<RunMeta> = {}): RunMeta => ({
  id, profile: 'local', startedAt: '2026-01-01T00:00:00Z', status: 'ok', config: { ...DEFAULT_TRAIN_CONFIG }, hosts: [{ name: 'local', ranks: [0] }], worldSize: 1, versions: {},
  medianGlobalSamplesPerSec: spreadOf(rates).median, throughput: spreadOf(rates), ...extra,
});

describe('compareRuns', () => {
  it('the seeds\' "x% faster" against the chosen baseline, with only the differing fields (applied config included)', () => {
    const native = run('a', [930, 928, 934], { name: 'native', applied: { engine: 'torch', compile: 'off' } });
    const compiled = run('b', [1160, 1150, 1170], { name: 'compile', config: { ...DEFAULT_TRAIN_CONFIG, compile: true }, applied: { engine: 'torch', compile: 'on' } });
    const c = compareRuns([native, compiled])!;
    expect(c.baseline.id).toBe('a');
    expect(c.summary).toEqual(['compile is 24.7% faster than native (median 1160.0 vs 930.0 samples/s, 3 windows)']);
    expect(c.diff.map((d) => [d.key, d.values])).toEqual([
      ['config.compile', ['no', 'yes']],
      ['applied.compile', ['off', 'on']],
    ]);
    // The other way round: explicit baseline.
    const back = compareRuns([native, compiled], 'b')!;
    expect(back.rows.map((r) => r.speedupPct?.toFixed(1))).toEqual(['-19.8', '0.0']);
    expect(back.summary[0]).toMatch(/^native is 19\.8% slower than compile/);
  });

  it('says when a difference is inside the noise (interquartile ranges overlap), and keeps a cancelled run\'s measurement', () => {
    const a = run('a', [100, 90, 110, 95, 105]);
    const b = run('b', [103, 93, 113, 98, 108], { status: 'cancelled', steps: 40 });
    const c = compareRuns([a, b])!;
    expect(c.rows[1]!.withinNoise).toBe(true);
    expect(c.summary[0]).toMatch(/^b is 3\.0% faster than a .*within run-to-run noise.*\[cancelled after 40 steps\]$/);
    expect(c.diff).toEqual([]);
  });

  it('a run with no windows (a failed launch) is said to have nothing to compare', () => {
    const c = compareRuns([run('a', [10]), run('b', [], { status: 'failed', medianGlobalSamplesPerSec: null })])!;
    expect(c.summary[0]).toBe('b: no throughput measured (failed), nothing to compare with a');
    expect(c.rows[1]!.speedupPct).toBeNull();
  });

  it('environment switches are compared one by one', () => {
    const c = compareRuns([run('a', [1], { applied: { envSwitches: { COHORT_TORCH_EXTRAS: '0' } } }), run('b', [1], { applied: { envSwitches: { COHORT_TORCH_EXTRAS: '1' } } })])!;
    expect(c.diff.map((d) => [d.label, d.values])).toEqual([['env COHORT_TORCH_EXTRAS', ['0', '1']]]);
  });
});

it('nonDefaultSettings lists what a Run again keeps that is not the default', () => {
  expect(nonDefaultSettings({ ...DEFAULT_TRAIN_CONFIG, classes: 10 }, Object.keys(DEFAULT_TRAIN_CONFIG))).toEqual(['classes=10']);
});
