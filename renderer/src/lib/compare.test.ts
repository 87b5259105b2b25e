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
    expect(c.summary).toEqual(['compile is 24.7% faster than native (median 1160 vs 930 samples/s); settings that differ: compile, compile (ran).']);
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
    expect(c.summary[0]).toMatch(/^b and a are within run-to-run noise .*\[cancelled after 40 steps\]$/);
    expect(c.diff).toEqual([]);
    // The cell's colour agrees with the headline: noise is neither green nor red (session 7: a "-46.0 % (noise)"
    // cell was red while the headline said "within run-to-run noise").
    expect(c.rows.map((r) => r.tone)).toEqual(['flat', 'flat']);
    const slower = compareRuns([a, run('d', [50, 45, 55, 48, 52])])!;
    expect(slower.rows.map((r) => r.tone)).toEqual(['flat', 'down']);
    expect(compareRuns([a, run('e', [200, 190, 210, 195, 205])])!.rows[1]!.tone).toBe('up');
  });

  it('a run with no windows (a failed launch) is said to have nothing to compare', () => {
    const c = compareRuns([run('a', [10]), run('b', [], { status: 'failed', medianGlobalSamplesPerSec: null })])!;
    expect(c.summary[0]).toBe('b: no throughput measured, nothing to compare with a [failed after 0 steps]');
    expect(c.rows[1]!.speedupPct).toBeNull();
  });

  it('identical settings and a 4.4× swing (issue 22 item 3): the headline says the machines, quoting each run\'s load, never a bare "+340% faster"', () => {
    const sys = (load: number, others: number) => ({ hosts: [{ host: 'local', windows: 3, cpus: 2, cpuPercent: 50 + others, othersCpuPercent: others, load1: load, netRxMBps: 0, netTxMBps: 0, busyWindows: others > 25 ? 3 : 0 }] });
    const a = run('a', [44, 44.2, 43.9], { system: sys(0.5, 2) });
    const b = run('b', [10, 10.1, 9.9], { system: sys(3.2, 50) });
    const c = compareRuns([b, a])!;
    expect(c.diff).toEqual([]);
    expect(c.rows[1]!.verdict?.kind).toBe('machines');
    expect(c.summary[0]).toMatch(/^a ran 340\.0% faster than b with the same settings .*: the difference comes from the machines\. a — local: load 0\.50\/2 CPUs, CPU 52% \(others 2%\); b — local: load 3\.20\/2 CPUs, CPU 100% \(others 50%\)$/);
    expect(c.flags).toEqual(['b: 3 of 3 windows on a busy local (other processes above 25% of its CPU)']);
  });

  it('environment switches are compared one by one', () => {
    const c = compareRuns([run('a', [1], { applied: { envSwitches: { COHORT_TORCH_EXTRAS: '0' } } }), run('b', [1], { applied: { envSwitches: { COHORT_TORCH_EXTRAS: '1' } } })])!;
    expect(c.diff.map((d) => [d.label, d.values])).toEqual([['env COHORT_TORCH_EXTRAS', ['0', '1']]]);
  });
});

it('nonDefaultSettings lists what a Run again keeps that is not the default', () => {
  expect(nonDefaultSettings({ ...DEFAULT_TRAIN_CONFIG, classes: 10 }, Object.keys(DEFAULT_TRAIN_CONFIG))).toEqual(['classes=10']);
});
