// nvidia-smi answers are fixtures in its documented `--format=csv,noheader,nounits` output (no GPU here).
import { describe, expect, it } from 'vitest';
import { parseGpuRows, withComputeCaps } from '../util/nvidia-smi';
import { gpuPreflight, type PreflightInput } from './gpu-preflight';

// A host with a V100 (7.0) in the lower PCI slot and an A100 (8.0) in the higher one.
const MIXED = withComputeCaps(
  parseGpuRows(`0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla V100-SXM2-16GB, 00000000:3B:00.0, 310, 16384
1, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA A100-SXM4-40GB, 00000000:AF:00.0, 4, 40960
`),
  'GPU-1b2c3d4e-0000-1111-2222-333344445555, 7.0\nGPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, 8.0\n',
);
const cudaTorch = { name: 'torch' as const, cuda: true, reason: 'auto: torch with CUDA' };
const base = (over: Partial<PreflightInput>): PreflightInput => ({
  host: 'gpu1',
  engine: cudaTorch,
  config: { bf16: true, requireGpu: false },
  ranks: [{ rank: 0, localRank: 0 }],
  smi: { gpus: MIXED, migs: [] },
  inherited: {},
  ...over,
});

describe('gpuPreflight (before any rank starts)', () => {
  it('refuses --bf16 on torch when a rank’s GPU is below compute capability 8.0, naming host, rank and GPU', () => {
    const r = gpuPreflight(base({ ranks: [{ rank: 0, localRank: 0 }, { rank: 1, localRank: 1 }] }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.code).toBe('bf16-unsupported');
    expect(r.message).toBe(
      '--bf16: rank 0 on gpu1 would run on GPU 0 (Tesla V100-SXM2-16GB, GPU-1b2c3d4e-0000-1111-2222-333344445555), compute capability 7.0; bf16 needs compute capability ≥ 8.0 (Ampere or newer) to run natively (older GPUs emulate it and have no bf16 convolutions)',
    );
    expect(r.hint).toMatch(/--fp16/);
  });

  it('allows --bf16 when every rank’s GPU is ≥ 8.0 (pinned to the A100, or LOCAL_RANK 1 of the host’s GPUs)', () => {
    expect(gpuPreflight(base({ ranks: [{ rank: 0, localRank: 0, gpu: 1 }] })).ok).toBe(true);
    expect(gpuPreflight(base({ ranks: [{ rank: 3, localRank: 1 }] })).ok).toBe(true);
    expect(gpuPreflight(base({ inherited: { CUDA_VISIBLE_DEVICES: 'GPU-9f8e7d6c' } })).ok).toBe(true);
  });

  it('refuses --bf16 on a torch without CUDA (the engine would not apply it on the CPU either)', () => {
    const r = gpuPreflight(base({ engine: { name: 'torch', cuda: false, reason: '/usr/bin/python3 (torch 1.13, CPU only)' } }));
    expect(r).toMatchObject({ ok: false, code: 'bf16-unsupported' });
    expect(!r.ok && r.message).toMatch(/gpu1's ranks would run on the CPU .*torch 1\.13, CPU only.*compute capability ≥ 8\.0/);
  });

  it('leaves the decision to the engine, and says so, when the driver does not report compute_cap', () => {
    const old = parseGpuRows('0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla V100-SXM2-16GB, 00000000:3B:00.0, 310, 16384\n');
    const r = gpuPreflight(base({ smi: { gpus: old, migs: [] } }));
    expect(r.ok).toBe(true);
    expect(r.ok && r.notes.join('\n')).toMatch(/--bf16 not checked before launch for rank 0 on GPU 0 \(Tesla V100.*\): nvidia-smi does not report compute_cap/);
  });

  it('does not touch tfjs (no bf16 tensors: the engine reports it unavailable) and still assigns one GPU per tfjs rank', () => {
    const r = gpuPreflight(base({ engine: { name: 'tfjs', reason: '--engine tfjs' }, ranks: [{ rank: 0, localRank: 0 }, { rank: 1, localRank: 1 }] }));
    expect(r.ok && r.env.map((e) => e.CUDA_VISIBLE_DEVICES)).toEqual(['0', '1']);
  });

  it('--require-gpu refuses a torch without CUDA; a host without nvidia-smi gets no GPU environment', () => {
    const r = gpuPreflight(base({ engine: { name: 'torch', cuda: false, reason: 'CPU torch' }, config: { bf16: false, requireGpu: true } }));
    expect(r).toMatchObject({ ok: false, code: 'gpu-required' });
    const none = gpuPreflight(base({ config: { bf16: false, requireGpu: false }, smi: undefined }));
    expect(none).toEqual({ ok: true, env: [{}], notes: ['GPUs: no GPU on this host (nvidia-smi lists none): ranks run on the CPU'] });
  });
});
