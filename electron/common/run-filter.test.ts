import { describe, expect, it } from 'vitest';
import type { RunMeta } from './api';
import { DEFAULT_SORT, EMPTY_QUERY, filterChoices, queryFromString, queryRuns, queryToString, sortRuns } from './run-filter';

const run = (id: string, extra: Partial<RunMeta> & { cfg?: Partial<RunMeta['config']> } = {}): RunMeta =>
  ({
    id,
    profile: 'local',
    startedAt: `2026-11-26T10:0${id.slice(-1)}:00.000Z`,
    endedAt: `2026-11-26T10:0${id.slice(-1)}:30.000Z`,
    status: 'ok',
    hosts: [],
    worldSize: 1,
    versions: {},
    ...extra,
    config: { engine: 'auto', backend: 'auto', stem: 'cifar', data: 'synthetic', imageSize: 32, batchSize: 8, ...extra.cfg },
  }) as unknown as RunMeta;

const runs = [
  run('r1', { name: 'Baseline', tags: ['nightly'], medianGlobalSamplesPerSec: 10, applied: { engine: 'tfjs' } as RunMeta['applied'] }),
  run('r2', { status: 'failed', profile: 'lab', notes: 'flaky NIC on gpu2', cfg: { engine: 'torch', batchSize: 64 } }),
  run('r3', { name: 'bigger batch', tags: ['nightly', 'fp16'], medianGlobalSamplesPerSec: 30, profile: 'lab', applied: { engine: 'torch' } as RunMeta['applied'] }),
  run('r4', { status: 'cancelled', medianGlobalSamplesPerSec: 20, cfg: { batchSize: 2 } }),
];
const ids = (rs: RunMeta[]) => rs.map((r) => r.id);
const q = (extra: Partial<typeof EMPTY_QUERY>) => ({ ...EMPTY_QUERY, ...extra });

describe('run history query', () => {
  it('is newest first with no query', () => {
    expect(ids(queryRuns(runs, EMPTY_QUERY))).toEqual(['r4', 'r3', 'r2', 'r1']);
  });
  it('searches name, id, tags, notes and profile, every word, any case', () => {
    expect(ids(queryRuns(runs, q({ text: 'baseline' })))).toEqual(['r1']);
    expect(ids(queryRuns(runs, q({ text: 'R2' })))).toEqual(['r2']);
    expect(ids(queryRuns(runs, q({ text: '#fp16' })))).toEqual(['r3']);
    expect(ids(queryRuns(runs, q({ text: 'nic' })))).toEqual(['r2']);
    expect(ids(queryRuns(runs, q({ text: 'lab batch' })))).toEqual(['r3']);
    expect(ids(queryRuns(runs, q({ text: 'nothing-like-this' })))).toEqual([]);
  });
  it('filters by status, engine (as it ran, else as asked), profile and tag', () => {
    expect(ids(queryRuns(runs, q({ status: 'failed' })))).toEqual(['r2']);
    expect(ids(queryRuns(runs, q({ engine: 'torch' })))).toEqual(['r3', 'r2']);
    expect(ids(queryRuns(runs, q({ engine: 'auto' })))).toEqual(['r4']);
    expect(ids(queryRuns(runs, q({ profile: 'lab', tag: 'nightly' })))).toEqual(['r3']);
  });
  it('sorts numbers as numbers both ways, unknown values last either way', () => {
    expect(ids(sortRuns(runs, { key: 'samples', dir: 'desc' }))).toEqual(['r3', 'r4', 'r1', 'r2']);
    expect(ids(sortRuns(runs, { key: 'samples', dir: 'asc' }))).toEqual(['r1', 'r4', 'r3', 'r2']);
    expect(ids(sortRuns(runs, { key: 'batch', dir: 'asc' }))).toEqual(['r4', 'r3', 'r1', 'r2']);
    expect(ids(sortRuns(runs, { key: 'name', dir: 'asc' }))).toEqual(['r1', 'r3', 'r4', 'r2']);
    expect(ids(sortRuns(runs, { key: 'started', dir: 'asc' }))).toEqual(['r1', 'r2', 'r3', 'r4']);
  });
  it('offers the filter values there are', () => {
    expect(filterChoices(runs)).toEqual({ status: ['cancelled', 'failed', 'ok'], engine: ['auto', 'tfjs', 'torch'], profile: ['lab', 'local'], tag: ['fp16', 'nightly'] });
  });
  it('round-trips through a string, and falls back on nonsense', () => {
    expect(queryFromString('q=a%20b%26c&status=%E0%A4')).toEqual({ query: q({ text: 'a b&c' }), sort: DEFAULT_SORT });
    const s = queryToString(q({ text: 'a b', status: 'ok', tag: 'x' }), { key: 'samples', dir: 'asc' });
    expect(queryFromString(s)).toEqual({ query: q({ text: 'a b', status: 'ok', tag: 'x' }), sort: { key: 'samples', dir: 'asc' } });
    expect(queryToString(EMPTY_QUERY, DEFAULT_SORT)).toBe('');
    expect(queryFromString('sort=-nope&status=ok')).toEqual({ query: q({ status: 'ok' }), sort: DEFAULT_SORT });
    expect(queryFromString('sort=-duration').sort).toEqual({ key: 'duration', dir: 'desc' });
  });
});
