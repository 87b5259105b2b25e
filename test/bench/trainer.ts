// Trainer throughput: ResNet-50 img/s through `cohort run --local` (the real path: agent, ranks,
// allreduce) at 32² and 64², batch 16 per rank, 1 and 2 ranks; side by side with a seed-style
// PyTorch script on the same step when /usr/bin/python3 has torch; --compile and --fp16 on/off.
//   npx tsx test/bench/trainer.ts [--quick]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CompileEvent, DoneEvent, StepEvent } from '../../trainer/protocol';
import { ROOT, cohortRun, cohortRunAsync, machine, median, writeResults } from './bench-util';

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
  /**
   * Of each step, the share not spent in the allreduce (incl. waiting for the slower rank), from the
   * ranks' own phase timings in the `done` event: scaling efficiency measured inside one run, so the
   * machine's speed drifting between runs cannot move it.
   */
  inRunEfficiency?: number;
  /** Mean over ranks of the compute phase (forward + backward + readback) per step, ms. */
  computeMs?: number;
  error?: string;
}

function measure(name: string, imageSize: number, ranks: number, flags: string[] = []): Row {
  const r = cohortRun(['--ranks', String(ranks), '--image-size', String(imageSize), '--batch-size', '16', '--steps', String(STEPS), '--log-steps', '2', '--warmup-steps', '2', ...flags]);
  const done = r.events.find((e) => e.type === 'done') as DoneEvent | undefined;
  const steps = r.events.filter((e) => e.type === 'step') as StepEvent[];
  const compile = r.events.find((e) => e.type === 'compile') as CompileEvent | undefined;
  const ph = done?.phases ?? [];
  const mean = (f: (x: (typeof ph)[number]) => number): number => ph.reduce((a, x) => a + f(x), 0) / ph.length;
  const inRunEfficiency = ph.length > 1 ? mean((x) => x.computeMs + x.updateMs) / mean((x) => x.computeMs + x.allreduceMs + x.updateMs) : undefined;
  const row: Row = {
    ...(inRunEfficiency === undefined ? {} : { inRunEfficiency }),
    ...(ph.length ? { computeMs: mean((x) => x.computeMs) } : {}),
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

// The ratios the issue asks for are measured side by side: ROUNDS interleaved rounds of
// (PyTorch on 2 threads, tfjs 2 ranks, tfjs 1 rank) per image size, and the medians of the
// per-round ratios are reported (this machine has stretches of several seconds at half speed, so
// single runs one after another can differ by 15%).
const ROUNDS = quick ? 1 : 3;
const rows: Row[] = [];
const rounds: { size: number; round: number; torch: number | null; two: number | null; one: number | null; pair: number | null; inRun: number | null; computeRatio: number | null }[] = [];

/**
 * The machine's own ceiling for 2-rank scaling: two independent 1-rank runs at once (no
 * allreduce, nothing shared but the hardware), their summed img/s. Two FMA-heavy wasm processes
 * slow each other down here (shared caches / memory bandwidth / the host), which no collective can avoid.
 */
async function independentPair(size: number): Promise<number | null> {
  const args = ['--ranks', '1', '--image-size', String(size), '--batch-size', '16', '--steps', String(STEPS), '--log-steps', '2', '--warmup-steps', '2'];
  const runs = await Promise.all([cohortRunAsync(args), cohortRunAsync(args)]);
  const rates = runs.map((r) => (r.events.find((e) => e.type === 'done') as DoneEvent | undefined)?.medianGlobalSamplesPerSec ?? null);
  return rates.every((x) => x !== null) ? (rates as number[]).reduce((a, b) => a + b, 0) : null;
}
const torch: Record<string, ReturnType<typeof torchReference>> = {};
for (const size of [32, 64]) {
  for (let round = 1; round <= ROUNDS; round++) {
    const t = torchReference(size, 2);
    torch[size] ??= t;
    const two = measure(`${size}² 2 ranks`, size, 2);
    const one = measure(`${size}² 1 rank`, size, 1);
    const pair = await independentPair(size);
    if (round === 1) rows.push(one, two);
    // > 1: a rank computes slower next to its peer than alone (contention, not communication).
    const computeRatio = two.computeMs && one.computeMs ? two.computeMs / one.computeMs : null;
    rounds.push({ size, round, torch: 'imgPerSec' in t ? t.imgPerSec : null, two: two.imgPerSec, one: one.imgPerSec, pair, inRun: two.inRunEfficiency ?? null, computeRatio });
  }
}
rows.push(measure('32² 1 rank --compile', 32, 1, ['--compile']));
rows.push(measure('32² 2 ranks --compile', 32, 2, ['--compile']));
rows.push(measure('64² 2 ranks --compile', 64, 2, ['--compile']));
rows.push(measure('32² 2 ranks --fp16', 32, 2, ['--fp16']));
torch['32-1thread'] = torchReference(32, 1);
const torch1 = torch['32-1thread'];

const get = (n: string) => rows.find((r) => r.name === n);
const ratio = (a: number | null | undefined, b: number | null | undefined) => (a && b ? a / b : null);
const medianOf = (xs: (number | null)[]): number | null => {
  const ok = xs.filter((x): x is number => x !== null);
  return ok.length ? median(ok) : null;
};
const perRound = (size: number, f: (r: (typeof rounds)[number]) => number | null) => medianOf(rounds.filter((r) => r.size === size).map(f));
const summary = {
  // tfjs on the whole machine (2 ranks) against PyTorch on both cores, median of per-round ratios.
  perMachineVsTorch: { 32: perRound(32, (r) => ratio(r.two, r.torch)), 64: perRound(64, (r) => ratio(r.two, r.torch)) },
  scalingEfficiency2Ranks: { 32: perRound(32, (r) => ratio(r.two, (r.one ?? 0) * 2)), 64: perRound(64, (r) => ratio(r.two, (r.one ?? 0) * 2)) },
  inRunEfficiency2Ranks: { 32: perRound(32, (r) => r.inRun), 64: perRound(64, (r) => r.inRun) },
  // Compute phase per step of a rank in the 2-rank run ÷ the 1-rank run's (same round).
  computeSlowdown2Ranks: { 32: perRound(32, (r) => r.computeRatio), 64: perRound(64, (r) => r.computeRatio) },
  // What two processes get from this machine with nothing to exchange: the ceiling for the line above.
  independentPairEfficiency: { 32: perRound(32, (r) => ratio(r.pair, (r.one ?? 0) * 2)), 64: perRound(64, (r) => ratio(r.pair, (r.one ?? 0) * 2)) },
  // PyTorch's own scaling from 1 to 2 threads on this machine (32²).
  torchThreadScaling: null as number | null,
  medians: Object.fromEntries([32, 64].map((s) => [s, { torch2Threads: perRound(s, (r) => r.torch), tfjs2Ranks: perRound(s, (r) => r.two), tfjs1Rank: perRound(s, (r) => r.one) }])),
  compileSpeedup: get('32² 1 rank --compile')?.compile?.speedup ?? null,
  compileStepRatio: ratio(get('32² 1 rank')?.stepMs, get('32² 1 rank --compile')?.stepMs),
  fp16WireBytesRatio: ratio(get('32² 2 ranks --fp16')?.commBytesPerStep, get('32² 2 ranks')?.commBytesPerStep),
};
summary.torchThreadScaling = ratio(summary.medians[32]!.torch2Threads, 'imgPerSec' in torch1 ? torch1.imgPerSec * 2 : null);
const f = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? '—' : x.toFixed(d));
const md = [
  `### Trainer throughput (ResNet-50, batch 16 per rank, ${STEPS} steps, median of log windows)`,
  '',
  '| run | img/s (global) | step ms | gradient bytes sent / step / rank |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${f(r.imgPerSec)} | ${f(r.stepMs, 0)} | ${r.commBytesPerStep === null ? '—' : (r.commBytesPerStep / 1e6).toFixed(1) + ' MB'} |`),
  '',
  `Side by side, ${ROUNDS} interleaved rounds per size (PyTorch seed-style script on the same step with 2 threads, tfjs 2 ranks, tfjs 1 rank); medians:`,
  '',
  '| size | PyTorch 2 threads img/s | tfjs 2 ranks img/s | tfjs 1 rank img/s | per machine tfjs ÷ PyTorch | 2-rank scaling (img/s across runs) | 2-rank scaling inside the run (step time not in allreduce) | two independent 1-rank runs at once ÷ 2 × 1 rank (the machine\'s ceiling) |',
  '|---|---|---|---|---|---|---|---|',
  ...[32, 64].map((s) => `| ${s}² | ${f(summary.medians[s]!.torch2Threads)} | ${f(summary.medians[s]!.tfjs2Ranks)} | ${f(summary.medians[s]!.tfjs1Rank)} | ${f(summary.perMachineVsTorch[s as 32 | 64])}× | ${f(summary.scalingEfficiency2Ranks[s as 32 | 64])} | ${f(summary.inRunEfficiency2Ranks[s as 32 | 64])} | ${f(summary.independentPairEfficiency[s as 32 | 64])} |`),
  '',
  `Rounds: ${rounds.map((r) => `${r.size}² #${r.round}: torch ${f(r.torch, 1)}, 2 ranks ${f(r.two, 1)}, 1 rank ${f(r.one, 1)}, two independent 1-rank runs ${f(r.pair, 1)}`).join('; ')}. PyTorch 1 thread 32²: ${'imgPerSec' in torch['32-1thread']! ? f(torch['32-1thread'].imgPerSec) + ' img/s' : torch['32-1thread']!.skipped}${'imgPerSec' in torch[32]! ? '' : ` (PyTorch: ${torch[32]!.skipped})`}`,
  '',
  `- per machine vs PyTorch (tfjs 2 ranks ÷ torch on 2 threads, median of rounds): 32² ${f(summary.perMachineVsTorch[32])}×, 64² ${f(summary.perMachineVsTorch[64])}× (goal ≥ 0.5)`,
  `- 2-rank scaling efficiency (median of rounds): 32² ${f(summary.scalingEfficiency2Ranks[32])}, 64² ${f(summary.scalingEfficiency2Ranks[64])} across runs, ${f(summary.inRunEfficiency2Ranks[32])} / ${f(summary.inRunEfficiency2Ranks[64])} inside the 2-rank runs (goal ≥ 0.9); a rank's compute phase is ${f(summary.computeSlowdown2Ranks[32])}× / ${f(summary.computeSlowdown2Ranks[64])}× as long next to its peer as alone; two independent 1-rank runs at once reach ${f(summary.independentPairEfficiency[32])} / ${f(summary.independentPairEfficiency[64])} of twice one run, PyTorch 1 → 2 threads ${f(summary.torchThreadScaling)} (32²)`,
  `- --compile: measured speed-up of the step ${f(summary.compileSpeedup)}× (compile event); step-time ratio off/on in the run ${f(summary.compileStepRatio)}×`,
  `- --fp16: gradient bytes on the wire, on/off = ${f(summary.fp16WireBytesRatio)}`,
].join('\n');
writeResults('trainer', { machine: machine(), steps: STEPS, rows, rounds, torch, summary }, md);
