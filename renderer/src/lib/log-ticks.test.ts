import { expect, it } from 'vitest';
import { logSplits } from './log-ticks';

const linear = (min: number, max: number) => {
  const out: number[] = [];
  for (let v = Math.ceil(min * 10) / 10; v <= max + 1e-9; v = +(v + 0.1).toFixed(10)) out.push(v);
  return out;
};

it('labels a range under a decade with round 1-2-5 values, at least two of them (issue 22: a log loss axis had one label)', () => {
  expect(logSplits(0.9, 9.4, linear)).toEqual([1, 2, 5]);
  expect(logSplits(1.6, 8.75, linear)).toEqual([2, 3, 5]);
  expect(logSplits(1.13, 3.2, linear)).toEqual([1.5, 2, 3]);
});

it('a range narrower than 1 → 1.5 takes the linear ticks; a wide one stays on decades, at most 8', () => {
  expect(logSplits(1.21, 1.48, linear)).toEqual([1.3, 1.4]);
  expect(logSplits(0.001, 1000, linear)).toEqual([0.001, 0.01, 0.1, 1, 10, 100, 1000]);
  expect(logSplits(1e-6, 1e6, linear).length).toBeLessThanOrEqual(8);
  expect(logSplits(0, 5, linear)).toEqual(linear(0, 5));
});
