import { describe, expect, it } from 'vitest';
import { createLimiter } from './limiter';

describe('createLimiter', () => {
  it('never runs more than `concurrency` tasks at once and runs them all', async () => {
    const limit = createLimiter(3);
    let active = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limit(async () => {
          peak = Math.max(peak, ++active);
          await new Promise((r) => setTimeout(r, 1 + (i % 4)));
          active--;
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBe(3);
  });

  it('drops queued tasks whose signal aborts, and a failing task frees its slot', async () => {
    const limit = createLimiter(1);
    let release!: () => void;
    const first = limit(() => new Promise<string>((r) => (release = () => r('first'))));
    const ac = new AbortController();
    let ran = false;
    const queued = limit(
      async () => {
        ran = true;
      },
      { signal: ac.signal },
    );
    ac.abort(new Error('cancelled'));
    await expect(queued).rejects.toThrow('cancelled');
    const failing = limit(async () => {
      throw new Error('boom');
    });
    release();
    await expect(first).resolves.toBe('first');
    await expect(failing).rejects.toThrow('boom');
    await expect(limit(async () => 'after')).resolves.toBe('after');
    expect(ran).toBe(false);
    expect(() => createLimiter(0)).toThrow(RangeError);
  });
});
