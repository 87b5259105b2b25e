// Trainer throughput: ResNet-50 img/s through `cohort run --local` (the real path: agent, ranks,
// allreduce) at 32² and 64², batch 16 per rank, 1 and 2 ranks; side by side with a seed-style
// PyTorch script on the same step when /usr/bin/python3 has torch; --compile and --fp16 on/off.
//   npx tsx test/bench/trainer.ts [--quick]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CompileEvent, DoneEvent, StepEvent } from '../../trainer/protocol';
import { ROOT, cohortRun, machine, median, writeResults } from './bench-util';

const quick = process.argv.includes('--quick');
const STEPS = quick ? 8 : 14;

interface Row {
  name: string;
  imageSize: number;
  ranks: number;
  flags: string[];
  imgPerSec: number | null;
  stepMs: number | null;
  commBytesPerStep: number | null;
  compile?: { speedup?: number; baselineStepMs?: number; compiledStepMs?: number; durationMs: number };
  error?: string;
}

function measure(name: string, imageSize: number, ranks: number, flags: string[] = []): Row {
  const r = cohortRun(['--ranks', String(ranks), '--image-size', String(imageSize), '--batch-size', '16', '--steps', String(STEPS), '--log-steps', '2', '--warmup-steps', '2', ...flags]);
  const done = r.events.find((e) => e.type === 'done') as DoneEvent | undefined;
  const steps = r.events.filter((e) => e.type === 'step') as StepEvent[];
  const compile = r.events.find((e) => e.type === 'compile') as CompileEvent | undefined;
  const row: Row = {
    name,
    imageSize,
    ranks,
    flags,
    imgPerSec: done?.medianGlobalSamplesPerSec ?? null,
    stepMs: steps.length ? median(steps.map((s) => s.stepTimeMs)) : null,
    commBytesPerStep: steps.length ? median(steps.map((s) => (s.commBytes ?? 0) / 2)) : null,
    ...(compile ? { compile: { speedup: compile.speedup, baselineStepMs: compile.baselineStepMs, compiledStepMs: compile.compiledStepMs, durationMs: compile.durationMs } } : {}),
  };
  if (r.code !== 0) row.error = r.stderr.split('\n').filter(Boolean).slice(-3).join(' / ');
  console.error(`${name}: ${row.imgPerSec?.toFixed(2) ?? 'failed'} img/s${row.error ? ` (${row.error})` : ''}`);
  return row;
}

function torchReference(imageSize: number, threads: number): { imgPerSec: number; stepMs: number; torch: string } | { skipped: string } {
  const script = join(ROOT, 'test', 'bench', 'torch-reference.py');
  if (!existsSync('/usr/bin/python3') || !existsSync(script)) return { skipped: 'no /usr/bin/python3 or reference script' };
  const probe = spawnSync('/usr/bin/python3', ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return { skipped: 'torch is not installed for /usr/bin/python3' };
  const r = spawnSync('/usr/bin/python3', [script, '--image-size', String(imageSize), '--batch-size', '16', '--threads', String(threads), '--steps', String(STEPS), '--json'], { encoding: 'utf8' });
  const line = r.stdout.trim().split('\n').at(-1);
  try {
    return JSON.parse(line ?? '') as { imgPerSec: number; stepMs: number; torch: string };
  } catch {
    return { skipped: `reference script failed: ${r.stderr.slice(-300)}` };
  }
}

const rows: Row[] = [];
for (const size of [32, 64]) {
  rows.push(measure(`${size}² 1 rank`, size, 1));
  rows.push(measure(`${size}² 2 ranks`, size, 2));
}
rows.push(measure('32² 1 rank --compile', 32, 1, ['--compile']));
rows.push(measure('32² 2 ranks --compile', 32, 2, ['--compile']));
rows.push(measure('64² 2 ranks --compile', 64, 2, ['--compile']));
rows.push(measure('32² 2 ranks --fp16', 32, 2, ['--fp16']));
const torch = { 32: torchReference(32, 2), 64: torchReference(64, 2), '32-1thread': torchReference(32, 1) };

const get = (n: string) => rows.find((r) => r.name === n);
const ratio = (a: number | null | undefined, b: number | null | undefined) => (a && b ? a / b : null);
const best = (...rs: (Row | undefined)[]) => Math.max(...rs.map((r) => r?.imgPerSec ?? 0)) || null;
const summary = {
  // The machine's best tfjs configuration (2 ranks, with or without --compile) against PyTorch on both cores.
  perMachineVsTorch: {
    32: ratio(best(get('32² 2 ranks'), get('32² 2 ranks --compile')), 'imgPerSec' in torch[32] ? torch[32].imgPerSec : null),
    64: ratio(best(get('64² 2 ranks'), get('64² 2 ranks --compile')), 'imgPerSec' in torch[64] ? torch[64].imgPerSec : null),
  },
  scalingEfficiency2Ranks: {
    32: ratio(get('32² 2 ranks')?.imgPerSec, (get('32² 1 rank')?.imgPerSec ?? 0) * 2),
    64: ratio(get('64² 2 ranks')?.imgPerSec, (get('64² 1 rank')?.imgPerSec ?? 0) * 2),
  },
  compileSpeedup: get('32² 1 rank --compile')?.compile?.speedup ?? null,
  compileStepRatio: ratio(get('32² 1 rank')?.stepMs, get('32² 1 rank --compile')?.stepMs),
  fp16WireBytesRatio: ratio(get('32² 2 ranks --fp16')?.commBytesPerStep, get('32² 2 ranks')?.commBytesPerStep),
};
const f = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? '—' : x.toFixed(d));
const md = [
  `### Trainer throughput (ResNet-50, batch 16 per rank, ${STEPS} steps, median of log windows)`,
  '',
  '| run | img/s (global) | step ms | gradient bytes sent / step / rank |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${f(r.imgPerSec)} | ${f(r.stepMs, 0)} | ${r.commBytesPerStep === null ? '—' : (r.commBytesPerStep / 1e6).toFixed(1) + ' MB'} |`),
  '',
  `PyTorch seed-style reference (same step, 2 threads): 32² ${'imgPerSec' in torch[32] ? f(torch[32].imgPerSec) + ' img/s' : torch[32].skipped}, 64² ${'imgPerSec' in torch[64] ? f(torch[64].imgPerSec) + ' img/s' : torch[64].skipped}; 1 thread 32²: ${'imgPerSec' in torch['32-1thread'] ? f(torch['32-1thread'].imgPerSec) + ' img/s' : torch['32-1thread'].skipped}`,
  '',
  `- per machine vs PyTorch (best of 2 tfjs ranks with/without --compile ÷ torch on 2 threads): 32² ${f(summary.perMachineVsTorch[32])}×, 64² ${f(summary.perMachineVsTorch[64])}× (goal ≥ 0.5)`,
  `- 2-rank scaling efficiency: 32² ${f(summary.scalingEfficiency2Ranks[32])}, 64² ${f(summary.scalingEfficiency2Ranks[64])} (goal ≥ 0.9)`,
  `- --compile: measured speed-up of the step ${f(summary.compileSpeedup)}× (compile event); step-time ratio off/on in the run ${f(summary.compileStepRatio)}×`,
  `- --fp16: gradient bytes on the wire, on/off = ${f(summary.fp16WireBytesRatio)}`,
].join('\n');
writeResults('trainer', { machine: machine(), steps: STEPS, rows, torch, summary }, md);
