// The global claim order (quick tier): whom the leader asks next, and a model check that runs over
// shared hosts, interleaved at random, always all finish when each asks its hosts in that order,
// while claiming every host at once (as each agent did before issue 24) deadlocks.
import { describe, expect, it } from 'vitest';
import { claimKey, nextToClaim, type ClaimHost } from './claim-order';

const h = (host: string, key: string, held = false, asked = false): ClaimHost => ({ host, key, held, asked });

describe('nextToClaim', () => {
  it('asks the first host in key order that does not hold, whatever the run\'s own host order', () => {
    expect(nextToClaim([h('h3', 'm:/w3'), h('h2', 'm:/w2')])?.host).toBe('h2');
    expect(nextToClaim([h('h3', 'm:/w3'), h('h2', 'm:/w2', true)])?.host).toBe('h3');
  });
  it('nobody while the first not holding was already asked (its claim is queued), or when all hold', () => {
    expect(nextToClaim([h('h2', 'a', false, true), h('h3', 'b')])).toBeUndefined();
    expect(nextToClaim([h('h2', 'a', true), h('h3', 'b', true)])).toBeUndefined();
  });
  it('one workdir named twice: ordered by host name', () => {
    expect(nextToClaim([h('zeta', 'k'), h('alpha', 'k')])?.host).toBe('alpha');
  });
  it('claimKey: one key per machine and real workdir path, the same for two spellings of it', () => {
    expect(claimKey('/tmp')).toBe(claimKey('/tmp/../tmp'));
    expect(claimKey('/tmp')).not.toBe(claimKey('/'));
  });
});

/** A seeded PRNG (mulberry32): the same interleavings every run. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs over shared one-slot hosts, one action at a time in a random interleaving. `ordered`: each run
 * claims the host nextToClaim names (the leader's sequence); otherwise every host of a run claims on
 * its own as soon as it can (before issue 24). A claim of a busy host waits (queued), holding what it
 * has. A run holding all its hosts runs and then releases them. Returns the runs that never finished.
 */
function simulate(seed: number, ordered: boolean): number {
  const rand = rng(seed);
  const hosts = ['h1', 'h2', 'h3', 'h4'];
  const holder = new Map<string, number>();
  const runs = Array.from({ length: 6 }, () => {
    const mine = hosts.filter(() => rand() < 0.6);
    if (mine.length === 0) mine.push(hosts[Math.floor(rand() * hosts.length)]!);
    return { hosts: mine.sort(() => rand() - 0.5), held: new Set<string>(), done: false };
  });
  for (let tick = 0; tick < 5000; tick++) {
    const live = runs.filter((r) => !r.done);
    if (live.length === 0) return 0;
    const r = live[Math.floor(rand() * live.length)]!;
    const i = runs.indexOf(r);
    if (r.held.size === r.hosts.length) {
      r.done = true; // trained; gives its slots back
      for (const x of r.held) holder.delete(x);
      continue;
    }
    const want = ordered
      ? nextToClaim(r.hosts.map((x) => h(x, `m:/${x}`, r.held.has(x))))?.host
      : r.hosts.filter((x) => !r.held.has(x))[Math.floor(rand() * (r.hosts.length - r.held.size))];
    if (want && !holder.has(want)) {
      holder.set(want, i);
      r.held.add(want);
    }
  }
  return runs.filter((r) => !r.done).length;
}

describe('the claim order against deadlock (model check)', () => {
  it('200 random interleavings of 6 runs over 4 shared hosts: every run finishes when each claims in the global order', () => {
    const stuck = Array.from({ length: 200 }, (_, s) => simulate(s, true)).filter((n) => n > 0);
    expect(stuck).toEqual([]);
  });
  it('the same interleavings with every host claiming at once (the old way) deadlock in some', () => {
    expect(Array.from({ length: 200 }, (_, s) => simulate(s, false)).some((n) => n > 0)).toBe(true);
  });
});
