// The torch engine's per-rank GPU identity and memory (cohort_torch/gpu.py, metrics.py), checked as far
// as a CPU-only PyTorch allows:
// - gpu.py's nvidia-smi parsing and device identification, fed nvidia-smi's documented output formats
//   (`--format=csv,noheader,nounits`, `-L` with MIG instances), and compared with the TypeScript
//   resolver (trainer/util/nvidia-smi.ts) on the same fixtures;
// - a CUDA-shaped step.memory built by the engine's own memory_entries, decoded by the protocol's decoder;
// - a real one-rank run on the CPU: plan says what each rank really computes on; with a fake
//   `nvidia-smi` on PATH (the thinnest stand-in for a driver that lists a GPU this torch cannot
//   use) the rank is flagged as fallen back to the CPU, loudly, in plan and hello.
// What needs a GPU (torch.cuda memory counters, the device's own UUID, the peak reset) is verified by
// scripts/gpu-acceptance.sh on the first GPU machine.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { decodeEvent, type StepEvent } from '../../trainer/protocol';
import { parseGpuRows, parseMigList, resolveCudaDevice } from '../../trainer/util/nvidia-smi';
import { ENGINE_SCRIPT, EngineRank, PYTHON, freePort, ofType, torchUnavailableReason } from './engine-process';

