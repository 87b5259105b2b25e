// bench/gpu/checks.py, the acceptance's checks of what Cohort reports about the GPU, run on files in
// the shapes the acceptance writes. There is no GPU here, so the engine's events below are written
// by hand in the protocol's shapes (each one passes the protocol's decoder first) and nvidia-smi's
// rows in its documented `--format=csv,noheader,nounits` form. The point is that the checks pass on
// a truthful run and FAIL, naming the numbers, when a figure belongs to the wrong GPU or process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeEvent } from '../../trainer/protocol';

const CHECKS = resolve(import.meta.dirname, '../../bench/gpu/checks.py');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const A100 = 'GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff';
const GiB = 2 ** 30;
const ev = (o: Record<string, unknown>) => JSON.stringify(decodeEvent({ v: 1, time: 1, ...o }));
const hello = (bf16: boolean) =>
  ev({ type: 'hello', engine: 'torch', backend: 'cuda', device: `cuda:0 NVIDIA A100-SXM4-40GB (GPU 1, ${A100})`, worldSize: 1, params: 25_557_032, host: 'g1', capabilities: { fp16: { available: true, detail: '' }, compile: { available: true, detail: '' }, bf16: { available: bf16, detail: '' } }, versions: {} });
const plan = (uuid = A100) => ev({ type: 'plan', worldSize: 1, ranks: [{ rank: 0, host: 'g1', localRank: 0, device: `cuda:0 NVIDIA A100-SXM4-40GB (GPU 1, ${uuid})`, gpu: 1, gpuUuid: uuid }], globalBatch: 64, steps: 60, epochs: 1, stepsPerEpoch: 781, data: 'synthetic' });
const step = (over: Record<string, number | string> = {}, fields: Record<string, number> = {}) =>
  ev({ type: 'step', step: 60, epoch: 0, loss: 4.1, globalSamplesPerSec: 1200, stepTimeMs: 53, worldSize: 1, lr: 0.001, memory: [{ rank: 0, host: 'g1', rssBytes: 3 * GiB, tensorBytes: 0.4 * GiB, peakTensorBytes: 9 * GiB, reservedBytes: 10 * GiB, gpuProcessBytes: 10.6 * GiB, gpuUsedBytes: 11 * GiB, gpuTotalBytes: 40 * GiB, gpuUuid: A100, hostTotalBytes: 512 * GiB, ...over }], ...fields });

// --compile --warmup-steps 0 (times in ms since the epoch): torch.compile's first step ends at T, warm-up is that
// one step, then windows of 9 and 10 steps at ~1200 img/s. `compiledIn` moves the compile into the first window.
const T = 1_700_000_000_000;
const compileWarmup0 = (compiledIn = false) =>
  [
    ev({ type: 'compile', name: 'torch.compile', status: 'ok', durationMs: 48_000, detail: 'torch.compile(mode=\'default\') compiled during the first step', time: T }),
    ...(compiledIn ? [] : [ev({ type: 'warmup', steps: 1, durationMs: 48_100, detail: 'first steps excluded from throughput', time: T + 100 })]),
    // With the compile in the window, the window's 10 steps took 48.5 s (the compile's 48 s among them).
    compiledIn
      ? step({}, { step: 10, time: T + 500, stepTimeMs: 4850, globalSamplesPerSec: 13.2 })
      : step({}, { step: 10, time: T + 100 + 9 * 53, stepTimeMs: 53, globalSamplesPerSec: 1207 }),
    step({}, { step: 20, time: T + 100 + 19 * 53, stepTimeMs: 53, globalSamplesPerSec: 1210 }),
    step({}, { step: 30, time: T + 100 + 29 * 53, stepTimeMs: 53, globalSamplesPerSec: 1205 }),
  ].join('\n') + '\n';
const autoHello = (engine: 'torch' | 'tfjs', device: string) =>
  ev({ type: 'hello', engine, backend: engine === 'torch' ? 'cuda' : 'wasm', device, worldSize: 1, params: 25_557_032, host: 'local', capabilities: { fp16: { available: engine === 'torch', detail: '' }, compile: { available: true, detail: '' } }, versions: {}, reason: 'auto: torch with CUDA; python: /opt/venv/bin/python (torch 2.3.1+cu121, CUDA 12.1, 2 GPU(s)); also found: /usr/bin/python3 (torch 2.1.2, CPU only)' });
