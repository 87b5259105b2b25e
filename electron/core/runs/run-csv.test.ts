import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, type CohortEvent } from '../../../trainer/protocol';
import type { AppliedConfig, RunMeta } from '../../common';
import { applyEvent } from './applied-config';
import { csvCell, runSummaryCsv as runsToCsv, runSummaryJson } from './run-csv';

const run = (id: string, tput: number | null, extra: Partial<RunMeta> = {}): RunMeta => ({
  id, profile: 'local', startedAt: '2026-01-01T00:00:00Z', status: 'ok', config: DEFAULT_TRAIN_CONFIG, hosts: [], worldSize: 2, versions: {}, medianGlobalSamplesPerSec: tput, ...extra,
});

describe('runsToCsv', () => {
  const table = (csv: string) => {
    const [header, ...rows] = csv.trim().split('\n');
    return rows.map((r) => Object.fromEntries(header!.split(',').map((k, i) => [k, r.split(',')[i]])));
  };
  it('writes one row per run with the speedup over the first, cancelled runs with what they measured', () => {
    const spread = { windows: 4, median: 90, min: 80, q1: 85, q3: 95, max: 99 };
    const rows = table(runsToCsv([run('a', 100), run('b', 116, { name: 'fp16' }), run('c', null, { status: 'cancelled', throughput: spread, steps: 40, endedAt: '2026-01-01T00:01:30Z' })]));
    expect(rows.map((r) => [r.id, r.name, r.medianGlobalSamplesPerSec, r.baseline, r.speedupVsBaselinePct])).toEqual([
      ['a', '', '100.00', 'a', '0.0'],
      ['b', 'fp16', '116.00', 'a', '16.0'],
      ['c', '', '90.00', 'a', '-10.0'],
    ]);
    expect(rows[2]).toMatchObject({ status: 'cancelled', steps: '40', durationSec: '90.0', windows: '4', minSamplesPerSec: '80.00', q1SamplesPerSec: '85.00', q3SamplesPerSec: '95.00', maxSamplesPerSec: '99.00' });
  });
  it('speedups against an explicitly chosen baseline; JSON leaves out the profile snapshot (secrets)', () => {
    const runs = [run('a', 100), run('b', 125, { profileSnapshot: { hosts: [{ env: { TOKEN: 's3cret' } }] } })];
    expect(table(runsToCsv(runs, 'b')).map((r) => r.speedupVsBaselinePct)).toEqual(['-20.0', '0.0']);
    const j = runSummaryJson(runs, 'b');
    expect(j).not.toContain('s3cret');
    expect(JSON.parse(j)).toMatchObject({ baseline: 'b', runs: [{ id: 'a', speedupVsBaselinePct: -20 }, { id: 'b', speedupVsBaselinePct: 0 }] });
    expect(() => runsToCsv(runs, 'zzz')).toThrow(/baseline zzz/);
  });
  it("JSON carries each run's curves when given them, null for a run that measured nothing", () => {
    const spread = { windows: 2, median: 100, min: 90, q1: 95, q3: 105, max: 110 };
    const curve = { runId: 'a', windows: 2, stride: 1, step: [5, 10], time: [1000, 2000], samplesPerSec: [90, 110], loss: [2.5, null], stepTimeMs: [40, 41], throughput: spread };
    const j = JSON.parse(runSummaryJson([run('a', 100), run('f', null, { status: 'failed' })], undefined, (id) => (id === 'a' ? curve : undefined))) as { runs: { id: string; series: unknown }[] };
    expect(j.runs).toMatchObject([{ id: 'a', series: { windows: 2, step: [5, 10], time: [1000, 2000], samplesPerSec: [90, 110], loss: [2.5, null], stepTimeMs: [40, 41] } }, { id: 'f', series: null }]);
    expect(JSON.parse(runSummaryJson([run('a', 100)])).runs[0]).not.toHaveProperty('series');
  });
  it('quotes commas and neutralises spreadsheet formulas', () => {
    const csv = runsToCsv([run('x', 1, { profile: '=HYPERLINK("evil")' }), run('y', 1, { profile: 'a,b' })]);
    expect(csv).toContain(`"'=HYPERLINK(""evil"")"`);
    expect(csv).toContain('"a,b"');
  });
  it('neutralises by the whole-number rule (OWASP): a cell starting with = + - @ tab or CR unless it is a number', () => {
    for (const evil of ['-2+3+HYPERLINK("x")', '+1+1', '@SUM(A1)', '\t=1', '\r=1', '-', '-1-1', '=1']) expect(csvCell(evil), evil).toMatch(/^"?'/);
    for (const n of ['-7.1', '+3', '12', '-0.5e-3', '.5', 2026, -1.5, 'abc', '2026-01-01T00:00:00Z']) expect(csvCell(n)).toBe(String(n));
  });
});

describe('applied vs requested in the run record', () => {
  it('a CPU run with --fp16 is stored with fp16 compute off and fp16 transport on', () => {
    const asked = { ...DEFAULT_TRAIN_CONFIG, fp16: true, compile: true };
    const events: CohortEvent[] = [
      // what the tfjs engine says on a wasm backend (tfjsCapabilities): no fp16 tensors, fp16 exchange by the collectives
      { type: 'hello', v: 1, time: 1, engine: 'tfjs', backend: 'wasm', device: 'Xeon (wasm SIMD)', worldSize: 2, params: 1, host: 'h', versions: {},
        capabilities: { fp16: { available: false, detail: 'no float16 tensors' }, compile: { available: true, detail: '' }, fp16Transport: { available: true, detail: '' } } },
      { type: 'plan', v: 1, time: 2, worldSize: 2, globalBatch: 32, steps: 3, epochs: 0, stepsPerEpoch: 10, data: 'synthetic', ranks: [{ rank: 0, host: 'h', localRank: 0, device: 'Xeon (wasm SIMD)' }, { rank: 1, host: 'h', localRank: 1, device: 'Xeon (wasm SIMD)' }] },
      { type: 'compile', v: 1, time: 3, name: 'kernel-selection', status: 'ok', durationMs: 5, detail: "kept the defaults (fwd=gemm×53): the tuned plan's trainStep measured 90 ms CPU against 88 ms (1.00×)" },
    ];
    let applied: AppliedConfig = { envSwitches: { COHORT_TORCH_EXTRAS: '0' } };
    for (const e of events) applied = applyEvent(applied, asked, e);
    expect(applied).toEqual({ envSwitches: { COHORT_TORCH_EXTRAS: '0' }, engine: 'tfjs', backend: 'wasm', device: 'Xeon (wasm SIMD)', devices: ['Xeon (wasm SIMD)'], fp16Compute: false, bf16Compute: false, fp16Transport: true, compile: 'defaults kept' });
    const [header, row] = runsToCsv([run('r', 10, { config: asked, applied })]).trim().split('\n');
    const cols = Object.fromEntries(header!.split(',').map((k, i) => [k, row!.split(',')[i]]));
    expect(cols).toMatchObject({ fp16: 'true', fp16Compute: 'false', fp16Transport: 'true', compile: 'true', compileApplied: 'defaults kept', appliedBackend: 'wasm', envSwitches: 'COHORT_TORCH_EXTRAS=0' });
  });
});
