import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend';
import { createResNet50, initJobs, initialParams, initialParamsParallel, type TfjsResNetInternals } from './resnet50';
import type { ConvImpl } from '../conv/conv-kernels';
import { resnet50Spec } from './resnet50-spec';
import { streamRng } from '../../../data/rng';
import { initThreads, runInitJobsInWorkers } from './init-rng';

function batchOf(n: number, size: number, classes: number, seed: number): { images: Float32Array; labels: Int32Array } {
  const u = streamRng(seed, 'test-data');
  return {
    images: Float32Array.from({ length: n * size * size * 3 }, () => u() * 2 - 1),
    labels: Int32Array.from({ length: n }, (_, i) => i % classes),
  };
}

function same(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function relErr(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num = Math.max(num, Math.abs((a[i] as number) - (b[i] as number)));
    den = Math.max(den, Math.abs(b[i] as number));
  }
  return num / (den || 1);
}

/**
 * The width of the models these cases build and run (issue 25): a quarter, as the multi-process tests'
 * tiny run (test/helpers/tiny.ts). Every layer, kernel and code path is the same at any width (the
 * width case below checks that every layer is kept); at full width the file's cases took ~80 s of the
 * fast tier, ~24 s of it three steps on tfjs's pure-JS cpu backend. The full model stays pinned where
 * it is the subject: the parameter count and layout (spec only, no tensors) here, the README run's
 * weights sha256 in test/local/local-run.test.ts.
 */
const MODEL_WIDTH = 0.25;

