import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';
import { runSummaryCsv as runsToCsv } from './run-csv';

const run = (id: string, tput: number | null, extra: Partial<RunMeta> = {}): RunMeta => ({
  id, profile: 'local', startedAt: '2026-01-01T00:00:00Z', status: 'ok', config: DEFAULT_TRAIN_CONFIG, hosts: [], worldSize: 2, versions: {}, medianGlobalSamplesPerSec: tput, ...extra,
});

describe('runsToCsv', () => {
  it('writes one row per run with the speedup over the first', () => {
    const lines = runsToCsv([run('a', 100), run('b', 116), run('c', null, { status: 'cancelled' })]).trim().split('\n');
    expect(lines[0]).toContain('medianGlobalSamplesPerSec,speedupVsFirstPct');
    expect(lines[1]!.endsWith(',100.00,0.0')).toBe(true);
    expect(lines[2]!.endsWith(',116.00,16.0')).toBe(true);
    expect(lines[3]!.endsWith(',,')).toBe(true);
  });
  it('quotes commas and neutralises spreadsheet formulas', () => {
    const csv = runsToCsv([run('x', 1, { profile: '=HYPERLINK("evil")' }), run('y', 1, { profile: 'a,b' })]);
    expect(csv).toContain(`"'=HYPERLINK(""evil"")"`);
    expect(csv).toContain('"a,b"');
  });
});
