// Fixtures are written in nvidia-smi's documented output formats (`--format=csv,noheader,nounits`
// for the queries, `-L` for the device list with MIG instances); no GPU exists on the machines
// these tests were written on.
import { describe, expect, it } from 'vitest';
import { describeGpu, parseComputeApps, parseGpuRows, parseMigList, processGpuBytes, resolveCudaDevice } from './nvidia-smi';
import { MemorySampler, type GpuReader } from '../train/memory';

const MIB = 2 ** 20;
// A mixed host: an A100 in the slot with the higher PCI bus id is index 1 for nvidia-smi, but CUDA's
// default FASTEST_FIRST order would call it device 0.
const MIXED = `0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla T4, 00000000:3B:00.0, 1510, 15360
1, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA A100-SXM4-40GB, 00000000:AF:00.0, 30210, 40960
`;
const FOUR_A100 = [0, 1, 2, 3].map((i) => `${i}, GPU-a100000${i}-1234-5678-9abc-def012345678, NVIDIA A100-SXM4-80GB, 00000000:${(0x07 + i * 0x10).toString(16).toUpperCase().padStart(2, '0')}:00.0, ${i === 2 ? 70000 : 4}, 81920`).join('\n');
const APPS = `4242, 30000, GPU-a1000002-1234-5678-9abc-def012345678
5151, 40000, GPU-a1000002-1234-5678-9abc-def012345678
4242, 12, GPU-a1000000-1234-5678-9abc-def012345678
`;
const MIG_L = `GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71)
  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
  MIG 1g.5gb      Device  1: (UUID: MIG-0e2ab9f1-8c4d-5e6f-a7b8-c9d0e1f2a3b4)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0)
`;
const MIG_CSV = `0, GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, [N/A], 40960
1, GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0, 0, 40960
`;

describe('nvidia-smi parsing', () => {
  it('reads --query-gpu rows, MiB to bytes, [N/A] as unknown (not 0)', () => {
    const rows = parseGpuRows(MIG_CSV);
    expect(rows.map((r) => [r.index, r.uuid.slice(0, 12), r.pciBusId, r.totalBytes])).toEqual([
      [0, 'GPU-e91edf3b', '00000000:07:00.0', 40960 * MIB],
      [1, 'GPU-0d1f2e3c', '00000000:0F:00.0', 40960 * MIB],
    ]);
    expect(rows[0]!.usedBytes).toBeNaN();
  });

  it('reads MIG instances from -L with their parent GPU', () => {
    expect(parseMigList(MIG_L)).toEqual([
      { uuid: 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f', parentUuid: 'GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71', name: 'MIG 3g.20gb Device 0' },
      { uuid: 'MIG-0e2ab9f1-8c4d-5e6f-a7b8-c9d0e1f2a3b4', parentUuid: 'GPU-e91edf3b-b297-37c1-a2a7-7601c98a3f71', name: 'MIG 1g.5gb Device 1' },
    ]);
  });
});

describe('resolveCudaDevice', () => {
  const four = parseGpuRows(FOUR_A100);
  it('maps an index through CUDA_VISIBLE_DEVICES (one visible device per rank)', () => {
    const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '2', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 0, four);
    expect(r.ok && r.device.gpu.uuid).toBe('GPU-a1000002-1234-5678-9abc-def012345678');
    // torch ranks see every GPU and use LOCAL_RANK as the ordinal
    const t = resolveCudaDevice({ CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 3, four);
    expect(t.ok && t.device.gpu.index).toBe(3);
  });

  it('follows PCI bus order, not nvidia-smi row order, and refuses to guess on a mixed host without PCI_BUS_ID', () => {
    const shuffled = parseGpuRows(MIXED.split('\n').reverse().join('\n'));
    const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '1', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 0, shuffled);
    expect(r.ok && r.device.gpu.name).toBe('NVIDIA A100-SXM4-40GB');
    const ambiguous = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '0' }, 0, shuffled);
    expect(ambiguous.ok).toBe(false);
    expect(!ambiguous.ok && ambiguous.reason).toMatch(/CUDA_DEVICE_ORDER=PCI_BUS_ID/);
    // identical models: both orders agree, so the default order is fine
    expect(resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '1' }, 0, four).ok).toBe(true);
  });

  it('resolves GPU UUIDs (full or a unique prefix), never falling back to GPU 0', () => {
    const full = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'GPU-a1000003-1234-5678-9abc-def012345678' }, 0, four);
    expect(full.ok && full.device.gpu.index).toBe(3);
    const prefix = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'GPU-a1000001' }, 0, four);
    expect(prefix.ok && prefix.device.gpu.index).toBe(1);
    const ambiguous = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'GPU-a1' }, 0, four);
    expect(!ambiguous.ok && ambiguous.reason).toMatch(/matches 4 GPUs/);
    const none = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'GPU-ffff' }, 0, four);
    expect(none.ok).toBe(false);
  });

  it('resolves MIG ids (current and legacy forms) to the instance on its parent GPU', () => {
    const gpus = parseGpuRows(MIG_CSV);
    const migs = parseMigList(MIG_L);
    const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'MIG-0e2ab9f1-8c4d-5e6f-a7b8-c9d0e1f2a3b4' }, 0, gpus, migs);
    expect(r.ok && describeGpu(r.device)).toBe('NVIDIA A100-SXM4-40GB MIG 1g.5gb Device 1 (GPU 0, MIG-0e2ab9f1-8c4d-5e6f-a7b8-c9d0e1f2a3b4)');
    const legacy = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'MIG-GPU-0d1f2e3c-4b5a-6978-8796-a5b4c3d2e1f0/1/0' }, 0, gpus, migs);
    expect(legacy.ok && legacy.device.gpu.index).toBe(1);
    expect(resolveCudaDevice({ CUDA_VISIBLE_DEVICES: 'MIG-deadbeef' }, 0, gpus, migs).ok).toBe(false);
  });

  it('says so when no device is visible', () => {
    expect(resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '' }, 0, four).ok).toBe(false);
    expect(resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '-1' }, 0, four).ok).toBe(false);
    expect(resolveCudaDevice({}, 0, []).ok).toBe(false);
  });

  it("takes the rank's own process bytes on its own GPU, not the device's used memory", () => {
    const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '2', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 0, four);
    if (!r.ok) throw new Error(r.reason);
    const apps = parseComputeApps(APPS);
    expect(processGpuBytes(apps, 4242, r.device)).toBe(30000 * MIB); // not 70000 (the device), not 30012 (other GPU)
    expect(processGpuBytes(apps, 9999, r.device)).toBeUndefined();
  });
});

