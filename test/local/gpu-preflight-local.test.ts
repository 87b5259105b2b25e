// The agent's pre-launch GPU check through the real CLI, a real durable local run and the real agent:
// `--engine torch --bf16` on a host whose GPU is compute capability 7.0 is refused before any rank
// starts, naming the host and the GPU; tfjs ranks on a host with two GPUs get one each, and the run's
// record says so (the agent's `env` event: the GPU variables each rank had). No GPU exists here, so two executables stand in for what
// the host would have, and only at the thinnest boundary:
// - a fake `nvidia-smi` on PATH prints what the real one prints on a V100 host, in NVIDIA's
//   documented `--format=csv,noheader,nounits` and `-L` formats (one branch per query the agent makes);
// - a fake CUDA Python (COHORT_PYTHON) answers the agent's torch question as a CUDA torch would, and
//   records every call, so the test sees that it was never asked to train.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import type { EnvEvent, ErrorEvent, LogEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const root = mkdtempSync(join(tmpdir(), 'cohort-bf16-'));
const data = tempDataDir();
afterAll(() => [root, data].forEach((d) => rmSync(d, { recursive: true, force: true })));

const V100 = 'GPU-1b2c3d4e-0000-1111-2222-333344445555';
const V100_2 = 'GPU-2c3d4e5f-0000-1111-2222-333344445555';
function tool(name: string, body: string): string {
  const p = join(root, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
}
tool(
  'nvidia-smi',
  `case "$*" in
  *--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total*) echo "0, ${V100}, Tesla V100-SXM2-16GB, 00000000:3B:00.0, 310, 16384, 0"; if [ -n "$SECOND_GPU" ]; then echo "1, ${V100_2}, Tesla V100-SXM2-16GB, 00000000:86:00.0, 310, 16384, 0"; fi;;
  *--query-gpu=uuid,compute_cap*) echo "${V100}, 7.0"; if [ -n "$SECOND_GPU" ]; then echo "${V100_2}, 7.0"; fi;;
  -L) echo "GPU 0: Tesla V100-SXM2-16GB (UUID: ${V100})"; if [ -n "$SECOND_GPU" ]; then echo "GPU 1: Tesla V100-SXM2-16GB (UUID: ${V100_2})"; fi;;
  *) exit 2;;
esac`,
);
const calls = join(root, 'python-calls');
const python = tool('python', `case "$*" in *torch_engine.py*) echo "ENGINE $*" >> ${calls};; *) echo "CALL $1" >> ${calls};; esac\necho '{"version": "3.11.2", "torch": "2.3.1+cu121", "cuda": true, "cudaVersion": "12.1", "gpus": 1}'`);

describe('agent pre-launch GPU check (local run)', () => {
  it('refuses --engine torch --bf16 on a compute capability 7.0 GPU before starting a rank, naming host and GPU', async () => {
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), PATH: `${root}:${process.env.PATH}`, COHORT_PYTHON: python };
    const r = runCli(['run', '--local', '--engine', 'torch', '--bf16', '--steps', '2', '--json'], { env, json: true });
    const exit = await r.exit;
    expect(exit.code, r.stderr).not.toBe(0);
    const err = r.events.find((e): e is ErrorEvent => e.type === 'error');
    expect(err, r.stdout + r.stderr).toBeDefined();
    expect(err!.code).toBe('bf16-unsupported');
    expect(err!.message).toMatch(/^--bf16: rank 0 on \S+ would run on GPU 0 \(Tesla V100-SXM2-16GB, GPU-1b2c3d4e-0000-1111-2222-333344445555\), compute capability 7\.0; bf16 needs compute capability ≥ 8\.0/);
    expect(err!.hint).toMatch(/--fp16/);
    expect(r.events.some((e) => e.type === 'hello')).toBe(false);
    // The Python was asked which torch it has, never to run the engine.
    const asked = readFileSync(calls, 'utf8').trim().split('\n');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((a) => a !== 'CALL -c')).toEqual([]);
  }, 120_000);

  it('--require-gpu refuses to start a run that would train on the CPU: tfjs (wasm here) and torch (a CPU torch), each saying why', async () => {
    // No fake nvidia-smi and Debian's CPU torch: this machine as it is.
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), COHORT_PYTHON: '/usr/bin/python3' };
    const tiny = tinyRun({ width: null, steps: 2 });
    const [tfjs, torch] = [runCli(['run', '--local', '--engine', 'tfjs', '--require-gpu', ...tiny, '--json'], { env, json: true }), runCli(['run', '--local', '--engine', 'torch', '--require-gpu', ...tiny, '--json'], { env, json: true })];
    for (const [r, message] of [
      [tfjs, /^--require-gpu: this rank would run on the CPU \(backend (wasm|cpu) on .*\)\. Install @tensorflow\/tfjs-node-gpu/],
      [torch, /^--require-gpu: \S+'s torch has no CUDA \(--engine torch .*\/usr\/bin\/python3 \(torch [\d.a-z]+, CPU only\)/],
    ] as const) {
      expect((await r.exit).code, r.stdout + r.stderr).not.toBe(0);
      const err = r.events.find((e): e is ErrorEvent => e.type === 'error');
      expect(err, r.stdout + r.stderr).toMatchObject({ code: 'gpu-required' });
      expect(err!.message).toMatch(message);
      expect(r.events.some((e) => e.type === 'step'), 'no step trained').toBe(false);
    }
    // torch: refused by the agent before any rank started.
    expect(torch.events.some((e) => e.type === 'hello')).toBe(false);
  }, 180_000);

  it('gives each tfjs rank its own GPU (one visible device, memory growth, PCI order) in a durable run', async () => {
    const envOf = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), PATH: `${root}:${process.env.PATH}`, SECOND_GPU: '1' };
    const tiny = tinyRun({ width: null });
    const r = runCli(['run', '--local', '--engine', 'tfjs', '--ranks', '2', '--steps', '2', ...tiny, '--json'], { env: envOf, json: true });
    expect((await r.exit).code, r.stderr).toBe(0);
    const gpus = r.events.find((e): e is LogEvent => e.type === 'log' && e.message.includes('GPUs:'));
    expect(gpus?.message).toMatch(/GPUs: tfjs: one visible GPU per rank \(rank 0→0, rank 1→1; of the host's 2\), memory growth on$/);
    // What ran, as the agent started the ranks (issue 13 item 10): the GPU variables it set per rank are
    // environment switches the client could not know; History, compare and CSV read them from the record.
    const env = r.events.find((e): e is EnvEvent => e.type === 'env');
    expect(env?.ranks.map((x) => x.switches.CUDA_VISIBLE_DEVICES)).toEqual(['0', '1']);
    const list = runCli(['runs', 'list', '--json'], { env: envOf });
    expect((await list.exit).code, list.stderr).toBe(0);
    const ran = (JSON.parse(list.stdout) as RunMeta[]).find((m) => m.status === 'ok'); // this file's only run that trains
    expect(ran?.applied, list.stdout).toMatchObject({ envFromHosts: true, envSwitches: { CUDA_VISIBLE_DEVICES: '0 | 1', CUDA_DEVICE_ORDER: 'PCI_BUS_ID', TF_FORCE_GPU_ALLOW_GROWTH: 'true' } });
    // No thread count of the agent's own (it was cores ÷ this host's ranks, meaningless to tfjs's one-thread
    // wasm): the torch engine takes its share itself, per machine (hello's device says how many).
    expect(ran!.applied!.envSwitches!.COHORT_THREADS).toBeUndefined();
  }, 180_000);
});