describe('ResNet-50 (tfjs, wasm)', () => {
  const models: TfjsResNetInternals[] = [];
  const make = (o: Partial<Parameters<typeof createResNet50>[0]> = {}): TfjsResNetInternals => {
    const m = createResNet50({ classes: 10, stem: 'cifar', imageSize: 8, seed: 7, freezeBn: false, width: MODEL_WIDTH, ...o });
    models.push(m);
    return m;
  };
  // The default model (cifar stem, 8×8, 10 classes, seed 7), built once for the cases whose checks do
  // not depend on its weights or BN state (each sets or measures what it checks); a build costs ~1.3 s.
  // A case that compares with a fresh model's state builds its own (the BN-statistics case).
  let sharedModel: TfjsResNetInternals | undefined;
  const shared = (): TfjsResNetInternals => (sharedModel ??= make());
  beforeAll(async () => {
    await initBackend('wasm');
  });
  afterAll(() => {
    for (const m of models) m.dispose();
  });

  it('has exactly 23,712,932 trainable parameters at 100 classes, in one contiguous layout', () => {
    const spec = resnet50Spec('imagenet', 224, 100);
    expect(spec.paramCount).toBe(23_712_932);
    expect(spec.layout.length).toBe(161);
    let off = 0;
    for (const s of spec.layout) {
      expect(s.offset).toBe(off);
      expect(s.size).toBe(s.shape.reduce((a, b) => a * b, 1));
      off += s.size;
    }
    expect(spec.layout[0]).toMatchObject({ name: 'conv1.weight', shape: [7, 7, 3, 64] });
    expect(spec.layout.at(-2)).toMatchObject({ name: 'fc.weight', shape: [2048, 100] });
    // torchvision v1.5: the stride sits on the 3×3 conv of the first bottleneck of a stage.
    const l2 = spec.blocks[3]!;
    expect(l2.units[0].geo.stride).toBe(1);
    expect(l2.units[1].geo.stride).toBe(2);
    expect(l2.down?.geo).toMatchObject({ k: 1, stride: 2, cin: 256, cout: 512 });
    // The cifar stem swaps the 7×7 conv (9408 weights) for a 3×3 one (1728).
    expect(resnet50Spec('cifar', 32, 100).paramCount).toBe(23_712_932 - 9408 + 1728);
  });

  it('--width W scales every layer\'s channels (rounded) and keeps every layer', () => {
    const full = resnet50Spec('cifar', 8, 10);
    const quarter = resnet50Spec('cifar', 8, 10, 0.25);
    expect(quarter.layout.map((s) => s.name)).toEqual(full.layout.map((s) => s.name));
    expect(quarter.layout[0]).toMatchObject({ name: 'conv1.weight', shape: [3, 3, 3, 16] });
    expect(quarter.layout.at(-2)).toMatchObject({ name: 'fc.weight', shape: [512, 10] });
    expect(quarter.paramCount / full.paramCount).toBeCloseTo(1 / 16, 2);
    expect(resnet50Spec('cifar', 8, 10, 0.3).layout[0]!.shape).toEqual([3, 3, 3, 19]); // 64 × 0.3 = 19.2
    expect(() => resnet50Spec('cifar', 8, 10, 0)).toThrow(/--width/);
  });

  it('produces [batch, classes] logits for both stems', () => {
    for (const [stem, size] of [['imagenet', 32], ['cifar', 8]] as const) {
      const m = stem === 'cifar' ? shared() : make({ stem, imageSize: size, classes: 10 });
      const { images } = batchOf(2, size, 10, 1);
      const out = m.logits(images, 2);
      expect(out.length).toBe(2 * 10);
      expect(out.every(Number.isFinite)).toBe(true);
      expect(m.spec.finalSize).toBe(1);
    }
    expect(resnet50Spec('imagenet', 64, 100).finalSize).toBe(2);
    expect(resnet50Spec('cifar', 32, 100).finalSize).toBe(4);
  });

  it('gives bit-identical parameters for the same seed and different ones for another seed', () => {
    const a = make({ seed: 3 });
    const b = make({ seed: 3 });
    const c = make({ seed: 4 });
    const pa = new Float32Array(a.paramCount);
    const pb = new Float32Array(b.paramCount);
    const pc = new Float32Array(c.paramCount);
    a.getParams(pa);
    b.getParams(pb);
    c.getParams(pc);
    expect(same(pa, pb)).toBe(true);
    expect(same(pa, pc)).toBe(false);
    // kaiming normal fan_out: conv2 of layer4 (3×3, 128→128 at width 1/4) has std √(2/(3·3·128)).
    const slot = a.layout.find((s) => s.name === 'layer4.0.conv2.weight')!;
    expect(slot.shape).toEqual([3, 3, 128, 128]);
    const w = pa.subarray(slot.offset, slot.offset + slot.size);
    const std = Math.sqrt(w.reduce((s, v) => s + v * v, 0) / w.length);
    expect(std).toBeCloseTo(Math.sqrt(2 / (3 * 3 * 128)), 3);
  });

  it('draws the same initial parameters on worker threads as in this thread, from the same streams as streamRng()', async () => {
    const spec = resnet50Spec('cifar', 8, 10, MODEL_WIDTH);
    const serial = initialParams(spec, 5);
    // runInitJobsInWorkers rejects instead of falling back, so this checks the worker path itself.
    expect(same(await runInitJobsInWorkers(spec.paramCount, initJobs(spec), 5, 3), serial)).toBe(true);
    expect(same(await initialParamsParallel(spec, 5, 2), serial)).toBe(true);
    const fc = spec.layout.find((s) => s.name === 'fc.weight')!;
    const u = streamRng(5, 'fc.weight');
    const bound = 1 / Math.sqrt(spec.features);
    for (let i = 0; i < 100; i++) expect(serial[fc.offset + i]).toBe(Math.fround((2 * u() - 1) * bound));
  });

  it('draws a small model in this thread and full-width ResNet-50 on up to 8 worker threads (initThreads)', () => {
    const full = resnet50Spec('imagenet', 224, 100).paramCount;
    const quarter = resnet50Spec('cifar', 8, 10, MODEL_WIDTH).paramCount;
    expect(initThreads(quarter, 16)).toBe(1); // the tiny runs: two workers cost more to start than drawing 1.5 M weights
    expect(initThreads(resnet50Spec('cifar', 32, 100, 0.5).paramCount, 16)).toBe(1);
    expect(initThreads(full, 16)).toBe(8);
    expect(initThreads(full, 2)).toBe(2);
    expect(initThreads(full, 1)).toBe(1);
  });

  it("init 'zeros' skips the seeded initialisation (every parameter 0)", () => {
    const m = make({ init: 'zeros' });
    const p = new Float32Array(m.paramCount).fill(1);
    m.getParams(p);
    expect(p.every((v) => v === 0)).toBe(true);
  });

  it('setParams/getParams and setBnState/getBnState round-trip', () => {
    const m = shared();
    const p = new Float32Array(m.paramCount).map((_, i) => (i % 97) / 97);
    m.setParams(p);
    const q = new Float32Array(m.paramCount);
    m.getParams(q);
    expect(same(q, p)).toBe(true);
    const s = m.getBnState().map((_, i) => 1 + (i % 13));
    m.setBnState(s);
    expect(same(m.getBnState(), s)).toBe(true);
    expect(() => m.setParams(new Float32Array(5))).toThrow(new RegExp(`expected ${m.paramCount} floats`));
  });

  it('does not leak tensors across steps', () => {
    const m = shared();
    const { images, labels } = batchOf(4, 8, 10, 2);
    const g = new Float32Array(m.paramCount);
    m.trainStep(images, labels, 4, g);
    m.evaluate(images, labels, 4);
    m.setParams(new Float32Array(m.paramCount).fill(0.01));
    const before = { n: tf.memory().numTensors, b: m.tensorBytes() };
    for (let i = 0; i < 3; i++) {
      m.trainStep(images, labels, 4, g);
      m.evaluate(images, labels, 4);
      m.setParams(new Float32Array(m.paramCount).fill(0.01));
    }
    expect({ n: tf.memory().numTensors, b: m.tensorBytes() }).toEqual(before);
  });

  it('updates BN running statistics in training and leaves them alone with freezeBn', () => {
    const { images, labels } = batchOf(4, 8, 10, 3);
    const live = make(); // fresh: its BN state is compared with a fresh frozen model's
    const frozen = make({ freezeBn: true });
    const s0 = live.getBnState();
    const g = new Float32Array(live.paramCount);
    live.trainStep(images, labels, 4, g);
    frozen.trainStep(images, labels, 4, g);
    expect(same(frozen.getBnState(), s0)).toBe(true);
    const s1 = live.getBnState();
    // Running var moves 10% of the way from 1 toward the batch's unbiased variance.
    expect(same(s1, s0)).toBe(false);
    expect(s1.every(Number.isFinite)).toBe(true);
  });

  it('with freezeBn, the gradient of a batch equals the mean of its halves (data-parallel == one process)', () => {
    const m = make({ freezeBn: true });
    const { images, labels } = batchOf(4, 8, 10, 4);
    const full = new Float32Array(m.paramCount);
    const h1 = new Float32Array(m.paramCount);
    const h2 = new Float32Array(m.paramCount);
    const half = 2 * 8 * 8 * 3;
    m.trainStep(images, labels, 4, full);
    m.trainStep(images.subarray(0, half), labels.subarray(0, 2), 2, h1);
    m.trainStep(images.subarray(half), labels.subarray(2), 2, h2);
    const avg = h1.map((v, i) => (v + (h2[i] as number)) / 2);
    expect(relErr(avg, full)).toBeLessThan(1e-4);
  });

  it('overfits a small fixed batch with plain SGD (loss falls)', () => {
    const m = make({ seed: 11 });
    const { images, labels } = batchOf(8, 8, 10, 5);
    const p = new Float32Array(m.paramCount);
    const g = new Float32Array(m.paramCount);
    m.getParams(p);
    const losses: number[] = [];
    for (let step = 0; step < 8; step++) {
      losses.push(m.trainStep(images, labels, 8, g));
      // lr 0.01: at 0.05 the first steps of plain SGD on a fresh BN net overshoot, and whether the
      // loss is back down after 8 steps depends on float rounding (it flipped with the fused BN kernels).
      for (let i = 0; i < p.length; i++) p[i] = (p[i] as number) - 0.01 * (g[i] as number);
      m.setParams(p);
    }
    expect(losses.every(Number.isFinite)).toBe(true);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.5);
  });

  it('rejects bad inputs with actionable errors', () => {
    const m = shared();
    const g = new Float32Array(m.paramCount);
    const { images } = batchOf(2, 8, 10, 6);
    expect(() => m.trainStep(images, Int32Array.from([0, 10]), 2, g)).toThrow(/labels\[1\] = 10 is outside \[0, 10\)/);
    expect(() => m.trainStep(images.subarray(10), Int32Array.from([0, 1]), 2, g)).toThrow(/needs 384 floats/);
    expect(() => resnet50Spec('imagenet', 16, 10)).not.toThrow();
    expect(() => resnet50Spec('imagenet', 0, 10)).toThrow(/image-size/);
  });
});

