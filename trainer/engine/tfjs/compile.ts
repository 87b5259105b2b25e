// `--compile` for the tfjs engine: a per-layer autotune of the convolution kernels, in the spirit
// of cudnn.benchmark. For every distinct conv geometry in the network it times each candidate
// forward, input-gradient and filter-gradient implementation (conv-kernels.ts) on the real shapes
// and batch, keeps the fastest, and measures the whole training step before and after. It is not
// a graph compiler (tfjs has none); the report says exactly what was chosen.
import * as tf from '@tensorflow/tfjs-core';
import { candidates, convBackpropFilter, convBackpropInput, convForward, type ConvImpl } from './conv/conv-kernels';
import type { ConvGeometry } from './conv/conv-geometry';
import { gemmInfo, wasmBackend } from './kernels/gemm-kernels';
import type { TfjsResNet, TfjsResNetInternals } from './model/resnet50';
import { allUnits } from './model/resnet50-spec';
import { median } from '../../util/stats';

export interface CompileReport {
  /** Wall time the compile took. */
  durationMs: number;
  /** Median trainStep time before/after: this process's CPU time on the one-thread backends (wasm, cpu), wall time with the device synchronised elsewhere (see compileClock). */
  baselineStepMs: number;
  compiledStepMs: number;
  speedup: number;
  detail: string;
  /** The chosen implementation per conv layer; apply on other ranks with applyCompilePlan for identical numerics. */
  plan: Record<string, ConvImpl>;
}

export interface CompileSample {
  images: Float32Array;
  labels: Int32Array;
  batch: number;
}

function isInternals(m: TfjsResNet): m is TfjsResNetInternals {
  return typeof (m as Partial<TfjsResNetInternals>).setImpl === 'function' && (m as Partial<TfjsResNetInternals>).spec !== undefined;
}

export interface CompileClock {
  now: () => number;
  /** How the report names the time: "CPU" or "wall". */
  unit: 'CPU' | 'wall';
}

/**
 * How candidates are timed on a backend. wasm and cpu run a rank's kernels on its one thread, so
 * process CPU time is kernel time and ignores the neighbours. libtensorflow (tfjs-node, -gpu) runs
 * kernels on its own thread pool or asynchronously on a GPU: process CPU time there counts every
 * pool thread (or none of the GPU's work), so it is wall time, each timed region ending in a
 * download of its result (dataSync / the step's gradients), which waits for the device.
 */
export function compileClock(backend: string): CompileClock {
  return backend === 'wasm' || backend === 'cpu' ? { now: cpuMs, unit: 'CPU' } : { now: () => performance.now(), unit: 'wall' };
}

/** Median ms of a step under each plan, the plans taking turns step by step (this VM drifts). trainStep's gradients are read back, so the device is synchronised. */
function timePlans(model: TfjsResNet, sample: CompileSample, grad: Float32Array, reps: number, plans: Record<string, ConvImpl>[], clock: CompileClock): number[] {
  const ts = plans.map(() => [] as number[]);
  for (let i = 0; i <= reps; i++) {
    plans.forEach((plan, j) => {
      applyCompilePlan(model, plan);
      const t0 = clock.now();
      model.trainStep(sample.images, sample.labels, sample.batch, grad);
      if (i > 0) ts[j]!.push(clock.now() - t0); // the first round warms up each plan's kernels
    });
  }
  return ts.map((t) => median(t));
}

/** This process's CPU time in ms: robust to other processes competing for the cores (wasm runs on one thread). */
export function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Best-of-`reps` CPU time of each f (after one warm-up each), everything they allocate disposed.
 * CPU time, not wall time: on a shared machine wall time mostly measures the neighbours. The
 * candidates take turns within each round: this VM has stretches of seconds where everything runs
 * at half speed, and timing candidates one after another let such a stretch pick the winner.
 * Each call gets fresh input tensors (made outside the timed region) as in a training step, where
 * weights and activations are new tensors every step: XNNPACK caches its packed filter per tensor,
 * so reusing one filter made tf.conv2d look up to 2.5× faster than it is in the step.
 */
function timeKernels<T extends tf.Tensor[]>(fs: ((...inputs: T) => tf.Tensor)[], fresh: () => T, reps: number, clock: CompileClock): number[] {
  const best = fs.map(() => Infinity);
  for (let i = 0; i <= reps; i++) {
    fs.forEach((f, j) => {
      const inputs = fresh();
      const t0 = clock.now();
      tf.tidy(() => {
        f(...inputs).dataSync(); // the download waits for the device: the kernel is done when the clock stops
      });
      const dt = clock.now() - t0;
      tf.dispose(inputs);
      if (i > 0) best[j] = Math.min(best[j]!, dt);
    });
  }
  return best;
}

function geoKey(g: ConvGeometry): string {
  return `${g.k}x${g.k}/${g.stride} ${g.cin}->${g.cout} @${g.inSize}`;
}

export function applyCompilePlan(model: TfjsResNet, plan: Record<string, ConvImpl>): void {
  if (!isInternals(model)) throw new Error('applyCompilePlan: the model was not made by createResNet50');
  for (const [conv, impl] of Object.entries(plan)) model.setImpl(conv, impl);
}

/** Where a compile is: stage `index` (1-based) of `total`. */
export interface CompileProgress {
  stage: string;
  index: number;
  total: number;
}