const autoOnGpu = [autoHello('torch', `cuda:0 NVIDIA A100-SXM4-40GB (GPU 1, ${A100})`)];

const LADDER = ['fp32', 'channels-last', 'fp16', 'bf16', 'compile', 'all'];

function outDir(o: { cc: string; engineStep?: string; enginePlan?: string; bf16Cli: string[]; bf16Exit: number; warmup0?: string; auto?: string[]; check?: { exit: number; text: string } | 'absent'; skipped?: string }): string {
  const d = mkdtempSync(join(tmpdir(), 'cohort-gpu-checks-'));
  dirs.push(d);
  writeFileSync(join(d, 'gpus.csv'), `0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla T4, 7.5\n1, ${A100}, NVIDIA A100-SXM4-40GB, ${o.cc}\n`);
  writeFileSync(join(d, 'visible.txt'), '1\n');
  // rungs.tsv as scripts/gpu-acceptance.sh writes it: name, COHORT_TORCH_EXTRAS, engine flags, plain flags, "ran" or why not.
  writeFileSync(join(d, 'rungs.tsv'), LADDER.map((r) => `${r}\t0\t\t\t${r === o.skipped ? 'skipped: time budget (12 s left, ~90 s needed)' : 'ran'}\n`).join(''));
  for (const rung of LADDER.filter((r) => r !== o.skipped)) {
    // "all" runs the engine at --warmup-steps 0 (the compile check reads it); "bf16" is also the engine's --bf16 capability.
    const body = rung === 'all' ? (o.warmup0 ?? compileWarmup0()).trim() : (o.engineStep ?? step());
    writeFileSync(join(d, `engine-${rung}.jsonl`), [hello(rung === 'bf16' && o.cc >= '8.0'), o.enginePlan ?? plan(), body].join('\n') + '\n');
    writeFileSync(join(d, `ref-${rung}.json`), JSON.stringify({ imgPerSec: 1250, maxMemoryAllocated: 8.8 * GiB }));
  }
  writeFileSync(join(d, 'cli-auto.jsonl'), [...(o.auto ?? autoOnGpu), done].join('\n') + '\n');
  if (o.check === 'absent') writeFileSync(join(d, 'check.skipped'), "skipped: this build of cohort has no 'check' command\n");
  else if (o.check) {
    writeFileSync(join(d, 'check.txt'), o.check.text);
    writeFileSync(join(d, 'check.exit'), `${o.check.exit}\n`);
  }
  writeFileSync(join(d, 'bf16-cli.jsonl'), o.bf16Cli.join('\n') + '\n');
  writeFileSync(join(d, 'bf16-cli.exit'), `${o.bf16Exit}\n`);
  writeFileSync(join(d, 'probe.txt'), `local: Linux 6.1 x86_64, 64 cores, 503.8 GiB, node v20.11.0, Tesla T4 15 GiB cc 7.5, NVIDIA A100-SXM4-40GB 40 GiB cc ${o.cc} (driver 535.104.05, CUDA 12.2)\n`);
  writeFileSync(join(d, 'tfjs.skipped'), 'skipped (SKIP_TFJS=1)\n');
  return d;
}

const run = (d: string) => spawnSync('/usr/bin/python3', [CHECKS, d], { encoding: 'utf8' });
const done = ev({ type: 'done', status: 'ok', steps: 6, medianGlobalSamplesPerSec: 300, paramChecksum: 'ab', durationMs: 9000 });
const refused = ev({ type: 'error', rank: -1, host: 'local', message: `--bf16: rank 0 on local would run on GPU 1 (NVIDIA A100-SXM4-40GB, ${A100}), compute capability 7.0; bf16 needs compute capability ≥ 8.0`, logTail: [], code: 'bf16-unsupported' });

