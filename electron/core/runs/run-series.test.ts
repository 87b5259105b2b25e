import { describe, expect, it } from 'vitest';
import { makeEvent, type CohortEvent } from '../../../trainer/protocol';
import { spreadOf } from '../../common';
import { SeriesAccumulator, decodeSeries, encodeSeries, seriesFromRecordText } from './run-series';

const step = (n: number, rate: number, loss: number | null = 1): CohortEvent =>
  makeEvent({ type: 'step', step: n, epoch: 0, loss, globalSamplesPerSec: rate, stepTimeMs: 10, worldSize: 1, lr: 0.001, memory: [] });

describe('SeriesAccumulator', () => {
  it('keeps one point per window and the spread over all windows', () => {
    const acc = new SeriesAccumulator('r');
    for (const [i, r] of [10, 20, 30, 40, 50].entries()) acc.add(step(i + 1, r));
    expect(acc.add(makeEvent({ type: 'log', level: 'info', message: 'x' }))).toBe(false);
    const s = acc.toSeries();
    expect(s.step).toEqual([1, 2, 3, 4, 5]);
    expect(s.samplesPerSec).toEqual([10, 20, 30, 40, 50]);
    expect(s.throughput).toEqual({ windows: 5, median: 30, min: 10, q1: 20, q3: 40, max: 50 });
  });

  it('stays bounded: past the limit every other point goes and the stride doubles, the last window is always there', () => {
    const acc = new SeriesAccumulator('r', 8);
    for (let i = 1; i <= 101; i++) acc.add(step(i, i));
    const s = acc.toSeries();
    expect(s.step.length).toBeLessThanOrEqual(9);
    expect(s.stride).toBeGreaterThan(1);
    expect(s.step.at(-1)).toBe(101);
    expect(s.step).toEqual([...s.step].sort((a, b) => a - b));
    // The spread is over all 101 windows, not the points kept.
    expect(s.throughput.windows).toBe(101);
    expect(s.throughput.median).toBe(51);
  });

  it('a restart from a checkpoint continues the curve from the resumed step (x stays increasing)', () => {
    const acc = new SeriesAccumulator('r');
    for (let i = 1; i <= 6; i++) acc.add(step(i, 100));
    for (let i = 5; i <= 8; i++) acc.add(step(i, 50)); // resumed from step 4
    const s = acc.toSeries();
    expect(s.step).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(s.samplesPerSec.slice(4)).toEqual([50, 50, 50, 50]);
    expect(s.throughput.windows).toBe(10);
  });

  it('round-trips through series.json and refuses a damaged or foreign file', () => {
    const acc = new SeriesAccumulator('r');
    acc.add(step(1, 5, null));
    acc.add(step(2, 7));
    const s = acc.toSeries();
    expect(decodeSeries(encodeSeries(s), 'r')).toEqual(s);
    expect(decodeSeries(encodeSeries(s), 'other')).toBeUndefined();
    expect(decodeSeries(encodeSeries(s).slice(0, 40), 'r')).toBeUndefined();
    expect(decodeSeries(JSON.stringify({ ...JSON.parse(encodeSeries(s)), loss: [1] }), 'r')).toBeUndefined();
  });
});

it('spreadOf: numpy-style quartiles; no windows gives nulls', () => {
  expect(spreadOf([4, 1, 3, 2])).toEqual({ windows: 4, median: 2.5, min: 1, q1: 1.75, q3: 3.25, max: 4 });
  expect(spreadOf([])).toEqual({ windows: 0, median: null, min: null, q1: null, q3: null, max: null });
});

it('seriesFromRecordText reads only step lines, skips a torn last line, and matches the full decoder', () => {
  const events = [step(1, 10), makeEvent({ type: 'log', level: 'info', message: 'a "step" in a log line' }), step(2, 20, null), step(3, 30)];
  const text = events.map((e) => JSON.stringify(e)).join('\n') + '\n' + JSON.stringify(step(4, 40)).slice(0, 30);
  const fromText = seriesFromRecordText('r', text).toSeries();
  const acc = new SeriesAccumulator('r');
  for (const e of events) acc.add(e);
  expect(fromText).toEqual(acc.toSeries());
  expect(fromText.loss).toEqual([1, null, 1]);
});
