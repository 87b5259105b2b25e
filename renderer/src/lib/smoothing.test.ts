import { describe, expect, it } from 'vitest';
import { emaSmooth, seriesSummary } from './smoothing';

describe('emaSmooth (TensorBoard classic smoothing)', () => {
  it('is the identity at weight 0', () => {
    expect(emaSmooth([3, 1, 4, 1, 5], 0)).toEqual([3, 1, 4, 1, 5]);
  });
  it('is debiased: the first point is the first value, a constant stays constant', () => {
    const s = emaSmooth([2, 2, 2, 2], 0.9) as number[];
    for (const v of s) expect(v).toBeCloseTo(2, 12);
    expect(emaSmooth([5, 0], 0.6)[0]).toBeCloseTo(5, 12);
  });
  it('matches the EMA worked by hand', () => {
    // w = 0.5: last = 0.5·1 = 0.5 → /0.5 = 1; last = 0.25 + 0.5·3 = 1.75 → /0.75 = 2.333…
    const s = emaSmooth([1, 3, 5], 0.5) as number[];
    expect(s[0]).toBeCloseTo(1, 12);
    expect(s[1]).toBeCloseTo(1.75 / 0.75, 12);
    expect(s[2]).toBeCloseTo((1.75 * 0.5 + 2.5) / 0.875, 12);
  });
  it('keeps gaps as gaps and carries the average across them', () => {
    const s = emaSmooth([1, NaN, null, 3], 0.5);
    expect(Number.isNaN(s[1])).toBe(true);
    expect(s[2]).toBeNull();
    expect(s[3]).toBeCloseTo(1.75 / 0.75, 12);
  });
  it('clamps the weight (1 would freeze the curve)', () => {
    const s = emaSmooth([0, 10], 5) as number[];
    expect(s[1]).toBeGreaterThan(4.99); // w clamped to 0.999: debiasing still tracks the data
  });
});

describe('seriesSummary', () => {
  it('gives last, min and max over the finite values', () => {
    expect(seriesSummary([NaN, 4, 2, 9, 3, null], (v) => v.toFixed(1))).toEqual({ last: '3.0', min: '2.0', max: '9.0', count: 4 });
    expect(seriesSummary([NaN, null])).toBeNull();
  });
});