describe('bench/gpu/checks.py', () => {
  it('passes a truthful run on an Ampere GPU (bf16 allowed and run)', () => {
    const r = run(outDir({ cc: '8.0', bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# Checks \(GPU under test: NVIDIA A100-SXM4-40GB GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, index 1\)/);
    expect(r.stdout).toMatch(/35 passed, 0 failed, 3 skipped/);
    expect(r.stdout).toMatch(/- PASS compile, --warmup-steps 0: compile kept out of throughput: compile 48\.0 s; .*first window 1\.00x the median/);
    expect(r.stdout).toMatch(/- PASS cohort run --engine auto picks the CUDA torch/);
  });

  it('fails when a rank reports another GPU, or a device-wide figure as its own process', () => {
    const wrong = run(outDir({ cc: '8.0', enginePlan: plan('GPU-1b2c3d4e-0000-1111-2222-333344445555'), bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(wrong.status).toBe(1);
    expect(wrong.stdout).toMatch(/- FAIL fp32: plan names the GPU the rank used: .*GPU-1b2c3d4e/);
    const devicewide = run(outDir({ cc: '8.0', engineStep: step({ gpuProcessBytes: 12 * GiB }), bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(devicewide.stdout).toMatch(/- FAIL fp32: this process's bytes on its GPU .*gpuProcessBytes 12884901888, gpuUsedBytes 11811160064/);
  });

  it('fails when the compile step lands in the first throughput window (--warmup-steps 0)', () => {
    const r = run(outDir({ cc: '8.0', warmup0: compileWarmup0(true), bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/- FAIL compile, --warmup-steps 0: compile kept out of throughput: compile 48\.0 s; warmup null; first window opened -48\.00 s after the compile event; first window 0\.01x/);
  });

  it('fails when --engine auto trains on the CPU (tfjs, or a CPU torch) while a CUDA torch is there', () => {
    const tfjs = run(outDir({ cc: '8.0', auto: [autoHello('tfjs', 'Intel Xeon (wasm SIMD, 1 thread)')], bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(tfjs.status).toBe(1);
    expect(tfjs.stdout).toMatch(/- FAIL cohort run --engine auto picks the CUDA torch and trains on the GPU: hello\.engine 'tfjs'/);
    const cpuTorch = run(outDir({ cc: '8.0', auto: [autoHello('torch', 'Intel Xeon (8 threads)')], bf16Cli: [hello(true), done], bf16Exit: 0 }));
    expect(cpuTorch.stdout).toMatch(/- FAIL cohort run --engine auto .*device 'Intel Xeon \(8 threads\)'/);
  });

  it('on a pre-Ampere GPU, passes only when the agent refused --bf16 before any rank started', () => {
    const ok = run(outDir({ cc: '7.0', bf16Cli: [refused], bf16Exit: 1 }));
    expect(ok.stdout).toMatch(/- PASS agent refuses --bf16 on a < 8\.0 GPU/);
    const ran = run(outDir({ cc: '7.0', bf16Cli: [hello(false), done], bf16Exit: 0 }));
    expect(ran.status).toBe(1);
    expect(ran.stdout).toMatch(/- FAIL agent refuses --bf16 on a < 8\.0 GPU before any rank, naming it: exit 0, error null/);
  });

  it('says SKIP for a rung the time budget left out, and PASS/FAIL/SKIP for cohort check local by its exit', () => {
    const r = run(outDir({ cc: '8.0', bf16Cli: [hello(true), done], bf16Exit: 0, skipped: 'compile', check: { exit: 0, text: 'local: 9 checks, all fine\n' } }));
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/- SKIP compile: engine ran: skipped: time budget \(12 s left, ~90 s needed\)/);
    expect(r.stdout).toMatch(/- PASS cohort check local finds nothing wrong: exit 0: local: 9 checks, all fine/);
    const sick = run(outDir({ cc: '8.0', bf16Cli: [hello(true), done], bf16Exit: 0, check: { exit: 1, text: 'local: GPU 0 ECC errors\n' } }));
    expect(sick.status).toBe(1);
    expect(sick.stdout).toMatch(/- FAIL cohort check local finds nothing wrong: exit 1: local: GPU 0 ECC errors/);
    const absent = run(outDir({ cc: '8.0', bf16Cli: [hello(true), done], bf16Exit: 0, check: 'absent' }));
    expect(absent.stdout).toMatch(/- SKIP cohort check local finds nothing wrong: skipped: this build of cohort has no 'check' command/);
  });
});
