// ResNet-50 for the tfjs engine: parameters in one flat Float32Array layout (the allreduce and the
// optimizer work on one buffer), a training step that writes the fused gradient buffer, and
// eval. The backend must be initialised first (initBackend in backend.ts).
import * as tf from '@tensorflow/tfjs-core';
import type { Stem } from '../../../protocol/train-config';
import type { ResNetDepth } from '../../../protocol/resnet50-shape';
import { CohortError } from '../../../protocol/errors';
import { toDisposable } from '../../../protocol/lifecycle';
import { BN_MOMENTUM } from './batch-norm';
import { defaultImpl, type ConvImpl } from '../conv/conv-kernels';
import { streamRng } from '../../../data/rng';
import { runInitJobs, runInitJobsParallel, type InitJob } from './init-rng';
import { checkLabels, softmaxCrossEntropy } from './loss';
import { backward, forward, type BnMode, type StatUpdates, type StepState } from './resnet50-step';
import { overwrite, readInto, tensorFrom } from './tensor-io';
import { allUnits, resnet50Spec, type NetSpec, type ParamSlot } from './resnet50-spec';

export type { ParamSlot } from './resnet50-spec';

export interface ResNetOptions {
  classes: number;
  stem: Stem;
  imageSize: number;
  /** Channel width multiplier (`--width`; default 1: ResNet-50 as published). */
  width?: number;
  /** `--depth` (default '50': ResNet-50 as published). */
  depth?: ResNetDepth;
  seed: number;
  /** Train with running statistics (eval-mode BN): data-parallel then equals one process exactly. */
  freezeBn: boolean;
  /**
   * 'seed' (the default): torchvision's initialisation from `seed`. 'zeros' skips it (about a second
   * of CPU for ResNet-50) for a model whose weights are set right after, e.g. on ranks that receive
   * rank 0's by broadcast.
   */
  init?: 'seed' | 'zeros';
}

export interface TfjsResNet {
  /** 23,712,932 at 100 classes with the imagenet stem. */
  readonly paramCount: number;
  /** Offsets into ONE flat Float32Array of all trainable params (torchvision state_dict order). */
  readonly layout: readonly ParamSlot[];
  getParams(out: Float32Array): void;
  setParams(flat: Float32Array): void;
  /** Running mean then running var for each BN layer, in layout order. */
  getBnState(): Float32Array;
  setBnState(s: Float32Array): void;
  /** One forward + backward on NHWC float32 images; writes the mean-loss gradients into gradOut (flat, same layout). Returns the mean loss. */
  trainStep(images: Float32Array, labels: Int32Array, batch: number, gradOut: Float32Array): number;
  evaluate(images: Float32Array, labels: Int32Array, batch: number): { loss: number; correct: number };
  /** tf.memory().numBytes. */
  tensorBytes(): number;
  dispose(): void;
}

/** Internals the compiler (compile.ts) and tests use; not part of the trainer-facing API. */
export interface TfjsResNetInternals extends TfjsResNet {
  readonly spec: NetSpec;
  getImpl(conv: string): ConvImpl;
  setImpl(conv: string, impl: ConvImpl): void;
  /** Tensors of the current parameters by name (read-only use; on wasm setParams rewrites them in place). */
  param(name: string): tf.Tensor;
  /** Eval-mode logits, [batch × classes] row-major. */
  logits(images: Float32Array, batch: number): Float32Array;
}

/** torchvision's initialisation of every parameter, as jobs for init-rng.ts (BN beta stays 0). */
export function initJobs(spec: NetSpec): InitJob[] {
  const jobs: InitJob[] = [];
  for (const s of spec.layout) {
    const at = { offset: s.offset, size: s.size, stream: s.name };
    if (s.name === 'fc.weight' || s.name === 'fc.bias') {
      // torch.nn.Linear: kaiming_uniform(a=√5) for the weight and U(±1/√fan_in) for the bias both give bound 1/√fan_in.
      jobs.push({ ...at, kind: 'uniform', bound: 1 / Math.sqrt(spec.features) });
    } else if (s.shape.length === 4) {
      // torchvision: kaiming_normal_(mode='fan_out', nonlinearity='relu'), fan_out = k·k·cout.
      const [kh, kw, , cout] = s.shape as [number, number, number, number];
      jobs.push({ ...at, kind: 'normal', std: Math.sqrt(2 / (kh * kw * cout)) });
    } else if (s.name.endsWith('.weight')) {
      jobs.push({ ...at, kind: 'fill', value: 1 }); // BN gamma
    } // BN beta stays 0
  }
  return jobs;
}

