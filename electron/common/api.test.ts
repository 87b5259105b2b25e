import { describe, expect, it } from 'vitest';
import { API_ARGS } from './api';

describe('Api.checkProfile arguments (what a transport lets through)', () => {
  it("keeps the profile, the config and the local profile's ranks (Launch's Run a check plans the form's run)", () => {
    expect(API_ARGS.checkProfile(['duo'])).toEqual(['duo']);
    expect(API_ARGS.checkProfile(['duo', { batchSize: 4 }])).toEqual(['duo', { batchSize: 4 }]);
    expect(API_ARGS.checkProfile(['local', { batchSize: 4 }, 2])).toEqual(['local', { batchSize: 4 }, 2]);
    expect(API_ARGS.checkProfile(['local', undefined, 3])).toEqual(['local', undefined, 3]);
  });
  it('refuses ranks that are not a whole number from 1 to 64, naming the argument', () => {
    for (const bad of [0, 65, 1.5, '2']) expect(() => API_ARGS.checkProfile(['local', {}, bad])).toThrow(/ranks/);
  });
});
