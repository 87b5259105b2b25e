// The 3×3 stride-1 convolutions of the ResNet-50 training step (batch 16, 32² and 64²): Winograd
// F(2×2, 3×3) and F(4×4, 3×3) (conv-winograd.ts) vs im2col + the wasm GEMM (conv-gemm.ts),
// forward, input gradient and filter gradient, on fresh output tensors every call as in a step.
// Median CPU ms of interleaved samples (the machine is shared and drifts); ratios are gemm ÷ each.
//   npx tsx test/bench/winograd.ts [--samples 7]
// Re-runs itself under node --experimental-wasm-relaxed-simd when this Node needs the flag.
// Writes bench/results/winograd.{json,md}.
import * as tf from '@tensorflow/tfjs-core';
import { spawnSync } from 'node:child_process';
import { cpuMs, gemmInfo, initBackend } from '../../trainer/engine/tfjs';
import { convBackpropFilter, convBackpropInput, convForward, defaultImpl } from '../../trainer/engine/tfjs/conv/conv-kernels';
import { convGeometry, type ConvGeometry } from '../../trainer/engine/tfjs/conv/conv-geometry';
import { tapsSupports } from '../../trainer/engine/tfjs/conv/conv-taps';
import { relaxedSimdNodeFlags } from '../../trainer/util/wasm-asm';
import { countOption, machine, median, writeResults } from './bench-util';

const rankFlags = relaxedSimdNodeFlags();
if (rankFlags.length && !process.argv.includes('--no-rank-flags')) {
  const r = spawnSync(process.execPath, [...rankFlags, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const SAMPLES = countOption('samples', 7);
const BATCH = 16;
const PASSES = ['fwd', 'dx', 'dw'] as const;
type Pass = (typeof PASSES)[number];
const IMPLS = ['gemm', 'winograd', 'winograd4', 'taps'] as const;

await initBackend('wasm');

/** The stride-1 3×3 convs ResNet-50 runs at an image side (stage sides image/4 … image/32), with how many of each. */
function layers(image: number): { g: ConvGeometry; count: number }[] {
  return [0, 1, 2, 3].map((s) => ({ g: convGeometry((image / 4) >> s, 64 << s, 64 << s, 3, 1, 1), count: [3, 3, 5, 2][s]! }))
    .filter(({ g }) => g.inSize > 1); // 1×1: the centre-tap matMul, no tiles
}

function run(g: ConvGeometry, pass: Pass, impl: (typeof IMPLS)[number], x: tf.Tensor4D, w: tf.Tensor4D, dy: tf.Tensor4D): number {
  const c0 = cpuMs();
  const out = pass === 'fwd' ? convForward(x, w, g, impl) : pass === 'dx' ? convBackpropInput(dy, w, g, impl) : convBackpropFilter(x, dy, g, impl);
  const ms = cpuMs() - c0;
  out.dispose();
  return ms;
}

/** tapsMs: null where 'taps' does not apply (inputs other than 2×2). */
interface Row { image: number; side: number; channels: number; count: number; pass: Pass; gemmMs: number; winogradMs: number; winograd4Ms: number; tapsMs: number | null; defaultImpl: string }
const rows: Row[] = [];
for (const image of [32, 64]) {
  for (const { g, count } of layers(image)) {
    const x = tf.randomNormal([BATCH, g.inSize, g.inSize, g.cin]) as tf.Tensor4D;
    const w = tf.randomNormal([3, 3, g.cin, g.cout]) as tf.Tensor4D;
    const dy = tf.randomNormal([BATCH, g.outSize, g.outSize, g.cout]) as tf.Tensor4D;
    const samples = new Map<string, number[]>();
    const impls = IMPLS.filter((impl) => impl !== 'taps' || tapsSupports(g));
    for (let s = 0; s < SAMPLES + 1; s++) {
      for (const pass of PASSES) {
        for (const impl of impls) {
          const ms = run(g, pass, impl, x, w, dy);
          if (s > 0) samples.set(`${pass} ${impl}`, [...(samples.get(`${pass} ${impl}`) ?? []), ms]); // sample 0 warms up
        }
      }
    }
    const def = defaultImpl(g);
    for (const pass of PASSES) {
      const ms = (impl: string): number | null => (samples.has(`${pass} ${impl}`) ? median(samples.get(`${pass} ${impl}`)!) : null);
      rows.push({ image, side: g.inSize, channels: g.cin, count, pass, gemmMs: ms('gemm')!, winogradMs: ms('winograd')!, winograd4Ms: ms('winograd4')!, tapsMs: ms('taps'), defaultImpl: def[pass] });
    }
    tf.dispose([x, w, dy]);
  }
}

const perStep = (image: number, pick: (r: Row) => number): number => rows.filter((r) => r.image === image).reduce((s, r) => s + r.count * pick(r), 0);
const stepLine = [32, 64].map((image) => {
  const gemm = perStep(image, (r) => r.gemmMs);
  const chosen = perStep(image, (r) => ({ winograd: r.winogradMs, winograd4: r.winograd4Ms, taps: r.tapsMs ?? r.gemmMs }[r.defaultImpl] ?? r.gemmMs));
  return `${image}²: ${gemm.toFixed(0)} ms with im2col + GEMM, ${chosen.toFixed(0)} ms with the default choice (${(gemm - chosen).toFixed(0)} ms less per step)`;
}).join('; ');
const md = [
  `## Winograd F(2×2, 3×3) and F(4×4, 3×3), and per-tap GEMMs on 2×2 inputs, vs im2col + GEMM: the stride-1 3×3 convs of a ResNet-50 step (batch ${BATCH}, 1 thread)`,
  '',
  `Median CPU ms of ${SAMPLES} interleaved samples; ${gemmInfo().detail}. Per step (each conv × how often the net runs it): ${stepLine}.`,
  '',
  '| image | conv (side, channels) | convs per step | pass | im2col + GEMM ms | F(2×2) ms | F(4×4) ms | taps ms | GEMM ÷ F(2×2) | GEMM ÷ F(4×4) | GEMM ÷ taps | default |',
  '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ...rows.map((r) => `| ${r.image}² | ${r.side}² ${r.channels}→${r.channels} | ${r.count} | ${r.pass} | ${r.gemmMs.toFixed(1)} | ${r.winogradMs.toFixed(1)} | ${r.winograd4Ms.toFixed(1)} | ${r.tapsMs === null ? '—' : r.tapsMs.toFixed(1)} | ${(r.gemmMs / r.winogradMs).toFixed(2)}× | ${(r.gemmMs / r.winograd4Ms).toFixed(2)}× | ${r.tapsMs === null ? '—' : `${(r.gemmMs / r.tapsMs).toFixed(2)}×`} | ${r.defaultImpl} |`),
].join('\n');
writeResults('winograd', { machine: machine(), batch: BATCH, samples: SAMPLES, fma: gemmInfo().fma, rows }, md);
