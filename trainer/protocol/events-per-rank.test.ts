// Issue 21's additions to the event protocol: per-rank phases on `step`, the straggler's phase on
// the slow-rank warning, and a hung rank's error. All optional: older events still decode.
import { describe, expect, it } from 'vitest';
import { decodeEvent, makeEvent } from './events';

const step = makeEvent({ type: 'step', step: 20, epoch: 0, loss: 1, globalSamplesPerSec: 10, stepTimeMs: 100, worldSize: 2, lr: 0.001, memory: [{ rank: 0, host: 'a', rssBytes: 1 }, { rank: 1, host: 'b', rssBytes: 1 }] }, 1000);
const rt = (e: unknown) => decodeEvent(JSON.parse(JSON.stringify(e)));

describe('per-rank events (issue 21)', () => {
  it('round-trips step.rankPhases and names a bad field; a step without it still decodes', () => {
    const phases = [0, 1].map((rank) => ({ rank, dataMs: 1, computeMs: 50, waitMs: rank * 10, exchangeMs: 20, optimizerMs: 5 }));
    const e = { ...step, rankPhases: phases };
    expect(rt(e)).toEqual(e);
    expect(rt(step)).not.toHaveProperty('rankPhases');
    expect(() => decodeEvent({ ...e, rankPhases: [{ ...phases[0], waitMs: -1 }] })).toThrow(/rankPhases\[0\]\.waitMs/);
  });

  it('round-trips a hung rank\'s error (rank-hung) and a slow-rank warning with its phase', () => {
    const err = makeEvent({ type: 'error', rank: 2, host: 'h3', message: 'rank 2 on h3 stopped making progress', logTail: [], code: 'rank-hung', reportedBy: [0], collective: 'sharded update', seq: 41, lastPhases: [{ rank: 0, host: 'h1', phase: 'exchange', step: 20 }, { rank: 2, host: 'h3', phase: 'compute', step: 20, ageMs: 10500 }] }, 1000);
    expect(rt(err)).toEqual(err);
    const warn = makeEvent({ type: 'log', level: 'warn', message: 'slow', code: 'slow-rank', rank: 1, host: 'b', phase: 'compute' }, 1000);
    expect(rt(warn)).toEqual(warn);
    expect(() => decodeEvent({ ...warn, phase: 'lunch' })).toThrow(/phase/);
  });
});
