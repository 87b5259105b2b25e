// Throughput of one tfjs rank's training step (ResNet-50, imagenet stem, 100 classes, batch 16)
// at 32² and 64² on the best backend here, --compile off and on. One "step" is what the engine
// does per optimizer step: setParams (upload the weights) + trainStep (forward, backward, gradient
// readback into the flat buffer); the optimizer and the allreduce are not included.
//   npx tsx test/bench/tfjs-step.ts [--steps 8] [--warmup 2] [--sizes 32,64]
// Writes bench/results/tfjs-step.{json,md}. Re-runs itself with the node flags a rank gets
// (relaxed SIMD for the wasm GEMM's FMA on Node 20), so it measures what a run does.
import * as tf from '@tensorflow/tfjs-core';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { compileTrainStep, cpuMs, createResNet50, gemmInfo, initBackend, type BackendInfo, type CompileReport, type TfjsResNet } from '../../trainer/engine/tfjs';
import { relaxedSimdNodeFlags } from '../../trainer/util/wasm-asm';
import { countOption, stringOption, machine, median, writeResults } from './bench-util';

const rankFlags = relaxedSimdNodeFlags();
if (rankFlags.length && !process.argv.includes('--no-rank-flags')) {
  const r = spawnSync(process.execPath, [...rankFlags, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const STEPS = countOption('steps', 8);
const WARMUP = countOption('warmup', 2, 0);
const SIZES = stringOption('sizes', '32,64').split(',').map(Number);
if (!SIZES.every((s) => Number.isInteger(s) && s > 0)) {
  console.error(`--sizes needs image sizes as whole numbers separated by commas (e.g. 32,64), got ${stringOption('sizes', '')}`);
  process.exit(2);
}
const BATCH = 16;
const CLASSES = 100;

interface Row {
  imageSize: number;
  compile: boolean;
  /** Median wall ms of setParams + trainStep. */
  stepMs: number;
  /** Median CPU ms of the same (what the step costs on a core of its own; the machine is shared). */
  stepCpuMs: number;
  trainStepMs: number;
  imgPerSec: number;
  imgPerSecCpu: number;
  steps: number;
  tensorBytes: number;
  compileReport?: Omit<CompileReport, 'plan'>;
  topKernels?: { kernel: string; ms: number; calls: number }[];
}

type Measured = { stepMs: number; stepCpuMs: number; trainStepMs: number; bytes: number };

/**
 * Times the models' steps taking turns (one step of each per round), so a stretch of machine noise
 * (this VM has seconds-long ones) hits every model alike instead of deciding the comparison.
 */
function measure(models: TfjsResNet[], images: Float32Array, labels: Int32Array): Measured[] {
  const runs = models.map((model) => {
    const params = new Float32Array(model.paramCount);
    const grad = new Float32Array(model.paramCount);
    model.getParams(params);
    const step = (): [number, number, number] => {
      const c0 = cpuMs();
      const t0 = performance.now();
      model.setParams(params);
      const t1 = performance.now();
      model.trainStep(images, labels, BATCH, grad);
      const t2 = performance.now();
      return [t2 - t0, t2 - t1, cpuMs() - c0];
    };
    return { model, step, whole: [] as number[], train: [] as number[], cpu: [] as number[] };
  });
  for (let i = 0; i < WARMUP; i++) for (const r of runs) r.step();
  for (let i = 0; i < STEPS; i++) {
    for (const r of runs) {
      const [a, b, c] = r.step();
      r.whole.push(a);
      r.train.push(b);
      r.cpu.push(c);
    }
  }
  return runs.map((r) => ({ stepMs: median(r.whole), stepCpuMs: median(r.cpu), trainStepMs: median(r.train), bytes: r.model.tensorBytes() }));
}

async function topKernels(model: TfjsResNet, images: Float32Array, labels: Int32Array): Promise<{ kernel: string; ms: number; calls: number }[]> {
  const grad = new Float32Array(model.paramCount);
  const info = await tf.profile(() => {
    model.trainStep(images, labels, BATCH, grad);
  });
  const agg = new Map<string, { ms: number; calls: number }>();
  for (const k of info.kernels) {
    const e = agg.get(k.name) ?? { ms: 0, calls: 0 };
    e.ms += Number(k.kernelTimeMs);
    e.calls++;
    agg.set(k.name, e);
  }
  return [...agg].map(([kernel, e]) => ({ kernel, ms: Math.round(e.ms * 10) / 10, calls: e.calls })).sort((a, b) => b.ms - a.ms).slice(0, 8);
}

const info: BackendInfo = await initBackend('auto');
console.log(`backend ${info.name} (${info.reason}; ${gemmInfo().detail}); ${STEPS} timed steps after ${WARMUP} warm-up, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const rows: Row[] = [];
for (const size of SIZES) {
  const images = Float32Array.from({ length: BATCH * size * size * 3 }, (_, i) => Math.sin(i * 12.9898) * 0.5);
  const labels = Int32Array.from({ length: BATCH }, (_, i) => (i * 7) % CLASSES);
  const make = (): TfjsResNet => createResNet50({ classes: CLASSES, stem: 'imagenet', imageSize: size, seed: 1, freezeBn: false });
  const plain = make();
  const compiled = make();
  try {
    const report = await compileTrainStep(compiled, { images, labels, batch: BATCH });
    console.log(`${size}² compile: ${report.detail}`);
    const [off, on] = measure([plain, compiled], images, labels) as [Measured, Measured];
    rows.push({ imageSize: size, compile: false, ...off, imgPerSec: (BATCH * 1000) / off.stepMs, imgPerSecCpu: (BATCH * 1000) / off.stepCpuMs, steps: STEPS, tensorBytes: off.bytes });
    console.log(`${size}² compile off: ${off.stepMs.toFixed(0)} ms/step wall, ${off.stepCpuMs.toFixed(0)} ms CPU`);
    const { plan: _plan, ...compileReport } = report;
    rows.push({
      imageSize: size, compile: true, ...on, imgPerSec: (BATCH * 1000) / on.stepMs, imgPerSecCpu: (BATCH * 1000) / on.stepCpuMs, steps: STEPS, tensorBytes: on.bytes,
      compileReport, topKernels: await topKernels(compiled, images, labels),
    });
    console.log(`${size}² compile on: ${on.stepMs.toFixed(0)} ms/step wall, ${on.stepCpuMs.toFixed(0)} ms CPU`);
  } finally {
    plain.dispose();
    compiled.dispose();
  }
}

const md = [
  `## tfjs engine: one rank's training step (ResNet-50, batch ${BATCH}, backend ${info.name})`,
  '',
  `Median of ${STEPS} steps after ${WARMUP} warm-up, the plain and the compiled model taking turns step by step; step = setParams + forward + backward + gradient readback. ${info.device}; ${info.name === 'wasm' ? gemmInfo().detail : ''}. Load average at start: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (other processes on this 2-core machine skew numbers).`,
  '',
  '| image | compile | ms/step (wall) | of which trainStep | ms/step (CPU) | img/s (wall) | img/s (CPU time) |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => `| ${r.imageSize}² | ${r.compile ? 'on' : 'off'} | ${r.stepMs.toFixed(0)} | ${r.trainStepMs.toFixed(0)} | ${r.stepCpuMs.toFixed(0)} | ${r.imgPerSec.toFixed(1)} | ${r.imgPerSecCpu.toFixed(1)} |`),
  '',
  ...rows.filter((r) => r.compileReport).map((r) => `- ${r.imageSize}² --compile (${(r.compileReport!.durationMs / 1000).toFixed(1)} s): ${r.compileReport!.detail}. Top tfjs kernels (the 'gemm' convolutions are not tfjs kernels, so they are not in this list): ${r.topKernels!.map((k) => `${k.kernel} ${k.ms} ms`).join(', ')}`),
].join('\n');
writeResults('tfjs-step', { backend: info, gemm: info.name === 'wasm' ? gemmInfo() : null, batch: BATCH, classes: CLASSES, warmup: WARMUP, machine: { ...machine(), loadavg: os.loadavg() }, rows }, md);
