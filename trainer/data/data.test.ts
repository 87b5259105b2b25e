import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCifarRecords, loadCifar100 } from './cifar100';
import { allocBatch, fillBatch } from './dataset';
import { DistributedSampler } from './sampler';
import { syntheticDataset } from './synthetic';

describe('DistributedSampler', () => {
  it('splits each epoch into disjoint shards that cover the dataset, like torch', () => {
    const world = 3;
    const shards = [0, 1, 2].map((r) => new DistributedSampler(10, r, world, { seed: 1, shuffle: true }).indices(0));
    expect(shards.every((s) => s.length === 4)).toBe(true); // ceil(10/3), padded by wrapping
    const all = shards.flatMap((s) => Array.from(s));
    expect(new Set(all).size).toBe(10);
  });
  it('reshuffles per epoch and is identical on every rank', () => {
    const a = new DistributedSampler(100, 0, 2, { seed: 7, shuffle: true });
    const b = new DistributedSampler(100, 0, 2, { seed: 7, shuffle: true });
    expect(Array.from(a.indices(3))).toEqual(Array.from(b.indices(3)));
    expect(Array.from(a.indices(3))).not.toEqual(Array.from(a.indices(4)));
  });
  it('computes an epoch once however often a step asks, and an earlier epoch again the same', () => {
    const a = new DistributedSampler(1000, 1, 2, { seed: 7, shuffle: true });
    const first = a.indices(3);
    expect(a.indices(3)).toBe(first); // the same array: no new permutation of the set per step
    const fresh = (e: number) => Array.from(new DistributedSampler(1000, 1, 2, { seed: 7, shuffle: true }).indices(e));
    expect(Array.from(a.indices(4))).toEqual(fresh(4));
    expect(Array.from(a.indices(3))).toEqual(fresh(3)); // back to an epoch (a resume): recomputed, the same
  });
  it('gives ranks the same global batch as one process with the whole batch', () => {
    const world = 2;
    const batch = 4;
    const single = new DistributedSampler(64, 0, 1, { seed: 3, shuffle: true }).indices(0).slice(0, batch * world);
    const union = [0, 1].flatMap((r) => Array.from(new DistributedSampler(64, r, world, { seed: 3, shuffle: true }).indices(0).slice(0, batch)));
    expect(union.sort((x, y) => x - y)).toEqual(Array.from(single).sort((x, y) => x - y));
  });
});

describe('synthetic data', () => {
  it('is a pure function of (seed, index) with normal pixels and labels in range', () => {
    const ds = syntheticDataset({ imageSize: 8, classes: 10, seed: 5 });
    const a = allocBatch(64, 8);
    const b = allocBatch(64, 8);
    fillBatch(ds, Array.from({ length: 64 }, (_, i) => i), a, { augment: false, epoch: 0 });
    fillBatch(ds, Array.from({ length: 64 }, (_, i) => i), b, { augment: false, epoch: 0 });
    expect(a.images).toEqual(b.images);
    const mean = a.images.reduce((s, x) => s + x, 0) / a.images.length;
    const variance = a.images.reduce((s, x) => s + (x - mean) ** 2, 0) / a.images.length;
    expect(Math.abs(mean)).toBeLessThan(0.05);
    expect(variance).toBeGreaterThan(0.9);
    expect(variance).toBeLessThan(1.1);
    expect(Array.from(a.labels).every((l) => l >= 0 && l < 10)).toBe(true);
  });
});

describe('CIFAR-100 binary loader', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-cifar-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('decodes fine labels and normalised HWC pixels', () => {
    const pixels = new Uint8Array(3072);
    pixels.fill(255, 0, 1024); // red plane
    writeFileSync(join(dir, 'train.bin'), encodeCifarRecords([{ fine: 42, coarse: 3, pixels }, { fine: 7, pixels: new Uint8Array(3072) }]));
    const ds = loadCifar100(dir, 'train', { imageSize: 32, seed: 0 });
    expect(ds.size).toBe(2);
    const out = new Float32Array(32 * 32 * 3);
    expect(ds.read(0, out, 0, { augment: false, epoch: 0 })).toBe(42);
    expect(out[0]).toBeCloseTo((1 - 0.5071) / 0.2673, 5); // R of pixel (0,0)
    expect(out[1]).toBeCloseTo((0 - 0.4865) / 0.2564, 5); // G
    expect(ds.read(1, out, 0, { augment: false, epoch: 0 })).toBe(7);
  });

  it('says what to do when the files are missing or truncated', () => {
    expect(() => loadCifar100(dir, 'test', { imageSize: 32, seed: 0 })).toThrow(/test\.bin not found.*binary/);
    writeFileSync(join(dir, 'test.bin'), new Uint8Array(100));
    expect(() => loadCifar100(dir, 'test', { imageSize: 32, seed: 0 })).toThrow(/not a whole number of 3074-byte records/);
  });
});
