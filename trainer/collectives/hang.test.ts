import { describe, expect, it } from 'vitest';
import { HANG, describeHang, hangLimitMs } from './hang';

describe('hang location', () => {
  it('scales the limit with the longest silence seen, between the floor and the peer timeout', () => {
    expect(hangLimitMs(1000, 30_000)).toBe(HANG.floorMs); // 1-s heartbeats: the floor
    expect(hangLimitMs(6000, 30_000)).toBe(18_000); // 6-s synchronous steps: 3×
    expect(hangLimitMs(20_000, 30_000)).toBe(30_000); // never past the peer timeout
  });

  it('the floor is the production 10 s unless given (COHORT_HANG_FLOOR_MS, read by each rank), and the sentence says the one used', () => {
    expect(HANG.floorMs).toBe(10_000);
    expect(hangLimitMs(500, 30_000, 2000)).toBe(2000);
    expect(hangLimitMs(1000, 30_000, 2000)).toBe(3000); // 3× the longest silence still wins over a low floor
    const view = { observer: 0, peers: [{ rank: 0, host: 'h0' }, { rank: 1, host: 'h1' }], phases: new Map(), current: undefined, opSeq: 3 };
    expect(describeHang(view, 1, 2500, 2000, 0, 2000).reason).toMatch(/its limit 2\.0 s: 3× its longest silence so far, at least 2 s, at most the peer timeout/);
    expect(describeHang(view, 1, 10_500, 10_000, 0).reason).toMatch(/at least 10 s/);
  });

  it('names the op the watcher waits in, its sequence number and every rank\'s last phase', () => {
    const phases = new Map([
      [0, { phase: 'exchange', step: 20, at: 9000 }],
      [2, { phase: 'compute', step: 20, at: 1000 }],
    ]);
    const { reason, hang } = describeHang({ observer: 0, peers: [0, 1, 2].map((rank) => ({ rank, host: `h${rank}` })), phases, current: { what: 'sharded update', seq: 41 }, opSeq: 42 }, 2, 10_500, 10_000, 11_500);
    expect(hang).toEqual({ collective: 'sharded update', seq: 41, lastPhases: [{ rank: 0, host: 'h0', phase: 'exchange', step: 20, ageMs: 2500 }, { rank: 2, host: 'h2', phase: 'compute', step: 20, ageMs: 10_500 }] });
    expect(reason).toMatch(/^silent for 10\.5 s \(its limit 10\.0 s: .*\) while rank 0 waits in sharded update #41; its last phase: compute of step 20$/);
  });
});
