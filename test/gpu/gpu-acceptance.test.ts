// scripts/gpu-acceptance.sh on machines without an NVIDIA GPU: one line, exit 77 ("skipped"). The
// PATH is built here so the answer does not depend on this machine: no nvidia-smi at all, then a
// fake nvidia-smi answering as the real one does on a host whose driver sees no GPU.
// Then the whole script on a stand-in 1-GPU machine (./stand-in-gpu.ts), to check what it runs (no
// GPU exists here); report.py and checks.py run on the real Python over what it wrote. The figures
// are the stand-in's, not measurements. test/kit/ runs the same from the device kit.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LADDER_RUN_ORDER, SHAPE, standInGpu } from './stand-in-gpu';

const script = resolve(__dirname, '../../scripts/gpu-acceptance.sh');
const bin = mkdtempSync(join(tmpdir(), 'cohort-gpu-acc-'));
for (const tool of ['dirname', 'grep']) symlinkSync(spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(), join(bin, tool));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

function run(path: string) {
  return spawnSync('/bin/bash', [script], { encoding: 'utf8', env: { PATH: path, HOME: bin }, timeout: 30_000 });
}

describe('gpu-acceptance.sh without a GPU', () => {
  it('exits 77 with one line when nvidia-smi is missing', () => {
    const r = run(bin);
    expect(r.status).toBe(77);
    expect(r.stdout).toBe('gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi not found)\n');
    expect(r.stderr).toBe('');
  });

  it('exits 77 when nvidia-smi lists no GPU', () => {
    const withSmi = mkdtempSync(join(tmpdir(), 'cohort-gpu-smi-'));
    try {
      writeFileSync(join(withSmi, 'nvidia-smi'), '#!/bin/sh\necho "No devices were found"\nexit 6\n');
      chmodSync(join(withSmi, 'nvidia-smi'), 0o755);
      const r = run(`${withSmi}:${bin}`);
      expect(r.status).toBe(77);
      expect(r.stdout).toBe('gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi lists no GPU)\n');
    } finally {
      rmSync(withSmi, { recursive: true, force: true });
    }
  });
});

/**
 * One case on a stand-in 1-GPU machine (./stand-in-gpu.ts) in a temp dir of its own, removed after `fn`:
 * `acceptance(env)` runs the script there, raw files and the table in `out` unless `env` says otherwise.
 */
