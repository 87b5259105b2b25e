import { describe, expect, it } from 'vitest';
import { SeriesBuffer } from './series-buffer';

describe('SeriesBuffer', () => {
  it('keeps columns aligned and grows by doubling', () => {
    const b = new SeriesBuffer(2, 4);
    for (let i = 0; i < 10; i++) b.push(i, i * 10, -i);
    const [x, a, c] = b.columns();
    expect(Array.from(x!)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(a![9]).toBe(90);
    expect(c![3]).toBe(-3);
    expect(b.bytes).toBe(16 * 8 * 3); // 4 → 8 → 16
    expect(b.last(0)).toBe(90);
  });
  it('stays bounded: drops the oldest half at maxPoints', () => {
    const b = new SeriesBuffer(1, 4, 8);
    for (let i = 0; i < 100; i++) b.push(i, i);
    expect(b.length).toBeLessThanOrEqual(8);
    expect(b.last(0)).toBe(99);
    const x = b.columns()[0]!;
    for (let i = 1; i < x.length; i++) expect(x[i]).toBe(x[i - 1]! + 1);
  });
  it('bumps version on every change', () => {
    const b = new SeriesBuffer(1);
    const v = b.version;
    b.push(1, 1);
    b.pushColumns([2, 3], [[2, 3]]);
    expect(b.version).toBe(v + 2);
    expect(b.length).toBe(3);
  });
});
