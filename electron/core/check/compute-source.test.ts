// Where the check's compute time comes from: a finished one-rank run of the same settings on one of
// the profile's hosts (matched by address, which a run record keeps in its profile snapshot).
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';
import { fromHistory } from './compute-source';

const config = { ...DEFAULT_TRAIN_CONFIG, stem: 'cifar' as const, imageSize: 8, batchSize: 2, classes: 10 };
const run = (over: Partial<RunMeta>): RunMeta => ({
  id: 'r1', profile: 'solo', startedAt: '', status: 'ok', config: { ...config, steps: 4 }, hosts: [{ name: 'h1', ranks: [0] }], worldSize: 1, versions: {}, medianGlobalSamplesPerSec: 10,
  profileSnapshot: { v: 1, name: 'solo', hosts: [{ name: 'h1', address: '10.0.0.1' }] }, ...over,
});
const trio = { name: 'trio', hosts: [{ address: '10.0.0.1' }, { address: '10.0.0.2' }] } as Parameters<typeof fromHistory>[1];

describe('compute source: History', () => {
  it("a one-rank run of the same settings on a host of the profile (another profile's, same address) gives batch ÷ rate", () => {
    const h = fromHistory([run({})], trio, config);
    expect(h?.ms).toBe(200);
    expect(h?.source).toMatch(/^History: run r1 \(one rank on h1/);
  });
  it('not another host, other settings, several ranks or a failed run', () => {
    expect(fromHistory([run({ profileSnapshot: { hosts: [{ name: 'h1', address: '10.9.9.9' }] } })], trio, config)).toBeUndefined();
    expect(fromHistory([run({})], trio, { ...config, batchSize: 4 })).toBeUndefined();
    expect(fromHistory([run({ worldSize: 2 })], trio, config)).toBeUndefined();
    expect(fromHistory([run({ status: 'failed' })], trio, config)).toBeUndefined();
  });
});
