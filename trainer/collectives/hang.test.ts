import { describe, expect, it } from 'vitest';
import { HANG, describeHang, hangLimitMs } from './hang';

describe('hang location', () => {
  it('scales the limit with the longest silence seen, between the floor and the peer timeout', () => {
    expect(hangLimitMs(1000, 30_000)).toBe(HANG.floorMs); // 1-s heartbeats: the floor
    expect(hangLimitMs(6000, 30_000)).toBe(18_000); // 6-s synchronous steps: 3×
    expect(hangLimitMs(20_000, 30_000)).toBe(30_000); // never past the peer timeout
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
