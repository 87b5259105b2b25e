import { describe, expect, it } from 'vitest';
import { visibleGpus } from './gpu-env';

const host4 = [0, 1, 2, 3].map((i) => ({ rank: 4 + i, localRank: i, gpu: [3, 2, 1, 0][i]! }));

describe('visibleGpus (CUDA_VISIBLE_DEVICES per rank)', () => {
  it('no gpus in the profile: nothing set, every rank sees the host GPUs (torch picks LOCAL_RANK)', () => {
    const ranks = [0, 1, 2, 3].map((i) => ({ rank: i, localRank: i }));
    for (const r of ranks) {
      expect(visibleGpus('torch', ranks, r)).toBeUndefined();
      expect(visibleGpus('tfjs', ranks, r)).toBeUndefined();
    }
  });

  it('pinned gpus on a 4-GPU host: a torch rank sees all pinned GPUs in local-rank order, so GPU LOCAL_RANK is its own', () => {
    for (const r of host4) {
      const visible = visibleGpus('torch', host4, r)!.split(',').map(Number);
      expect(visible).toEqual([3, 2, 1, 0]);
      expect(visible[r.localRank]).toBe(r.gpu);
    }
  });

  it('pinned gpus, tfjs: one visible GPU per rank (TensorFlow would take every GPU it sees)', () => {
    expect(host4.map((r) => visibleGpus('tfjs', host4, r))).toEqual(['3', '2', '1', '0']);
  });

  it('a host where only some ranks have a GPU: each torch rank sees its own alone', () => {
    const ranks = [{ rank: 0, localRank: 0, gpu: 5 }, { rank: 1, localRank: 1 }];
    expect(visibleGpus('torch', ranks, ranks[0]!)).toBe('5');
    expect(visibleGpus('torch', ranks, ranks[1]!)).toBeUndefined();
  });
});
