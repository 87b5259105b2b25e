import { describe, expect, it } from 'vitest';
import { decodeProfile, type HostProbe } from '../../../electron/common';
import { capabilityRows, previewWorld } from './world';

const hpc = (gpusPerNode?: number, lastProbe?: HostProbe[]) =>
  decodeProfile({ name: 'hpc', scheduler: { kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 3, ...(gpusPerNode ? { gpusPerNode } : {}) }, hosts: [{ name: 'login', address: 'login.example.org' }], ...(lastProbe ? { lastProbe } : {}) });

const probe = (gres: string): HostProbe => ({
  host: 'login',
  ok: true,
  probedAt: '2026-11-23T00:00:00Z',
  gpus: [],
  tfjsNodeGpu: false,
  tfjsNode: false,
  slurm: { version: 'slurm 22.05.8', partitions: [{ name: 'gpu', isDefault: false, avail: 'up', nodes: 4, idleNodes: 4, timeLimit: '1-00:00:00', gres }], nodes: [], workdirShared: 'yes' },
});

describe('Launch world preview for a Slurm profile', () => {
  it('is nodes × tasksPerNode ranks, node by node, not the login host', () => {
    const w = previewWorld(hpc(), 1);
    expect(w.map((h) => h.name)).toEqual(['node 1', 'node 2']);
    expect(w.map((h) => h.ranks)).toEqual([[0, 1, 2], [3, 4, 5]]);
    expect(w[0]!.gpus).toBeUndefined();
    expect(previewWorld(hpc(3), 1)[1]!.gpus).toEqual([0, 1, 2]);
  });

  it('judges GPUs by the partition\'s gres from the login node\'s probe, not the login node\'s own GPUs', () => {
    const gpuRow = (p: ReturnType<typeof hpc>) => capabilityRows(p, {}).find((r) => r.what.startsWith('GPUs in partition gpu'))?.perHost[0];
    expect(gpuRow(hpc(2, [probe('gpu:a100:4')]))).toMatchObject({ state: 'yes', detail: 'gres gpu:a100:4' });
    expect(gpuRow(hpc(2, [probe('')]))).toMatchObject({ state: 'no' });
    expect(gpuRow(hpc(2))).toMatchObject({ state: 'unknown' });
    expect(capabilityRows(hpc(2, [probe('')]), {}).some((r) => r.what === 'GPU')).toBe(false);
  });
});
