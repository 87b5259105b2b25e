// GEMM microbenchmark on the shapes of the ResNet-50 training step (batch 16, 32² and 64²):
// tfjs-backend-wasm's tf.matMul (XNNPACK, no FMA; with the explicit transposes the engine does)
// vs the hand-written wasm GEMM (gemm-kernels.ts) with relaxed-SIMD FMA and with mul+add, and
// PyTorch on one thread (oneDNN/MKL) when python3-torch is installed. GFLOP/s from CPU time
// (process.cpuUsage; the machine is shared), best and median of samples.
//   npx tsx test/bench/gemm.ts [--samples 5] [--quick]
// Re-runs itself under node --experimental-wasm-relaxed-simd when this Node needs the flag.
// Writes bench/results/gemm.{json,md}.
import * as tf from '@tensorflow/tfjs-core';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { cpuMs, initBackend } from '../../trainer/engine/tfjs';
import { emptyTensor, heapPtr, wasmGemm } from '../../trainer/engine/tfjs/kernels/gemm-kernels';
import { relaxedSimdAvailable } from '../../trainer/util/wasm-asm';
import { countOption, machine, median, writeResults } from './bench-util';

const FLAG = '--experimental-wasm-relaxed-simd';
if (!relaxedSimdAvailable() && !process.execArgv.includes(FLAG)) {
  const r = spawnSync(process.execPath, [FLAG, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const SAMPLES = countOption('samples', 5);
const QUICK = process.argv.includes('--quick');
const BATCH = 16;

type Kind = 'fwd' | 'dx' | 'dw';
interface Shape {
  name: string;
  kind: Kind;
  m: number;
  n: number;
  k: number;
  /** The conv this GEMM is (for PyTorch, which runs the conv itself through oneDNN): side, channels, filter size. */
  conv: { h: number; cin: number; cout: number; ksize: number };
}

/** 1×1 convs of each ResNet-50 stage (c → 4c and 4c → c) and the 3×3 conv as an im2col GEMM, at the stage's spatial side. */
function shapes(image: number): Shape[] {
  const out: Shape[] = [];
  const side0 = image / 4; // stem /2, max-pool /2
  for (let s = 0; s < 4; s++) {
    const h = side0 >> s;
    const p = BATCH * h * h;
    const c = 64 << s;
    const convs: [string, number, number, number][] = [[`1×1 ${c}→${4 * c}`, c, 4 * c, 1], [`1×1 ${4 * c}→${c}`, 4 * c, c, 1], [`3×3 ${c}→${c} (im2col)`, c, c, 3]];
    for (const [label, ci, cout, ksize] of convs) {
      const tag = `${image}² ${h}² ${label}`;
      const cin = ci * ksize * ksize;
      const conv = { h, cin: ci, cout, ksize };
      out.push({ name: `${tag} fwd`, kind: 'fwd', m: p, k: cin, n: cout, conv });
      out.push({ name: `${tag} dx`, kind: 'dx', m: p, k: cout, n: cin, conv });
      out.push({ name: `${tag} dw`, kind: 'dw', m: cin, k: p, n: cout, conv });
    }
  }
  return out;
}

interface Ops {
  x: tf.Tensor2D;
  w: tf.Tensor2D;
  dy: tf.Tensor2D;
}

/**
 * [best, median] GFLOP/s of each function over SAMPLES rounds, the functions interleaved within a
 * round (neighbours' load hits them alike), each sample ≥ 20 ms of CPU after a ≥ 100 ms warm-up
 * (V8 runs new wasm code in its baseline tier until the optimising compiler has it). Every call
 * gets fresh operand tensors, made outside the timed region, as in a training step: XNNPACK caches
 * its packing of a matMul's B (and a conv's filter) per tensor, which made a reused B up to 2×
 * faster than the step ever sees.
 */
function rates(flops: number, fresh: () => Ops, fs: ((o: Ops) => void)[]): [number, number][] {
  const timed = (f: (o: Ops) => void): number => {
    const o = fresh();
    const t0 = cpuMs();
    f(o);
    const dt = cpuMs() - t0;
    tf.dispose([o.x, o.w, o.dy]);
    return dt;
  };
  const reps = fs.map((f) => {
    let spent = 0;
    while (spent < 100) spent += timed(f);
    let n = 1;
    for (;;) {
      let t = 0;
      for (let i = 0; i < n; i++) t += timed(f);
      if (t >= 20) return n;
      n *= 2;
    }
  });
  const samples: number[][] = fs.map(() => []);
  for (let s = 0; s < SAMPLES; s++) {
    fs.forEach((f, j) => {
      let t = 0;
      for (let i = 0; i < reps[j]!; i++) t += timed(f);
      samples[j]!.push((flops * reps[j]!) / (t * 1e6));
    });
  }
  return samples.map((xs) => [Math.max(...xs), median(xs)]);
}

/**
 * The tfjs ops the engine can run for this GEMM (conv-kernels.ts; --compile picks the faster):
 * fwd X·W; dx dY·transpose(W) ('matmul') or transpose(W·transpose(dY)) ('matmul-t'); dw transpose(X)·dY.
 */
function tfjsOps(s: Shape): ((o: Ops) => void)[] {
  const run = (f: (o: Ops) => tf.Tensor) => (o: Ops) => {
    tf.dispose(tf.tidy(() => f(o))); // tidy keeps what f returns
  };
  if (s.kind === 'fwd') return [run(({ x, w }) => tf.matMul(x, w))];
  if (s.kind === 'dx') return [run(({ w, dy }) => tf.matMul(dy, tf.transpose(w))), run(({ w, dy }) => tf.transpose(tf.matMul(w, tf.transpose(dy))))];
  return [run(({ x, dy }) => tf.matMul(tf.transpose(x), dy))];
}

function wasmOp(s: Shape, fma: boolean): (o: Ops) => void {
  const g = wasmGemm(fma);
  return ({ x, w, dy }) => {
    const c = emptyTensor([s.m, s.n]);
    if (s.kind === 'fwd') g.gemm(s.m, s.n, s.k, { ptr: heapPtr(x), rs: s.k * 4, cs: 4 }, { ptr: heapPtr(w), rs: s.n * 4, cs: 4 }, { ptr: heapPtr(c), ldc: s.n * 4 });
    // dx = dY · Wᵀ, W is [n=cin, k=cout]
    else if (s.kind === 'dx') g.gemm(s.m, s.n, s.k, { ptr: heapPtr(dy), rs: s.k * 4, cs: 4 }, { ptr: heapPtr(w), rs: 4, cs: s.k * 4 }, { ptr: heapPtr(c), ldc: s.n * 4 });
    // dw = Xᵀ · dY, X is [k=P, m=cin]
    else g.gemm(s.m, s.n, s.k, { ptr: heapPtr(x), rs: 4, cs: s.m * 4 }, { ptr: heapPtr(dy), rs: s.n * 4, cs: 4 }, { ptr: heapPtr(c), ldc: s.n * 4 });
    c.dispose();
  };
}

/** The operands in the engine's layouts: fwd X [m,k] W [k,n]; dx dY [m,k] W [n,k]; dw X [k,m] dY [k,n]. */
function operands(s: Shape): Ops {
  const r = (shape: [number, number], seed: number): tf.Tensor2D => tf.randomNormal(shape, 0, 1, 'float32', seed);
  if (s.kind === 'fwd') return { x: r([s.m, s.k], 1), w: r([s.k, s.n], 2), dy: r([1, 1], 3) };
  if (s.kind === 'dx') return { x: r([1, 1], 1), w: r([s.n, s.k], 2), dy: r([s.m, s.k], 3) };
  return { x: r([s.k, s.m], 1), w: r([1, 1], 2), dy: r([s.k, s.n], 3) };
}

function torchRates(all: Shape[]): Map<string, [number, number]> | string {
  // torch.mm here would measure Debian's generic BLAS (BLAS_INFO=generic); the training step's
  // convolutions run in oneDNN, so time those: forward, input gradient, weight gradient.
  const py = `
import json, sys, time, torch
torch.set_num_threads(1)
shapes = json.loads(sys.stdin.read())
out = {}
for s in shapes:
    c = s['conv']; kind = s['kind']
    x = torch.randn(${BATCH}, c['cin'], c['h'], c['h']).to(memory_format=torch.channels_last)
    w = torch.randn(c['cout'], c['cin'], c['ksize'], c['ksize']).to(memory_format=torch.channels_last)
    pad = c['ksize'] // 2
    y = torch.nn.functional.conv2d(x, w, padding=pad)
    dy = torch.randn_like(y)
    if kind == 'fwd': f = lambda: torch.nn.functional.conv2d(x, w, padding=pad)
    else:
        mask = [kind == 'dx', kind == 'dw', False]
        f = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask)
    f()
    reps = 1
    while True:
        t0 = time.process_time()
        for _ in range(reps): f()
        if time.process_time() - t0 >= 0.02: break
        reps *= 2
    rates = []
    for _ in range(${SAMPLES}):
        t0 = time.process_time()
        for _ in range(reps): f()
        rates.append(2 * s['m'] * s['n'] * s['k'] * reps / ((time.process_time() - t0) * 1e9))
    rates.sort()
    out[s['name']] = [rates[-1], rates[len(rates) // 2]]
print(json.dumps({'torch': torch.__version__, 'rates': out}))
`;
  const r = spawnSync('/usr/bin/python3', ['-c', py], { input: JSON.stringify(all), encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) return `PyTorch unavailable (${(r.stderr || r.error?.message || '').trim().split('\n').pop()})`;
  const parsed = JSON.parse(r.stdout) as { torch: string; rates: Record<string, [number, number]> };
  torchVersion = parsed.torch;
  return new Map(Object.entries(parsed.rates));
}
let torchVersion = '';

const info = await initBackend('wasm');
const fmaOk = relaxedSimdAvailable();
console.log(`backend ${info.name}; relaxed SIMD ${fmaOk ? 'available' : 'unavailable'}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const all = [...shapes(32), ...shapes(64)].filter((s) => !QUICK || s.name.includes('1×1'));
interface Row extends Shape {
  gflop: number;
  tfjs: [number, number];
  wasmMulAdd: [number, number];
  wasmFma: [number, number] | null;
  torch: [number, number] | null;
}
const rows: Row[] = [];
for (const s of all) {
  const flops = 2 * s.m * s.n * s.k;
  const { x, w, dy } = operands(s);
  const fresh = (): Ops => ({ x: tf.add(x, 0), w: tf.add(w, 0), dy: tf.add(dy, 0) });
  const tf0 = tfjsOps(s);
  const r = rates(flops, fresh, [...tf0, wasmOp(s, false), ...(fmaOk ? [wasmOp(s, true)] : [])]);
  const tfjs = r.slice(0, tf0.length).reduce((a, b) => (b[1] > a[1] ? b : a));
  const wasmMulAdd = r[tf0.length]!;
  const wasmFma = fmaOk ? r[tf0.length + 1]! : null;
  tf.dispose([x, w, dy]);
  rows.push({ ...s, gflop: flops / 1e9, tfjs, wasmMulAdd, wasmFma, torch: null });
  console.log(`${s.name} [${s.m}×${s.k}·${s.k}×${s.n}]: tfjs ${tfjs[1].toFixed(1)}, wasm mul+add ${wasmMulAdd[1].toFixed(1)}, wasm fma ${wasmFma?.[1].toFixed(1) ?? '-'} GFLOP/s (median)`);
}
const torch = torchRates(all);
if (typeof torch !== 'string') for (const r of rows) r.torch = torch.get(r.name) ?? null;
else console.log(torch);

const f1 = (x: number): string => x.toFixed(1);
const geo = (xs: number[]): number => Math.exp(xs.reduce((a, b) => a + Math.log(b), 0) / xs.length);
// Summaries use each implementation's best sample: this VM has stretches of tens of seconds where
// one code path runs at half speed (host noise), which medians of interleaved samples still catch.
const speedups = rows.map((r) => (r.wasmFma ?? r.wasmMulAdd)[0] / r.tfjs[0]);
const byKind = (k: Kind): string => geo(rows.filter((r) => r.kind === k).map((r) => (r.wasmFma ?? r.wasmMulAdd)[0] / r.tfjs[0])).toFixed(2);
/** Σ time (ms, from the best samples) of one GEMM of each shape at an image size, per implementation. */
const total = (image: string, rate: (r: Row) => [number, number] | null): number => rows.filter((r) => r.name.startsWith(image)).reduce((a, r) => a + r.gflop / (rate(r)?.[0] ?? NaN), 0) * 1000;
const totals = ['32²', '64²'].map((im) => {
  const t = { tfjs: total(im, (r) => r.tfjs), mulAdd: total(im, (r) => r.wasmMulAdd), fma: total(im, (r) => r.wasmFma), torch: total(im, (r) => r.torch) };
  return `${im}: tfjs ${t.tfjs.toFixed(0)} ms, wasm mul+add ${t.mulAdd.toFixed(0)} ms, wasm FMA ${t.fma.toFixed(0)} ms (${(t.tfjs / t.fma).toFixed(2)}× tfjs), PyTorch ${t.torch.toFixed(0)} ms (wasm FMA takes ${(t.fma / t.torch).toFixed(2)}× PyTorch's time)`;
});
const md = [
  `## GEMM: hand-written wasm (relaxed-SIMD FMA / mul+add) vs tfjs-backend-wasm matMul vs PyTorch, 1 thread`,
  '',
  `GFLOP/s from CPU time, median (best) of ${SAMPLES} samples, the implementations interleaved; ResNet-50 batch ${BATCH} shapes: fwd X·W, dx dY·Wᵀ, dw Xᵀ·dY (fresh operand tensors for every call, as in a training step; tfjs: the best of the engine's matMul formulations, with the explicit transposes it does; PyTorch: the same convolution's forward / input gradient / weight gradient in oneDNN, channels-last). ${os.cpus()[0]?.model.trim()}; relaxed SIMD ${fmaOk ? 'on' : 'unavailable'}; ${typeof torch === 'string' ? torch : `torch ${torchVersion}`}. Load average at end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}.`,
  '',
  `Geometric-mean speed-up of the wasm GEMM (${fmaOk ? 'FMA' : 'mul+add'}) over tfjs (best samples): all ${geo(speedups).toFixed(2)}×; fwd ${byKind('fwd')}×, dx ${byKind('dx')}×, dw ${byKind('dw')}×.`,
  '',
  `Time for one GEMM of every shape below (time-weighted, best samples): ${totals.join('; ')}.`,
  '',
  '| shape | M×K·K×N | GFLOP | tfjs | wasm mul+add | wasm FMA | FMA / tfjs | PyTorch conv 1 thread |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => {
    const best = r.wasmFma ?? r.wasmMulAdd;
    return `| ${r.name} | ${r.m}×${r.k}·${r.k}×${r.n} | ${r.gflop.toFixed(3)} | ${f1(r.tfjs[1])} (${f1(r.tfjs[0])}) | ${f1(r.wasmMulAdd[1])} (${f1(r.wasmMulAdd[0])}) | ${r.wasmFma ? `${f1(r.wasmFma[1])} (${f1(r.wasmFma[0])})` : '-'} | ${(best[1] / r.tfjs[1]).toFixed(2)}× | ${r.torch ? `${f1(r.torch[1])} (${f1(r.torch[0])})` : '-'} |`;
  }),
].join('\n');
writeResults('gemm', { machine: { ...machine(), loadavg: os.loadavg(), cpu: os.cpus()[0]?.model }, relaxedSimd: fmaOk, torch: torchVersion || null, samples: SAMPLES, rows }, md);