function onStandIn(name: string, fn: (m: { dir: string; out: string; gpu: ReturnType<typeof standInGpu>; acceptance: (env?: Record<string, string>, timeout?: number) => SpawnSyncReturns<string> }) => void): void {
  const dir = mkdtempSync(join(tmpdir(), `cohort-gpu-acc-${name}-`));
  try {
    const gpu = standInGpu(dir);
    const out = join(dir, 'out');
    const acceptance = (env: Record<string, string> = {}, timeout = 60_000) =>
      spawnSync('/bin/bash', [script], { encoding: 'utf8', env: { PATH: `${dir}:${process.env.PATH}`, HOME: dir, PYTHON: gpu.python, OUT: out, RESULTS_DIR: out, ...env }, timeout });
    fn({ dir, out, gpu, acceptance });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('gpu-acceptance.sh on a (stand-in) 1-GPU machine', () => {
  it("runs the seeds' ladder at 224², batch 256 on the engine and on the plain script (the same step per rung), after a preflight, and writes the table with MFU", () => {
    onStandIn('run', ({ dir, gpu, acceptance }) => {
      const results = join(dir, 'results');
      const r = acceptance({ RESULTS_DIR: results, SKIP_CLI: '1' });
      expect([0, 1], r.stdout + r.stderr).toContain(r.status); // 1: the stand-in's events fail most checks, as they should
      const lines = r.stdout.split('\n');
      expect(lines[4]).toMatch(/^preflight: c compiler (gcc|cc|none)/); // this machine's own
      expect(lines.slice(0, 7).filter((_, i) => i !== 4)).toEqual([
        'preflight: NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15, 9.0',
        'preflight: CUDA Version: 12.4',
        'preflight: torch 2.3.1+cu121 torchvision 0.18.1 cuda 12.1 cudnn 8902 available True',
        'preflight: nccl 2.21.5 tf32 cudnn True tf32 matmul False',
        `preflight: node ${process.version}`,
        'preflight: SKIP_CLI=1: the cohort run / check / probe / tfjs parts are skipped (their checks say SKIP)',
      ]);
      const called = gpu.calls();
      // [COHORT_TORCH_EXTRAS, the engine's flags], most wanted first: fp32, all (its engine at --warmup-steps 0), fp16, bf16, channels-last, compile
      expect(called.filter((c) => c[0]!.endsWith('torch_engine.py')).map((c) => [c[1], c[2]!.slice(c[0]!.length + 1)])).toEqual(
        LADDER_RUN_ORDER.map(([, extras, flags]) => [extras, `${SHAPE}${flags ? ' ' + flags : ''}`]),
      );
      // The plain script, rung by rung: the same step (the extras rungs with --extras), right after the engine's.
      expect(called.filter((c) => c[0]!.endsWith('reference.py')).map((c) => c[2]!.split(' --warmup-steps 10')[1]!.trim())).toEqual(LADDER_RUN_ORDER.map(([, , , plain]) => plain));
      expect(called.filter((c) => /torch_engine|reference/.test(c[0]!)).map((c) => c[0]!.split('/').pop())).toEqual(LADDER_RUN_ORDER.flatMap(() => ['torch_engine.py', 'reference.py']));
      const table = join(results, 'gpu-nvidia-h100-80gb-hbm3.md');
      expect(existsSync(table)).toBe(true);
      const md = readFileSync(table, 'utf8');
      // The table in the ladder's order; MFU from the plain script's FLOPs per image against the H100's dense peak (TF32 494.7, FP16/BF16 989.4 TFLOPS).
      expect(md.match(/^\| (fp32|channels-last|fp16|bf16|compile|all) \|/gm)).toEqual(['| fp32 |', '| channels-last |', '| fp16 |', '| bf16 |', '| compile |', '| all |']);
      expect(md).toMatch(/^\| fp32 \| defaults \(fp32, TF32 convolutions\) \| — \(see engine-fp32\.log\) \| 1000\.0 \| — \| — \/ 5\.0% \|/m);
      expect(md).toMatch(/^\| all \| `--fp16 --extras --compile` \| .* \| 1000\.0 \| — \| — \/ 2\.5% \|/m);
      expect(md).toMatch(/^\| bf16 \| `--bf16` \| .* \| — \/ 2\.5% \|/m);
      expect(md).toMatch(/^# Checks \(GPU under test: NVIDIA H100 80GB HBM3 GPU-4a3b2c1d-1111-2222-3333-444455556666, index 0\)/m);
      expect(md).toMatch(/- PASS fp32: hello names it too/);
      expect(md).toMatch(/- SKIP tfjs engine: skipped: needs Node >= 20 .*and not SKIP_CLI=1/);
      expect(md).toMatch(/^The acceptance took \d+ s after the GPU check\.$/m);
      expect(md).toMatch(/^\d+ passed, \d+ failed, \d+ skipped$/m);
    });
  }, 90_000);

  it('keeps to its time budget: a part that no longer fits is skipped, and the table says so', () => {
    onStandIn('budget', ({ out, gpu, acceptance }) => {
      const r = acceptance({ BUDGET_S: '14' });
      expect([0, 1], r.stdout + r.stderr).toContain(r.status);
      // BUDGET_S=14: no part fits (the smallest, cohort probe, needs ~15 s), so none runs, and each says why.
      expect(r.stdout).toMatch(/^rung fp32: skipped: time budget \(-?\d+ s left of BUDGET_S=14, the rung needs ~40 s\)$/m);
      expect(gpu.calls().filter((c) => /torch_engine|reference/.test(c[0]!))).toEqual([]);
      const md = readFileSync(join(out, 'gpu-nvidia-h100-80gb-hbm3.md'), 'utf8');
      expect(md).toMatch(/^\| all \| `--fp16 --extras --compile` \| skipped: time budget \(-?\d+ s left, ~115 s needed\) \|/m);
      expect(md).toMatch(/- SKIP all: engine ran: skipped: time budget/);
      expect(readFileSync(join(out, 'cli-auto.skipped'), 'utf8')).toMatch(/^skipped: time budget \(-?\d+ s left, ~40 s needed\)/);
      expect(readFileSync(join(out, 'probe.skipped'), 'utf8')).toMatch(/^skipped: time budget \(-?\d+ s left, ~15 s needed\)/);
      // A part the budget skipped is a SKIP that says why, never a FAIL (the probe's check read a missing probe.txt as a FAIL before).
      expect(md).toMatch(/^- SKIP cohort probe shows the compute capability: skipped: time budget/m);
    });
  }, 90_000);

  it('ONLY runs the parts named (a second call for what the first one skipped), and refuses a name it does not know', () => {
    onStandIn('only', ({ dir, out, gpu, acceptance }) => {
      const bad = acceptance({ ONLY: 'compile,warp' }, 30_000);
      expect(bad.status).toBe(2);
      expect(bad.stdout).toBe("gpu-acceptance: ONLY names 'warp', which is not a part; the parts: fp32 channels-last fp16 bf16 compile all cli-auto check bf16-cli probe tfjs\n");
      expect(existsSync(join(dir, 'calls'))).toBe(false); // refused before the stand-in python was asked anything

      const r = acceptance({ ONLY: 'compile, probe' });
      expect([0, 1], r.stdout + r.stderr).toContain(r.status);
      const ladder = gpu.calls().filter((c) => /torch_engine|reference/.test(c[0]!));
      expect(ladder.map((c) => [c[0]!.split('/').pop(), c[1]])).toEqual([['torch_engine.py', '0'], ['reference.py', '']]);
      expect(ladder[0]![2]).toMatch(/ --compile$/);
      expect(r.stdout).toMatch(/^rung fp32: skipped: not in ONLY="compile probe"$/m);
      expect(r.stdout).toMatch(/^cli-auto: skipped: not in ONLY="compile probe"$/m);
      expect(r.stdout).toMatch(/^cohort probe local \[/m); // the probe ran (through the CLI, on the stand-in)
      const md = readFileSync(join(out, 'gpu-nvidia-h100-80gb-hbm3.md'), 'utf8');
      expect(md).toMatch(/^\| all \| `--fp16 --extras --compile` \| skipped: not in ONLY="compile probe" \|/m);
      expect(md).toMatch(/^- SKIP fp32: engine ran: skipped: not in ONLY="compile probe"$/m);
      expect(md).toMatch(/^- SKIP cohort check local finds nothing wrong: skipped: not in ONLY="compile probe"$/m);
      expect(md).toMatch(/^- SKIP tfjs engine: skipped: not in ONLY="compile probe"$/m);
      expect(md).not.toMatch(/^- SKIP compile: engine ran/m);
    });
  }, 90_000);
});