export async function compileTrainStep(model: TfjsResNet, sample: CompileSample, opts: { reps?: number; log?: (m: string) => void; onProgress?: (p: CompileProgress) => void } = {}): Promise<CompileReport> {
  if (!isInternals(model)) throw new Error('compileTrainStep: the model was not made by createResNet50');
  const reps = opts.reps ?? 3;
  const log = opts.log ?? (() => undefined);
  const clock = compileClock(tf.getBackend());
  const t0 = performance.now();
  const grad = new Float32Array(model.paramCount);

  const units = allUnits(model.spec);
  const defaults: Record<string, ConvImpl> = Object.fromEntries(units.map((u) => [u.conv, model.getImpl(u.conv)]));
  const n = sample.batch;
  const chosen = new Map<string, { impl: ConvImpl; note: string }>();
  const plan: Record<string, ConvImpl> = {};
  // Stages: each distinct conv geometry timed, then the whole step timed with and without the plan.
  const total = new Set(units.map((u, i) => geoKey(u.geo) + (i === 0 ? ' (no dx)' : ''))).size + 1;
  for (const [i, u] of units.entries()) {
    const g = u.geo;
    const key = geoKey(g) + (i === 0 ? ' (no dx)' : '');
    let pick = chosen.get(key);
    if (!pick) {
      opts.onProgress?.({ stage: `conv ${key}`, index: chosen.size + 1, total });
      const c = candidates(g);
      const w = model.param(`${u.conv}.weight`) as tf.Tensor4D;
      const x = tf.randomNormal([n, g.inSize, g.inSize, g.cin], 0, 1, 'float32', 1) as tf.Tensor4D;
      const dy = tf.randomNormal([n, g.outSize, g.outSize, g.cout], 0, 1, 'float32', 2) as tf.Tensor4D;
      // Fresh copies (new tensors, same values) for every timed call, see timeKernels.
      const fresh = (): [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D] => [tf.add(x, 0), tf.add(w, 0), tf.add(dy, 0)];
      const fastest = <T extends string>(names: readonly T[], run: (impl: T, x: tf.Tensor4D, w: tf.Tensor4D, dy: tf.Tensor4D) => tf.Tensor): { best: T; times: string } => {
        const ms = timeKernels(names.map((name) => (xi: tf.Tensor4D, wi: tf.Tensor4D, dyi: tf.Tensor4D) => run(name, xi, wi, dyi)), fresh, reps, clock);
        const best = names[ms.indexOf(Math.min(...ms))] as T; // the first of equals, as before
        return { best, times: names.map((name, j) => `${name} ${ms[j]!.toFixed(1)}`).join(', ') };
      };
      const f = fastest(c.fwd, (impl, xi, wi) => convForward(xi, wi, g, impl));
      const dx = i === 0 ? { best: model.getImpl(u.conv).dx, times: 'not needed' } : fastest(c.dx, (impl, _xi, wi, dyi) => convBackpropInput(dyi, wi, g, impl));
      const dw = fastest(c.dw, (impl, xi, _wi, dyi) => convBackpropFilter(xi, dyi, g, impl));
      x.dispose();
      dy.dispose();
      pick = { impl: { fwd: f.best, dx: dx.best, dw: dw.best }, note: `fwd[${f.times}] dx[${dx.times}] dw[${dw.times}] ms` };
      chosen.set(key, pick);
      log(`compile: ${key}: fwd ${f.best}, dx ${dx.best}, dw ${dw.best} (${pick.note})`);
      await new Promise((r) => setImmediate(r)); // let the event loop breathe (heartbeats) between geometries
    }
    model.setImpl(u.conv, pick.impl);
    plan[u.conv] = pick.impl;
  }

  // Kernels that win alone can lose inside the step (caches, memory traffic between layers): the
  // tuned plan is kept only if the whole step is faster than with the defaults, the two timed in turns.
  opts.onProgress?.({ stage: 'whole step, tuned vs default kernels', index: total, total });
  await new Promise((r) => setImmediate(r));
  const [tunedMs, baselineStepMs] = timePlans(model, sample, grad, reps, [plan, defaults], clock);
  const keepTuned = tunedMs <= baselineStepMs;
  applyCompilePlan(model, keepTuned ? plan : defaults);
  if (!keepTuned) Object.assign(plan, defaults);
  const compiledStepMs = Math.min(tunedMs, baselineStepMs);
  const counts = new Map<string, number>();
  for (const impl of Object.values(plan)) {
    for (const [k, v] of Object.entries(impl)) counts.set(`${k}=${v}`, (counts.get(`${k}=${v}`) ?? 0) + 1);
  }
  const summary = [...counts].sort().map(([k, c]) => `${k}×${c}`).join(', ');
  const durationMs = performance.now() - t0;
  const speedup = baselineStepMs / compiledStepMs;
  const gemm = wasmBackend() ? `; ${gemmInfo().detail}` : '';
  const detail = `autotuned conv kernels per layer: ${chosen.size} distinct geometries timed over ${units.length} conv layers (batch ${n}, ${model.spec.imageSize}²); ${keepTuned ? `chosen ${summary}; trainStep ${baselineStepMs.toFixed(0)} → ${compiledStepMs.toFixed(0)} ms ${clock.unit} (${speedup.toFixed(2)}×)` : `kept the defaults (${summary}): the tuned plan's trainStep measured ${tunedMs.toFixed(0)} ms ${clock.unit} against ${baselineStepMs.toFixed(0)} ms (1.00×)`}${gemm}`;
  log(`compile: ${detail}`);
  return { durationMs, baselineStepMs, compiledStepMs, speedup, detail, plan };
}
