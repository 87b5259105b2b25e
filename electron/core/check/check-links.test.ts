// The ring links a spare host would have in a lost follower's place (issue 21 item 5), which
// `cohort check` measures (check-links.ts): its predecessor → the spare, the spare → its successor;
// the spare → the leader is its rendezvous link already. The measuring itself: test/cluster/check-spare.test.ts.
import { describe, expect, it } from 'vitest';
import { spareHops } from './check-links';

const pairs = (names: string[], spares: string[]) => spareHops(names, spares).map((h) => `${h.from}->${h.to} (for ${h.instead})`);

describe("a spare's ring neighbours", () => {
  it('two ring hosts: the leader → the spare (the spare → the leader is the rendezvous link)', () => {
    expect(pairs(['h1', 'h2'], ['h3'])).toEqual(['h1->h3 (for h2)']);
  });

  it('three ring hosts: each follower replaced in turn, each link once', () => {
    expect(pairs(['h1', 'h2', 'h3'], ['h4'])).toEqual(['h1->h4 (for h2)', 'h4->h3 (for h2)', 'h2->h4 (for h3)']);
  });

  it('two spares: each its own links; one ring host or no spare: none', () => {
    expect(pairs(['h1', 'h2'], ['s1', 's2'])).toEqual(['h1->s1 (for h2)', 'h1->s2 (for h2)']);
    expect(pairs(['h1'], ['s1'])).toEqual([]);
    expect(pairs(['h1', 'h2', 'h3'], [])).toEqual([]);
  });
});