export function initialParams(spec: NetSpec, seed: number): Float32Array {
  const flat = new Float32Array(spec.paramCount);
  runInitJobs(flat, initJobs(spec), seed, streamRng);
  return flat;
}

/** initialParams on `threads` worker threads (bit-identical; see init-rng.ts). */
export function initialParamsParallel(spec: NetSpec, seed: number, threads: number, onFallback?: (err: unknown) => void): Promise<Float32Array> {
  return runInitJobsParallel(spec.paramCount, initJobs(spec), seed, threads, onFallback);
}

function checkImages(images: Float32Array, batch: number, size: number): void {
  if (!Number.isInteger(batch) || batch < 1) throw new Error(`batch must be a positive integer, got ${batch}`);
  const need = batch * size * size * 3;
  if (images.length < need) throw new Error(`images: batch ${batch} of ${size}×${size}×3 NHWC needs ${need} floats, got ${images.length}`);
}

export function createResNet50(opts: ResNetOptions): TfjsResNetInternals {
  const spec = resnet50Spec(opts.stem, opts.imageSize, opts.classes, opts.width ?? 1, opts.depth ?? '50');
  const slots = new Map(spec.layout.map((s) => [s.name, s]));
  const params = new Map<string, tf.Tensor>();
  const runMean = new Map<string, tf.Tensor1D>();
  const runVar = new Map<string, tf.Tensor1D>();
  const ones = new Map<number, tf.Tensor2D>();
  const impls = new Map<string, ConvImpl>();
  for (const u of allUnits(spec)) impls.set(u.conv, defaultImpl(u.geo));
  const life = toDisposable(() => {
    for (const m of [params, runMean, runVar, ones] as Map<unknown, tf.Tensor>[]) {
      for (const t of m.values()) t.dispose();
      m.clear();
    }
  });

  const alive = (): void => {
    if (life.isDisposed) throw new CohortError('model-disposed', 'ResNet-50 model used after dispose()', { hint: 'internal: a step ran after the rank tore its model down' });
  };
  const state: StepState = {
    spec,
    param: (name) => params.get(name) ?? fail(`no parameter ${name}`),
    runningMean: (bn) => runMean.get(bn) ?? fail(`no BN ${bn}`),
    runningVar: (bn) => runVar.get(bn) ?? fail(`no BN ${bn}`),
    impl: (conv) => impls.get(conv) ?? fail(`no conv ${conv}`),
    ones: (m) => {
      const have = ones.get(m);
      if (have) return have;
      const t = tf.keep(tf.ones([1, m])) as tf.Tensor2D;
      ones.set(m, t);
      return t;
    },
  };

  const setParams = (flat: Float32Array): void => {
    alive();
    if (flat.length !== spec.paramCount) throw new Error(`setParams: expected ${spec.paramCount} floats, got ${flat.length}`);
    for (const s of spec.layout) {
      const src = flat.subarray(s.offset, s.offset + s.size);
      // The weights are the model's own tensors, only read by kernels and never aliased between
      // steps (a reshape inside a step is disposed with the step's tidy), so on wasm they are
      // rewritten in place (see overwrite) instead of being re-created every step.
      const have = params.get(s.name);
      if (have && overwrite(have, src)) continue;
      have?.dispose();
      // tensorFrom copies (now or at creation): the caller's optimizer rewrites the flat buffer in place.
      params.set(s.name, tensorFrom(src, s.shape));
    }
  };

  const setBnState = (st: Float32Array): void => {
    alive();
    const need = spec.bns.reduce((a, b) => a + 2 * b.c, 0);
    if (st.length !== need) throw new Error(`setBnState: expected ${need} floats (mean+var per BN channel), got ${st.length}`);
    let o = 0;
    for (const b of spec.bns) {
      runMean.get(b.name)?.dispose();
      runVar.get(b.name)?.dispose();
      runMean.set(b.name, tf.tensor1d(st.slice(o, o + b.c)));
      runVar.set(b.name, tf.tensor1d(st.slice(o + b.c, o + 2 * b.c)));
      o += 2 * b.c;
    }
  };

  const getBnState = (): Float32Array => {
    alive();
    const out = new Float32Array(spec.bns.reduce((a, b) => a + 2 * b.c, 0));
    let o = 0;
    for (const b of spec.bns) {
      out.set(state.runningMean(b.name).dataSync() as Float32Array, o);
      out.set(state.runningVar(b.name).dataSync() as Float32Array, o + b.c);
      o += 2 * b.c;
    }
    return out;
  };

  setParams(opts.init === 'zeros' ? new Float32Array(spec.paramCount) : initialParams(spec, opts.seed));
  {
    const st = new Float32Array(spec.bns.reduce((a, b) => a + 2 * b.c, 0));
    let o = 0;
    for (const b of spec.bns) {
      st.fill(1, o + b.c, o + 2 * b.c); // running var starts at 1, mean at 0 (torch)
      o += 2 * b.c;
    }
    setBnState(st);
  }

  const inputs = (images: Float32Array, labels: Int32Array, batch: number): { x: tf.Tensor4D; y: tf.Tensor1D } => {
    const s = spec.imageSize;
    return {
      x: tf.tensor4d(images.subarray(0, batch * s * s * 3), [batch, s, s, 3]),
      y: tf.tensor1d(labels.subarray(0, batch), 'int32'),
    };
  };

  const model: TfjsResNetInternals = {
    spec,
    paramCount: spec.paramCount,
    layout: spec.layout,
    getParams(out) {
      alive();
      if (out.length !== spec.paramCount) throw new Error(`getParams: expected a buffer of ${spec.paramCount} floats, got ${out.length}`);
      for (const s of spec.layout) readInto(state.param(s.name), out, s.offset);
    },
    setParams,
    getBnState,
    setBnState,
    trainStep(images, labels, batch, gradOut) {
      alive();
      checkImages(images, batch, spec.imageSize);
      checkLabels(labels, batch, spec.classes);
      if (gradOut.length !== spec.paramCount) throw new Error(`trainStep: gradOut must have ${spec.paramCount} floats, got ${gradOut.length}`);
      const mode: BnMode = opts.freezeBn ? 'frozen' : 'batch';
      const stats: StatUpdates = new Map();
      const loss = tf.tidy(() => {
        const { x, y } = inputs(images, labels, batch);
        const f = forward(state, x, mode, stats);
        const l = softmaxCrossEntropy(f.logits, y);
        // Each gradient is copied into gradOut as soon as the backward computes it, while it is
        // still in cache (a copy at the end read ~95 MB back from memory), and freed.
        const seen = new Set<string>();
        backward(state, f.cache!, l.dlogits, mode, {
          set(name: string, g: tf.Tensor) {
            const slot = slots.get(name) ?? fail(`backward produced a gradient for unknown parameter ${name}`);
            readInto(g, gradOut, slot.offset);
            g.dispose();
            seen.add(name);
          },
        });
        if (seen.size !== spec.layout.length) fail(`backward produced no gradient for ${spec.layout.find((s) => !seen.has(s.name))!.name}`);
        // New running statistics survive the tidy; the old ones are disposed below.
        for (const [bn, u] of stats) {
          const m = tf.keep(tf.add(tf.mul(state.runningMean(bn), 1 - BN_MOMENTUM), tf.mul(u.mean, BN_MOMENTUM)));
          const v = tf.keep(tf.add(tf.mul(state.runningVar(bn), 1 - BN_MOMENTUM), tf.mul(u.varUnbiased, BN_MOMENTUM)));
          u.mean = m as tf.Tensor1D;
          u.varUnbiased = v as tf.Tensor1D;
        }
        return l.loss.dataSync()[0] as number;
      });
      for (const [bn, u] of stats) {
        runMean.get(bn)?.dispose();
        runVar.get(bn)?.dispose();
        runMean.set(bn, u.mean);
        runVar.set(bn, u.varUnbiased);
      }
      return loss;
    },
    evaluate(images, labels, batch) {
      alive();
      checkImages(images, batch, spec.imageSize);
      checkLabels(labels, batch, spec.classes);
      return tf.tidy(() => {
        const { x, y } = inputs(images, labels, batch);
        const f = forward(state, x, 'eval', new Map());
        const l = softmaxCrossEntropy(f.logits, y);
        const correct = tf.sum(tf.cast(tf.equal(tf.argMax(f.logits, 1), y), 'int32')).dataSync()[0] as number;
        return { loss: l.loss.dataSync()[0] as number, correct };
      });
    },
    tensorBytes: () => tf.memory().numBytes,
    getImpl: (conv) => ({ ...state.impl(conv) }),
    setImpl(conv, impl) {
      if (!impls.has(conv)) throw new Error(`setImpl: no conv layer named ${conv}`);
      impls.set(conv, { ...impl });
    },
    param: (name) => state.param(name),
    logits(images, batch) {
      alive();
      checkImages(images, batch, spec.imageSize);
      return tf.tidy(() => {
        const s = spec.imageSize;
        const x = tf.tensor4d(images.subarray(0, batch * s * s * 3), [batch, s, s, 3]);
        return forward(state, x, 'eval', new Map()).logits.dataSync() as Float32Array;
      });
    },
    dispose: () => life.dispose(),
  };
  return model;
}

function fail(msg: string): never {
  throw new Error(msg);
}
