import { describe, expect, it } from 'vitest';
import type { StepEvent } from '../../trainer/protocol';
import { compareVerdict, noiseFlags, type VerdictSide } from './compare-verdict';
import { spreadOf } from './run-history';
import { SystemAccumulator } from './run-system';

const step = (host: string, cpu: number, ranks: number, load: number): StepEvent => ({
  v: 1, time: 0, type: 'step', step: 1, epoch: 0, loss: 1, globalSamplesPerSec: 1, stepTimeMs: 1, worldSize: 1, lr: 0.1, memory: [{ rank: 0, host, rssBytes: 1 }],
  system: [{ host, spanMs: 1000, cpuPercent: cpu, ranksCpuPercent: ranks, load1: load, cpus: 2, netRxBytes: 2e6, netTxBytes: 1e6, memUsedBytes: 1, memTotalBytes: 2 }],
});
const side = (label: string, rates: number[], windows: [number, number, number][] = []): VerdictSide => {
  const acc = new SystemAccumulator();
  for (const [cpu, ranks, load] of windows) acc.add(step('h1', cpu, ranks, load));
  const sys = acc.summary();
  return { label, median: spreadOf(rates).median, spread: spreadOf(rates), ...(sys ? { system: sys } : {}) };
};

describe('compareVerdict: one rule for headline and panel', () => {
  it('identical settings, a 4.4× swing with tight spreads: the machines, with each run\'s load and CPU, never "x% faster" from settings', () => {
    const quiet = side('quiet', [44, 44.2, 43.9], [[52, 50, 0.6], [51, 50, 0.7], [50, 49, 0.6]]);
    const hogged = side('hogged', [10, 10.1, 9.9], [[100, 35, 3.1], [100, 33, 3.4], [99, 34, 3.2]]);
    const v = compareVerdict(quiet, hogged, []);
    expect(v.kind).toBe('machines');
    expect(v.pct).toBeCloseTo(340, 0);
    expect(v.text).toBe('quiet ran 340.0% faster than hogged with the same settings (median 44.0 vs 10.0 samples/s): the difference comes from the machines. quiet — h1: load 0.60/2 CPUs, CPU 51% (ranks 50%, others 1%); hogged — h1: load 3.20/2 CPUs, CPU 100% (ranks 34%, others 65%)');
    expect(noiseFlags(hogged)).toEqual(['hogged: 3 of 3 windows on a busy h1 (other processes above 25% of its CPU)']);
    expect(noiseFlags(quiet)).toEqual([]);
  });

  it('overlapping spreads are noise whatever the settings; differing settings are named (and busy machines added)', () => {
    expect(compareVerdict(side('a', [100, 90, 110]), side('b', [103, 93, 113]), ['batchSize']).kind).toBe('noise');
    const s = compareVerdict(side('b4', [20, 21, 22]), side('b2', [10, 11, 12], [[100, 40, 3, ]]), ['batchSize', 'global batch']);
    expect(s.kind).toBe('settings');
    expect(s.text).toMatch(/^b4 is 90\.9% faster than b2 \(median 21\.0 vs 11\.0 samples\/s\); settings that differ: batchSize, global batch\. The machines differed too: b4 — no system metrics recorded; b2 — h1: load 3\.00\/2 CPUs, CPU 100% \(ranks 40%, others 60%\)$/);
  });

  it('no throughput: nothing to compare; a wide spread is flagged', () => {
    expect(compareVerdict(side('a', []), side('b', [1]), []).kind).toBe('no-data');
    expect(noiseFlags(side('w', [5, 10, 20, 40]))).toEqual(['w: noisy windows (IQR 108% of the median over 4 windows)']);
  });
});
