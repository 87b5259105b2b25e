import { describe, expect, it } from 'vitest';
import { makeEvent, type StepEvent } from './events';
import { SlowRankWatch, slowRankEvent, slowestRank, splitWait } from './slow-rank';

const step = (ms: number[]): StepEvent =>
  makeEvent({ type: 'step', step: 1, epoch: 0, loss: 1, globalSamplesPerSec: 1, stepTimeMs: 1, worldSize: ms.length, lr: 1, memory: ms.map((_, rank) => ({ rank, host: `h${rank}`, rssBytes: 1, tensorBytes: 1 })), rankComputeMs: ms }) as StepEvent;

describe('SlowRankWatch', () => {
  it('names a rank slow in 3 windows in a row, once, with its host and the numbers', () => {
    const w = new SlowRankWatch();
    expect(w.observe(step([100, 300, 100]))).toEqual([]);
    expect(w.observe(step([100, 310, 100]))).toEqual([]);
    const [r] = w.observe(step([100, 320, 100]));
    expect(r).toEqual({ rank: 1, host: 'h1', phase: 'compute', ms: 310, peersMedianMs: 100, windows: 3 });
    expect(w.observe(step([100, 330, 100]))).toEqual([]); // once
    expect(slowRankEvent(r!)).toMatchObject({ type: 'log', level: 'warn', code: 'slow-rank', rank: 1, host: 'h1', phase: 'compute', message: expect.stringMatching(/^slow host: rank 1 on h1: compute 3\.1× its peers' median \(310 vs 100 ms\/step, 3 step windows in a row\)/) });
  });

  it('forgives a blip: the streak restarts; ignores small absolute gaps and single-rank runs', () => {
    const w = new SlowRankWatch();
    w.observe(step([100, 300]));
    w.observe(step([100, 300]));
    expect(w.observe(step([100, 110]))).toEqual([]);
    expect(w.observe(step([100, 300]))).toEqual([]);
    const tiny = new SlowRankWatch();
    for (let i = 0; i < 5; i++) expect(tiny.observe(step([2, 5]))).toEqual([]); // 2.5× but 3 ms
    expect(new SlowRankWatch().observe(step([100]))).toEqual([]);
  });

  it('names the phase a rank is slow in from step.rankPhases (data here), and the window\'s slowest rank', () => {
    const ph = (rank: number, dataMs: number, computeMs: number, exchangeMs: number) => ({ rank, dataMs, computeMs, exchangeMs, optimizerMs: 10 });
    // rank 2 builds its batches slowly; the others wait for it in the exchange (their exchange time is longer)
    const rows = splitWait([ph(0, 5, 100, 90), ph(1, 5, 102, 91), ph(2, 80, 101, 20)]);
    expect(rows[0]).toMatchObject({ waitMs: 70, exchangeMs: 20 });
    expect(rows[2]).toMatchObject({ waitMs: 0, exchangeMs: 20 });
    const e = { ...step([100, 102, 101]), rankComputeMs: undefined, rankPhases: rows } as StepEvent;
    expect(slowestRank(e)).toMatchObject({ rank: 2, phase: 'data', ms: 80, peersMedianMs: 5, slow: true });
    const w = new SlowRankWatch();
    w.observe(e);
    w.observe(e);
    expect(w.observe(e)).toEqual([{ rank: 2, host: 'h2', phase: 'data', ms: 80, peersMedianMs: 5, windows: 3 }]);
  });
});
