// The peak watcher on a real tfjs engine (pure-JS cpu backend): a tensor that lives only between two
// samples is in the peak, which the old "largest sample" figure missed.
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TensorBytesPeak } from './peak-bytes';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('TensorBytesPeak', () => {
  const peak = new TensorBytesPeak();
  afterAll(() => peak.dispose());

  it('catches a peak between two samples, resets to the current value, and leaves tfjs’s accounting intact', () => {
    const keep = tf.ones([256, 256]); // 256 KiB that stays
    const base = tf.memory().numBytes;
    expect(peak.current()).toBe(base);
    peak.reset();
    const sampledBefore = tf.memory().numBytes;
    tf.tidy(() => {
      const big = tf.ones([1024, 1024]); // 4 MiB alive only inside this scope
      return tf.sum(big).dataSync();
    });
    const sampledAfter = tf.memory().numBytes;
    expect(sampledAfter).toBe(base); // everything temporary was freed: samples never saw the 4 MiB
    expect(Math.max(sampledBefore, sampledAfter)).toBe(base);
    expect(peak.peak()).toBeGreaterThanOrEqual(base + 4 * 2 ** 20);
    peak.reset();
    expect(peak.peak()).toBe(base);
    expect(tf.tidy(() => tf.sum(keep).dataSync()[0])).toBe(256 * 256);
    keep.dispose();
    expect(tf.memory().numBytes).toBe(base - 256 * 256 * 4);
    expect(peak.exact).toBe(true);
  });

  it('moves to a new engine state after tf.engine().reset() (peak restarts there), and dispose() puts the plain field back', async () => {
    tf.engine().reset();
    await tf.setBackend('cpu');
    expect(peak.current()).toBe(0); // the read moves the watch to the new state
    tf.tidy(() => tf.sum(tf.ones([512, 512])).dataSync());
    expect(tf.memory().numBytes).toBe(0);
    expect(peak.peak()).toBe(512 * 512 * 4 + 4); // the 1 MiB input and its 4-byte sum were alive together
    peak.dispose();
    const d = Object.getOwnPropertyDescriptor(tf.engine().state, 'numBytes')!;
    expect(d).toMatchObject({ writable: true, value: 0 });
  });
});