const skipReason = torchUnavailableReason();
const live = new Set<EngineRank>();
const root = mkdtempSync(join(tmpdir(), 'cohort-torch-gpu-'));
afterEach(async () => {
  await Promise.all([...live].map((r) => r.dispose()));
  live.clear();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

// A mixed host (T4 in the lower PCI slot, A100 in the higher), and a MIG host.
const MIXED_Q = `0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla T4, 00000000:3B:00.0
1, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA A100-SXM4-40GB, 00000000:AF:00.0
`;
const MIG_L = `GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71)
  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0)
`;
const MIG_Q = `0, GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71, NVIDIA A100-SXM4-40GB, 00000000:07:00.0
1, GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0
`;
const APPS = `4242, 30000, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff
5151, 40000, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff
4242, 12, GPU-1b2c3d4e-0000-1111-2222-333344445555
4343, [N/A], GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71
`;

/** Runs Python with cohort_torch importable (the built copy) and returns its last stdout line as JSON. */
function py(code: string): unknown {
  const r = spawnSync(PYTHON, ['-c', code], { cwd: dirname(ENGINE_SCRIPT), encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`python failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

describe.skipIf(skipReason !== undefined)(`torch engine: per-rank GPU identity and memory${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('identifies the GPU the way the TypeScript resolver does (index in PCI order, UUID prefix, MIG), and torch’s own UUID wins', () => {
    const cases = [
      { q: MIXED_Q, l: '', visible: '1', ordinal: 0, pci: true },
      { q: MIXED_Q, l: '', visible: null, ordinal: 0, pci: true },
      { q: MIXED_Q, l: '', visible: 'GPU-9f8e', ordinal: 0, pci: false },
      { q: MIXED_Q, l: '', visible: '0', ordinal: 0, pci: false }, // ambiguous: mixed models, FASTEST_FIRST
      { q: MIG_Q, l: MIG_L, visible: 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f', ordinal: 0, pci: true },
      { q: MIG_Q, l: '', visible: 'MIG-GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0/1/0', ordinal: 0, pci: true }, // driver < 470 form
      { q: MIG_Q, l: '', visible: '2', ordinal: 0, pci: true },
    ];
    const got = py(`import json
from cohort_torch.gpu import parse_gpu_uuids, parse_mig_parents, resolve_visible, identify
cases = json.loads(${JSON.stringify(JSON.stringify(cases))})
out = []
for c in cases:
    rows = parse_gpu_uuids(c["q"])
    got, why = resolve_visible(c["visible"], c["ordinal"], rows, c["pci"], parse_mig_parents(c["l"]))
    out.append(got["uuid"] if got else None)
rows, migs = parse_gpu_uuids(${JSON.stringify(MIG_Q)}), parse_mig_parents(${JSON.stringify(MIG_L)})
out.append(identify("c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", rows, migs, "0", 0, True))
out.append(identify("0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0", rows, migs, "0", 0, True))
out.append(identify("0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0", [], {}, "0", 0, True))
print(json.dumps(out))`) as unknown[];
    const ts = cases.map((c) => {
      const r = resolveCudaDevice({ ...(c.visible === null ? {} : { CUDA_VISIBLE_DEVICES: c.visible }), ...(c.pci ? { CUDA_DEVICE_ORDER: 'PCI_BUS_ID' } : {}) }, c.ordinal, parseGpuRows(c.q.replace(/\n(?=.)|\n$/g, ', 1, 2\n')), parseMigList(c.l));
      return r.ok ? (r.device.mig?.uuid ?? r.device.gpu.uuid) : null;
    });
    expect(got.slice(0, cases.length)).toEqual(ts);
    expect(ts).toEqual(['GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff', 'GPU-1b2c3d4e-0000-1111-2222-333344445555', 'GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff', null, 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f', 'MIG-GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0/1/0', null]);
    // torch's UUID beats CUDA_VISIBLE_DEVICES=0: a MIG instance is named by its own UUID with its parent's index; a GPU by its row.
    expect(got[cases.length]).toEqual({ uuid: 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f', index: 0, name: 'NVIDIA A100-SXM4-40GB', how: 'torch device UUID (MIG)', parentUuid: 'GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71' });
    expect(got[cases.length + 1]).toMatchObject({ uuid: 'GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0', index: 1, how: 'torch device UUID' });
    // no nvidia-smi: CUDA's UUID still names the GPU; no index is made up
    expect(got[cases.length + 2]).toEqual({ uuid: 'GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0', index: null, name: '', how: 'torch device UUID (nvidia-smi not available)' });
  });

  it('LOCAL_RANK picks the GPU with every GPU of the host visible (the seeds’ mapping), NCCL on CUDA; more ranks than GPUs share round-robin', () => {
    // torch.cuda stood in for a 4-GPU host (no GPU here): the engine's own choose_device/cuda_index decide.
    const out = py(`import json, torch
from cohort_torch import distributed as d
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 4
picked = []
torch.cuda.set_device = lambda dev: picked.append(str(dev))
torch.cuda.get_device_name = lambda dev: "NVIDIA A100-SXM4-80GB"
chosen = [[str(x) for x in d.choose_device(lr)] for lr in range(4)]
from cohort_torch.events import emit  # fd 1 is stderr once the engine's modules load: emit writes to the real stdout
emit("result", chosen=chosen, picked=picked, shared=d.cuda_index(5, 4))`) as { chosen: string[][]; picked: string[]; shared: number };
    expect(out.chosen).toEqual([0, 1, 2, 3].map((i) => [`cuda:${i}`, 'nccl', `CUDA device ${i} (NVIDIA A100-SXM4-80GB)`]));
    expect(out.picked).toEqual(['cuda:0', 'cuda:1', 'cuda:2', 'cuda:3']);
    expect(out.shared).toBe(1);
  });

  it('counts only this process’s bytes on its own GPU, and its GPU’s utilisation; [N/A] (MIG) is unknown, not 0', () => {
    const got = py(`import json
from cohort_torch.gpu import process_bytes
apps = ${JSON.stringify(APPS)}
from cohort_torch.gpu import gpu_util
util = "GPU-1b2c3d4e-0000-1111-2222-333344445555, 12\\nGPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, 97\\nGPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71, [N/A]\\n"
print(json.dumps([process_bytes(apps, 4242, "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"), process_bytes(apps, 4343, "GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71"), process_bytes(apps, 9999, "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"), process_bytes(None, 4242, "GPU-x"),
                  gpu_util(util, "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"), gpu_util(util, "GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71"), gpu_util(None, "GPU-x")]))`);
    expect(got).toEqual([30000 * 2 ** 20, null, null, null, 97, null, null]);
  });

  it('a CUDA rank’s step.memory, as memory_entries builds it, passes the protocol decoder with every field', () => {
    const GiB = 2 ** 30;
    const entries = py(`import json
from cohort_torch.metrics import memory_entries
rows = [[0, 0, 0, 0, 900e6, 128 * 2**30, 3 * 2**30, 5 * 2**30, 6 * 2**30, 7 * 2**30, 9 * 2**30, 80 * 2**30, 87.0],
        [0, 0, 0, 0, 800e6, 64 * 2**30, 2 * 2**30, 4 * 2**30, 5 * 2**30, -1, -1, -1, -1]]
peers = [{"rank": 0, "host": "g1", "localRank": 0, "gpuUuid": "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"}, {"rank": 1, "host": "g2", "localRank": 0}]
print(json.dumps(memory_entries(rows, 4, peers)))`);
    const step = decodeEvent({ v: 1, type: 'step', time: 1, step: 10, epoch: 0, loss: 1, globalSamplesPerSec: 1, stepTimeMs: 1, worldSize: 2, lr: 0.1, memory: entries }) as StepEvent;
    expect(step.memory).toEqual([
      { rank: 0, host: 'g1', rssBytes: 900e6, hostTotalBytes: 128 * GiB, tensorBytes: 3 * GiB, peakTensorBytes: 5 * GiB, reservedBytes: 6 * GiB, gpuProcessBytes: 7 * GiB, gpuUsedBytes: 9 * GiB, gpuTotalBytes: 80 * GiB, gpuUtilPercent: 87, gpuUuid: 'GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff' },
      { rank: 1, host: 'g2', rssBytes: 800e6, hostTotalBytes: 64 * GiB, tensorBytes: 2 * GiB, peakTensorBytes: 4 * GiB, reservedBytes: 5 * GiB },
    ]);
  });

  it('a real CPU rank: plan names the device it computes on; a driver listing a GPU it cannot use makes it say so loudly', async () => {
    const bin = join(root, 'bin');
    spawnSync('mkdir', ['-p', bin]);
    writeFileSync(join(bin, 'nvidia-smi'), `#!/bin/sh\ncase "$*" in -L) echo "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff)";; *) exit 2;; esac\n`);
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    const port = await freePort();
    const r = new EngineRank({ rank: 0, worldSize: 1, port, config: { imageSize: 32, batchSize: 2, steps: 2, logSteps: 1, warmupSteps: 1 }, env: { COHORT_THREADS: '1', PATH: `${bin}:${process.env.PATH}` } });
    live.add(r);
    expect(await r.finished(240_000), r.stderr.slice(-2000)).toEqual({ code: 0, signal: null });
    expect(r.invalid).toEqual([]);
    const plan = r.events.find(ofType('plan'))!;
    expect(plan.ranks).toEqual([{ rank: 0, host: 'localhost', localRank: 0, device: 'cpu', gpuFellBack: true }]);
    const hello = r.events.find(ofType('hello'))!;
    expect(hello.capabilities.peakMemory).toMatchObject({ available: false });
    expect(hello.capabilities.peakMemory!.detail).toMatch(/CPU torch keeps no allocator statistics/);
    expect(hello.deviceWarning).toMatch(/rank\(s\) 0 on localhost run on the CPU although nvidia-smi lists GPUs there: .*no CUDA device/);
    const step = r.events.find(ofType('step'))!;
    expect(step.memory[0]).toMatchObject({ rank: 0, host: 'localhost' });
    expect(step.memory[0]!.tensorBytes).toBeGreaterThan(23_000_000 * 4); // parameters + gradients + optimizer state live across steps
    expect(step.memory[0]!.hostTotalBytes).toBeGreaterThan(2 ** 30);
    // The CPU keeps no allocator statistics: no peak, no GPU figures are claimed.
    expect(Object.keys(step.memory[0]!).sort()).toEqual(['host', 'hostTotalBytes', 'rank', 'rssBytes', 'tensorBytes']);
  });
});