/**
 * setParams on a model that has already run must give exactly what a model built with those
 * weights gives. On wasm it rewrites the weight tensors in place, so this also checks that the
 * kernels that cache a packed copy of a filter per tensor (XNNPACK conv2d / matMul: the stock
 * 'conv2d' forward, the fc layer) see the new values.
 */
function setParamsSuite(backend: 'wasm' | 'cpu'): void {
  describe(`setParams after steps (${backend})`, () => {
    const models: TfjsResNetInternals[] = [];
    const make = (seed: number, stock: boolean): TfjsResNetInternals => {
      const m = createResNet50({ classes: 10, stem: 'imagenet', imageSize: 16, seed, freezeBn: false, width: MODEL_WIDTH });
      models.push(m);
      // The stock kernels (tf.conv2d forward everywhere) are the ones with per-filter caches.
      const stockImpl = (k: number): ConvImpl => ({ fwd: 'conv2d', dx: k === 1 ? 'matmul' : 'rot-conv', dw: k === 1 ? 'matmul' : 'conv-t' });
      if (stock) for (const u of [m.spec.stem, ...m.spec.blocks.flatMap((b) => [...b.units, ...(b.down ? [b.down] : [])])]) m.setImpl(u.conv, stockImpl(u.geo.k));
      return m;
    };
    beforeAll(async () => {
      await initBackend(backend);
    });
    afterAll(() => {
      for (const m of models) m.dispose();
    });

    // Three ResNet-50 steps on tfjs's pure-JS cpu backend: at full width 16 s on a quiet 2-core machine,
    // 185-195 s when the fast tier's two workers shared it with other load (seen in CI: over vitest's
    // 120 s); at MODEL_WIDTH a fraction. The limit only catches a hang; it is not a speed assertion.
    const limitMs = backend === 'cpu' ? 600_000 : undefined;
    for (const stock of backend === 'wasm' ? [true, false] : [true]) {
      it(`equals a fresh model with the same weights (${stock ? 'stock' : 'default'} conv kernels)`, { timeout: limitMs }, () => {
        const { images, labels } = batchOf(2, 16, 10, 9);
        const reused = make(1, stock);
        const g = new Float32Array(reused.paramCount);
        reused.logits(images, 2); // fills the kernels' per-filter caches with seed 1's weights
        reused.trainStep(images, labels, 2, g);
        const fresh = make(2, stock);
        const p = new Float32Array(fresh.paramCount);
        fresh.getParams(p);
        const conv1 = reused.param('conv1.weight');
        reused.setParams(p);
        reused.setBnState(fresh.getBnState());
        // wasm: the same tensor now holds the new values; other backends make new tensors.
        expect(reused.param('conv1.weight') === conv1).toBe(backend === 'wasm');
        const q = new Float32Array(reused.paramCount);
        reused.getParams(q);
        expect(same(q, p)).toBe(true);
        expect(same(reused.logits(images, 2), fresh.logits(images, 2))).toBe(true);
        const g1 = new Float32Array(reused.paramCount);
        const g2 = new Float32Array(reused.paramCount);
        expect(reused.trainStep(images, labels, 2, g1)).toBe(fresh.trainStep(images, labels, 2, g2));
        expect(same(g1, g2)).toBe(true);
      });
    }

    it('leaves a tensor that shares a weight\'s data alone (makes a new weight tensor instead)', () => {
      const m = make(3, false);
      const alias = tf.keep(tf.reshape(m.param('fc.bias'), [2, 5]));
      const before = alias.dataSync().slice();
      const p = new Float32Array(m.paramCount).fill(0.5);
      m.setParams(p);
      expect(same(alias.dataSync() as Float32Array, before as Float32Array)).toBe(true);
      expect(m.param('fc.bias').dataSync()[0]).toBe(0.5);
      alias.dispose();
    });
  });
}

setParamsSuite('wasm');
setParamsSuite('cpu');
