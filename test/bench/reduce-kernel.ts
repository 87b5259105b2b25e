// The ring's per-piece arithmetic (trainer/collectives/reduce-kernel.ts) over one ring segment of
// ResNet-50's gradients at 2 ranks (12.5M values), piece by piece as the ring runs it: the wasm
// SIMD kernel in place on a registered memory (how the trainer runs it: the optimizer's buffers),
// the same kernel copying through its scratch (an unregistered array), and the scalar JS fallback.
// Kernels take turns sample by sample; medians of wall time.
//   npx tsx test/bench/reduce-kernel.ts [--samples 9]
// Writes bench/results/reduce-kernel.{json,md}.
import { createJsReduceKernel, createReduceKernel, reduceScratchBytes, type ReduceKernel } from '../../trainer/collectives/reduce-kernel';
import { PIECE_ELEMS } from '../../trainer/collectives/ring-engine';
import { FlatBuffers } from '../../trainer/optim/update-kernels';
import { countOption, machine, median, writeResults } from './bench-util';

const SAMPLES = countOption('samples', 9);
const N = 12_500_000;

const home = new FlatBuffers(1, N, reduceScratchBytes(PIECE_ELEMS));
const variants: { name: string; kernel: ReduceKernel; buf: Float32Array }[] = [
  { name: 'wasm SIMD, in place', kernel: createReduceKernel(PIECE_ELEMS, { memory: home.memory, scratchOffset: home.scratchOffset }), buf: home.views[0]! },
  { name: 'wasm SIMD, copying', kernel: createReduceKernel(PIECE_ELEMS), buf: new Float32Array(N) },
  { name: 'scalar JS', kernel: createJsReduceKernel(PIECE_ELEMS), buf: new Float32Array(N) },
];
for (const v of variants) {
  for (let i = 0; i < N; i++) v.buf[i] = Math.sin(i) * 0.01;
  // A received piece: halves of small gradients (what the f16 steps read), or f32 values.
  const staged = new Uint16Array(v.kernel.staging.buffer, v.kernel.staging.byteOffset, PIECE_ELEMS * 2);
  for (let i = 0; i < staged.length; i++) staged[i] = 0x2000 + (i & 0x3ff);
}

const out = new Uint16Array(PIECE_ELEMS);
const ops: { name: string; run: (k: ReduceKernel, buf: Float32Array, off: number, count: number) => void }[] = [
  { name: 'f32 add (reduce-scatter step)', run: (k, b, o, c) => k.addF32(b, o, c, 0) },
  { name: 'f16 accumulate', run: (k, b, o, c) => k.addF16(b, o, c) },
  { name: "f16 owner's pass: accumulate, average, encode, round", run: (k, b, o, c) => k.addF16(b, o, c, { divisor: 2, out, round: true }) },
  { name: 'f16 decode (all-gather step)', run: (k, b, o, c) => k.decodeF16(b, o, c) },
  { name: 'f16 encode (first send)', run: (k, b, o, c) => k.encodeF16(b, o, c, out) },
];

const ms = new Map<string, number[]>();
for (let s = 0; s < SAMPLES; s++) {
  for (const op of ops) {
    for (const v of variants) {
      const t0 = performance.now();
      for (let off = 0; off < N; off += PIECE_ELEMS) op.run(v.kernel, v.buf, off, Math.min(PIECE_ELEMS, N - off));
      const key = `${op.name}|${v.name}`;
      ms.set(key, [...(ms.get(key) ?? []), performance.now() - t0]);
    }
  }
}

const rows = ops.map((op) => ({ op: op.name, ms: Object.fromEntries(variants.map((v) => [v.name, median(ms.get(`${op.name}|${v.name}`)!)])) }));
const f = (x: number): string => x.toFixed(1);
const md = [
  `## Ring reduce kernels: one 2-rank segment of ResNet-50's gradients (${(N / 1e6).toFixed(1)}M values) in ${PIECE_ELEMS / 1024}K-value pieces`,
  '',
  `Median ms of ${SAMPLES} samples, variants and operations taking turns. In place = on a memory registered with the collective (the trainer's case: the optimizer's buffers); copying = the piece goes through the kernel's own scratch and back.`,
  '',
  `| operation | ${variants.map((v) => v.name).join(' | ')} | scalar ÷ in place |`,
  `| --- | ${variants.map(() => '---:').join(' | ')} | ---: |`,
  ...rows.map((r) => `| ${r.op} | ${variants.map((v) => f(r.ms[v.name]!)).join(' | ')} | ${(r.ms['scalar JS']! / r.ms['wasm SIMD, in place']!).toFixed(1)}× |`),
].join('\n');
writeResults('reduce-kernel', { machine: machine(), values: N, pieceElems: PIECE_ELEMS, samples: SAMPLES, rows }, md);