describe('MemorySampler', () => {
  it('reports process bytes next to the device total, and resets its peak after warm-up', async () => {
    const four = parseGpuRows(FOUR_A100);
    let tensor = 500;
    const reader: GpuReader = () => {
      const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: '2', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 0, four);
      return Promise.resolve(r.ok ? { device: r.device, processBytes: processGpuBytes(parseComputeApps(APPS), 4242, r.device)! } : { note: r.reason });
    };
    const s = new MemorySampler(0, 'h', () => tensor, reader);
    await s.settle();
    const a = s.sample();
    expect(a).toMatchObject({ gpuProcessBytes: 30000 * MIB, gpuUsedBytes: 70000 * MIB, gpuTotalBytes: 81920 * MIB, gpuUuid: 'GPU-a1000002-1234-5678-9abc-def012345678', peakTensorBytes: 500 });
    tensor = 100;
    s.resetPeak();
    expect(s.sample().peakTensorBytes).toBe(100);
    s.dispose();
  });
});

describe('GPU utilisation', () => {
  // --query-gpu with utilization.gpu last; a MIG-enabled GPU (and some vGPUs) says [N/A].
  const ROWS = `0, GPU-a1000000-1234-5678-9abc-def012345678, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 4000, 81920, 87
1, GPU-a1000001-1234-5678-9abc-def012345678, NVIDIA A100-SXM4-80GB, 00000000:17:00.0, 4000, 81920, [N/A]
`;
  it('reads utilization.gpu when reported and leaves it out when it is not (never a made-up 0)', () => {
    const rows = parseGpuRows(ROWS);
    expect(rows.map((r) => r.utilPercent)).toEqual([87, undefined]);
    expect(parseGpuRows(MIXED).every((r) => r.utilPercent === undefined)).toBe(true);
  });

  it('travels in the rank memory of a step, for the GPU the rank uses', async () => {
    const gpus = parseGpuRows(ROWS);
    const on = (ordinal: string): GpuReader => () => {
      const r = resolveCudaDevice({ CUDA_VISIBLE_DEVICES: ordinal, CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 0, gpus);
      return Promise.resolve(r.ok ? { device: r.device } : { note: r.reason });
    };
    const busy = new MemorySampler(0, 'h', () => 0, on('0'));
    const unknown = new MemorySampler(1, 'h', () => 0, on('1'));
    await Promise.all([busy.settle(), unknown.settle()]);
    expect(busy.sample().gpuUtilPercent).toBe(87);
    expect('gpuUtilPercent' in unknown.sample()).toBe(false);
    expect('gpuUtilPercent' in new MemorySampler(2, 'h', () => 0, undefined).sample()).toBe(false);
    busy.dispose();
    unknown.dispose();
  });
});
