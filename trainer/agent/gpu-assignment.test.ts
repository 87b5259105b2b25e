import { describe, expect, it } from 'vitest';
import { assignGpus } from './gpu-assignment';

const four = [0, 1, 2, 3].map((i) => ({ rank: 4 + i, localRank: i }));

describe('assignGpus: the environment each rank gets', () => {
  it('tfjs on a host with 4 GPUs: one visible device per rank, memory growth, PCI order', () => {
    const a = assignGpus({ engine: 'tfjs', ranks: four, hostGpus: 4, inherited: {} });
    expect(a.env).toEqual([0, 1, 2, 3].map((g) => ({ CUDA_VISIBLE_DEVICES: String(g), TF_FORCE_GPU_ALLOW_GROWTH: 'true', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' })));
    expect(a.explanation).toMatch(/rank 4→0, rank 5→1, rank 6→2, rank 7→3/);
  });

  it('torch on a host with 4 GPUs: every GPU stays visible (LOCAL_RANK picks one)', () => {
    const a = assignGpus({ engine: 'torch', ranks: four, hostGpus: 4, inherited: {} });
    expect(a.env).toEqual(four.map(() => ({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID' })));
    expect(a.explanation).toMatch(/cuda:LOCAL_RANK/);
  });

  it('a host with no GPU: nothing is set, for either engine', () => {
    for (const engine of ['tfjs', 'torch'] as const) {
      const a = assignGpus({ engine, ranks: four, hostGpus: 0, inherited: {} });
      expect(a.env).toEqual([{}, {}, {}, {}]);
      expect(a.explanation).toMatch(/no GPU/);
    }
  });

  it('profile-pinned GPUs: tfjs ranks get their own; torch ranks see the pinned list', () => {
    const pinned = [{ rank: 0, localRank: 0, gpu: 3 }, { rank: 1, localRank: 1, gpu: 1 }];
    expect(assignGpus({ engine: 'tfjs', ranks: pinned, hostGpus: 4, inherited: {} }).env.map((e) => e.CUDA_VISIBLE_DEVICES)).toEqual(['3', '1']);
    expect(assignGpus({ engine: 'torch', ranks: pinned, hostGpus: 4, inherited: {} }).env.map((e) => e.CUDA_VISIBLE_DEVICES)).toEqual(['3,1', '3,1']);
  });

  it("tfjs picks from an inherited CUDA_VISIBLE_DEVICES (UUIDs too), keeps the user's order and growth settings, and says when ranks share", () => {
    const a = assignGpus({ engine: 'tfjs', ranks: four.slice(0, 3), hostGpus: 4, inherited: { CUDA_VISIBLE_DEVICES: 'GPU-aaaa,GPU-bbbb', CUDA_DEVICE_ORDER: 'FASTEST_FIRST', TF_FORCE_GPU_ALLOW_GROWTH: 'false' } });
    expect(a.env).toEqual([{ CUDA_VISIBLE_DEVICES: 'GPU-aaaa' }, { CUDA_VISIBLE_DEVICES: 'GPU-bbbb' }, { CUDA_VISIBLE_DEVICES: 'GPU-aaaa' }]);
    expect(a.explanation).toMatch(/3 ranks share 2 GPU\(s\)/);
  });
});
