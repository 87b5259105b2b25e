import { describe, expect, it } from 'vitest';
import { API_ARGS, type RunMeta } from './api';
import { keptBecause, type DeletedRun, type HostRemoval } from './run-removal';

describe('Api.removeRuns arguments (what a transport lets through)', () => {
  it('keeps the ids and the two choices, drops anything else (core takes a confirm callback from the CLI only)', () => {
    expect(API_ARGS.removeRuns([['r1', 'r2']])).toEqual([['r1', 'r2']]);
    expect(API_ARGS.removeRuns([['r1'], { hosts: true, anyway: false, confirm: 'yes' }])).toEqual([['r1'], { hosts: true, anyway: false }]);
    expect(API_ARGS.removeRuns([['r1'], {}])).toEqual([['r1'], {}]);
  });
  it('refuses a choice that is not a boolean, and an empty id, naming the argument', () => {
    expect(() => API_ARGS.removeRuns([['r1'], { hosts: 'yes' }])).toThrow(/options\.hosts/);
    expect(() => API_ARGS.removeRuns([['r1'], 'hosts'])).toThrow(/options/);
    expect(() => API_ARGS.removeRuns([['']])).toThrow(/runIds/);
  });
});

describe('keptBecause', () => {
  const meta = { id: 'r1' } as RunMeta;
  const host = (h: string, outcome: HostRemoval['outcome']): HostRemoval => ({ host: h, outcome, detail: '' });
  const run = (deleted: boolean, hosts?: HostRemoval[]): DeletedRun => ({ meta, deleted, ...(hosts ? { hosts } : {}) });
  it('says why a run stayed: a refusal first (never deletable), then a host not reached, else a host that kept its record', () => {
    expect(keptBecause(run(true, [host('h1', 'removed'), host('h2', 'unreachable')]))).toBeUndefined();
    expect(keptBecause(run(false, [host('h1', 'unreachable'), host('h2', 'refused')]))).toBe('refused');
    expect(keptBecause(run(false, [host('h1', 'removed'), host('h2', 'unreachable')]))).toBe('unreachable');
    expect(keptBecause(run(false, [host('h1', 'failed'), host('h2', 'absent')]))).toBe('failed');
  });
});
