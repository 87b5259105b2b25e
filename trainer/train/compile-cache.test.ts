import { describe, expect, it } from 'vitest';
import { planCacheFile } from './compile-cache';
import { compileClock, cpuMs } from '../engine/tfjs';

describe('compile plan cache key', () => {
  const key = { backend: 'tensorflow', device: 'Intel Xeon Gold 6338 via libtensorflow 2.9.1 (tfjs-node-gpu fell back to the CPU)', stem: 'imagenet', imageSize: 224, batchSize: 64, classes: 1000, width: 1 };
  it('includes the device: a plan measured on the CPU is not the GPU plan', () => {
    expect(planCacheFile('/c', key)).not.toBe(planCacheFile('/c', { ...key, device: 'NVIDIA A100-SXM4-80GB' }));
    expect(planCacheFile('/c', key)).toBe(planCacheFile('/c', { ...key }));
    expect(planCacheFile('/c', key)).not.toBe(planCacheFile('/c', { ...key, width: 0.25 }));
    expect(planCacheFile('/c', key)).toMatch(/^\/c\/compile-v\d+-tensorflow-[0-9a-f]{12}-imagenet-224px-b64-c1000\.json$/);
  });
});

describe('compile clock', () => {
  it('one-thread backends use process CPU time; libtensorflow (thread pool, GPU) uses wall time', () => {
    expect(compileClock('wasm')).toEqual({ now: cpuMs, unit: 'CPU' });
    expect(compileClock('cpu').unit).toBe('CPU');
    const tf = compileClock('tensorflow');
    expect(tf.unit).toBe('wall');
    // wall time advances while this process sleeps; CPU time barely does
    const t0 = tf.now();
    const c0 = cpuMs();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60);
    expect(tf.now() - t0).toBeGreaterThanOrEqual(55);
    expect(cpuMs() - c0).toBeLessThan(40);
  });
});
