// Issue 21 item 5: the run's history when a restart moves a lost host's ranks to a spare host: the
// spare takes that host's place in `record` (where attach and stop go) and `hosts` (its ranks,
// `replaces` naming the excluded host); a restart naming no spare of the run changes nothing.
import { describe, expect, it } from 'vitest';
import { spareTookPlace } from './run-spare';

const ref = (host: string) => ({ host, workdir: `/w/${host}`, entry: `/w/${host}/bundles/x/cohort-trainer.mjs` });
const meta = {
  record: [ref('h1'), ref('h2'), ref('h3')],
  hosts: [
    { name: 'h1', ranks: [0] },
    { name: 'h2', ranks: [1, 2] },
    { name: 'h3', ranks: [3, 4] },
  ],
  spareRecord: [ref('h4'), ref('h5')],
};

describe('spareTookPlace: the history of a run whose lost host a spare replaced', () => {
  it('h3 excluded, h4 its replacement: h4 in h3\'s place with its ranks', () => {
    const took = spareTookPlace(meta, { excluded: 'h3', replacement: 'h4' })!;
    expect(took.record!.map((r) => r.host)).toEqual(['h1', 'h2', 'h4']);
    expect(took.record![2]).toEqual(ref('h4'));
    expect(took.hosts).toEqual([{ name: 'h1', ranks: [0] }, { name: 'h2', ranks: [1, 2] }, { name: 'h4', ranks: [3, 4], replaces: 'h3' }]);
  });

  it('told again (an attach replaying the record after the history has it): nothing to change', () => {
    const once = { ...meta, ...spareTookPlace(meta, { excluded: 'h3', replacement: 'h4' })! };
    expect(spareTookPlace(once, { excluded: 'h3', replacement: 'h4' })).toBeUndefined();
  });

  it('a restart without a replacement, or naming a host that is not a spare of the run: undefined', () => {
    expect(spareTookPlace(meta, {})).toBeUndefined();
    expect(spareTookPlace(meta, { excluded: 'h3', replacement: 'h9' })).toBeUndefined();
    expect(spareTookPlace({ record: meta.record, hosts: meta.hosts }, { excluded: 'h3', replacement: 'h4' })).toBeUndefined();
  });
});
