// scripts/gpu-acceptance.sh on machines without an NVIDIA GPU: one line, exit 77 ("skipped"). The
// PATH is built here so the answer does not depend on this machine: no nvidia-smi at all, then a
// fake nvidia-smi answering as the real one does on a host whose driver sees no GPU.
// Then the whole script on a stand-in 1-GPU machine, to check what it runs (no GPU exists here):
// nvidia-smi answers as on an H100 host, and PYTHON is a stand-in that records how the torch engine
// and the plain script were called and answers for them; report.py and checks.py run on the real
// Python over what it wrote. The figures are the stand-in's, not measurements.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

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

describe('gpu-acceptance.sh on a (stand-in) 1-GPU machine', () => {
  it("runs the seeds' ladder on the engine and on the plain script (the same step per rung), after a preflight, and writes the table", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-gpu-acc-run-'));
    try {
      const uuid = 'GPU-4a3b2c1d-1111-2222-3333-444455556666';
      const tool = (name: string, body: string) => {
        writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
        chmodSync(join(dir, name), 0o755);
      };
      tool(
        'nvidia-smi',
        `case "$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: ${uuid})";;
  *--query-gpu=name,memory.total,driver_version,compute_cap*) echo "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15, 9.0";;
  *--query-gpu=index,uuid,name,compute_cap*) echo "0, ${uuid}, NVIDIA H100 80GB HBM3, 9.0";;
  *--query-gpu=name*) echo "NVIDIA H100 80GB HBM3";;
  "") echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |";;
  *) exit 2;;
esac`,
      );
      const calls = join(dir, 'calls');
      const hello = JSON.stringify({ v: 1, time: 1, type: 'hello', engine: 'torch', backend: 'cuda', device: `cuda:0 NVIDIA H100 80GB HBM3 (GPU 0, ${uuid})`, worldSize: 1, params: 25557032, host: 'g', capabilities: {}, versions: {} });
      tool(
        'python',
        `echo "$1|$COHORT_TORCH_EXTRAS|$*" >> ${calls}
case "$1" in
  -c) case "$2" in *print*) echo "torch 2.3.1+cu121 torchvision 0.18.1 cuda 12.1 cudnn 8902 available True";; esac; exit 0;;
  *torch_engine.py) echo '${hello}';;
  *reference.py) echo '{"imgPerSec": 1000, "maxMemoryAllocated": 1}';;
  *) exec /usr/bin/python3 "$@";;
esac`,
      );
      const out = join(dir, 'out');
      const results = join(dir, 'results');
      const r = spawnSync('/bin/bash', [script], { encoding: 'utf8', env: { PATH: `${dir}:${process.env.PATH}`, HOME: dir, PYTHON: join(dir, 'python'), OUT: out, RESULTS_DIR: results, SKIP_CLI: '1' }, timeout: 60_000 });
      expect([0, 1], r.stdout + r.stderr).toContain(r.status); // 1: the stand-in's events fail most checks, as they should
      const lines = r.stdout.split('\n');
      expect(lines.slice(0, 5)).toEqual([
        'preflight: NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15, 9.0',
        'preflight: CUDA Version: 12.4',
        'preflight: torch 2.3.1+cu121 torchvision 0.18.1 cuda 12.1 cudnn 8902 available True',
        `preflight: node ${process.version}`,
        'preflight: SKIP_CLI=1: the cohort run / probe / tfjs parts are skipped (their checks say SKIP)',
      ]);
      const called = readFileSync(calls, 'utf8').trim().split('\n').map((l) => l.split('|'));
      const shape = '--image-size 224 --batch-size 64 --steps 60 --log-steps 10 --warmup-steps 5';
      // [COHORT_TORCH_EXTRAS, the engine's flags]: native, compile, fp16, fp16 + channels-last (extras), all; compile at warm-up 0; bf16
      expect(called.filter((c) => c[0]!.endsWith('torch_engine.py')).map((c) => [c[1], c[2]!.slice(c[0]!.length + 1)])).toEqual([
        ['0', shape],
        ['0', `${shape} --compile`],
        ['0', `${shape} --fp16`],
        ['1', `${shape} --fp16`],
        ['1', `${shape} --fp16 --compile`],
        ['0', '--image-size 224 --batch-size 64 --steps 30 --log-steps 10 --warmup-steps 0 --compile'],
        ['1', `${shape} --bf16`],
      ]);
      // The plain script, rung by rung: the same step (the extras rungs with --extras).
      expect(called.filter((c) => c[0]!.endsWith('reference.py')).map((c) => c[2]!.split(' --warmup-steps 5')[1]!.trim())).toEqual(['', '--compile', '--fp16', '--fp16 --extras', '--fp16 --extras --compile']);
      const table = join(results, 'gpu-nvidia-h100-80gb-hbm3.md');
      expect(existsSync(table)).toBe(true);
      const md = readFileSync(table, 'utf8');
      for (const rung of ['native', 'compile', 'fp16', 'fp16-channels-last', 'all']) expect(md).toMatch(new RegExp(`^\\| ${rung} \\| `, 'm'));
      expect(md).toMatch(/^# Checks \(GPU under test: NVIDIA H100 80GB HBM3 GPU-4a3b2c1d-1111-2222-3333-444455556666, index 0\)/m);
      expect(md).toMatch(/- PASS native: hello names it too/);
      expect(md).toMatch(/- SKIP tfjs engine: skipped: needs Node >= 20 .*and not SKIP_CLI=1/);
      expect(md).toMatch(/^\d+ passed, \d+ failed, \d+ skipped$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
