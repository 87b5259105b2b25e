import { describe, expect, it } from 'vitest';
import { onAbort, onProcessSignals } from './node-lifecycle';

describe('onProcessSignals', () => {
  it('adds the handler for each signal and removes it on dispose', () => {
    const before = process.listenerCount('SIGUSR2');
    const got: string[] = [];
    const d = onProcessSignals(['SIGUSR2'], (s) => got.push(s));
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
    process.emit('SIGUSR2', 'SIGUSR2');
    d.dispose();
    d.dispose();
    expect(process.listenerCount('SIGUSR2')).toBe(before);
    expect(got).toEqual(['SIGUSR2']);
  });
});

describe('onAbort', () => {
  it('fires once on abort, not after dispose, and at once for an aborted signal', () => {
    let n = 0;
    const a = new AbortController();
    onAbort(a.signal, () => n++);
    a.abort();
    expect(n).toBe(1);
    const b = new AbortController();
    onAbort(b.signal, () => n++).dispose();
    b.abort();
    expect(n).toBe(1);
    onAbort(AbortSignal.abort(), () => n++);
    expect(n).toBe(2);
  });
});
