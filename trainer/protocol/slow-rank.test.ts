import { describe, expect, it } from 'vitest';
import { makeEvent, type StepEvent } from './events';
import { SlowRankWatch, slowRankEvent } from './slow-rank';

const step = (ms: number[]): StepEvent =>
  makeEvent({ type: 'step', step: 1, epoch: 0, loss: 1, globalSamplesPerSec: 1, stepTimeMs: 1, worldSize: ms.length, lr: 1, memory: ms.map((_, rank) => ({ rank, host: `h${rank}`, rssBytes: 1, tensorBytes: 1 })), rankComputeMs: ms }) as StepEvent;

describe('SlowRankWatch', () => {
  it('names a rank slow in 3 windows in a row, once, with its host and the numbers', () => {
    const w = new SlowRankWatch();
    expect(w.observe(step([100, 300, 100]))).toEqual([]);
    expect(w.observe(step([100, 310, 100]))).toEqual([]);
    const [r] = w.observe(step([100, 320, 100]));
    expect(r).toEqual({ rank: 1, host: 'h1', computeMs: 310, peersMedianMs: 100, windows: 3 });
    expect(w.observe(step([100, 330, 100]))).toEqual([]); // once
    expect(slowRankEvent(r!)).toMatchObject({ type: 'log', level: 'warn', code: 'slow-rank', rank: 1, host: 'h1', message: expect.stringMatching(/rank 1 on h1 computes 310 ms\/step, 3\.1× its peers' 100 ms/) });
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
});
