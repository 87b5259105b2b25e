// nvidia-smi's documented CSV answers (no GPU exists where this was written): the health fields
// parse into GpuHealth, unknown / [N/A] values are left out, Cohort's own processes are not foreign.
import { describe, expect, it } from 'vitest';
import { decodeThrottle, readGpuHealth } from './gpu-health';

const answers: Record<string, string> = {
  '--query-gpu=index,uuid,name,memory.total,memory.used,driver_version': '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 71000, 550.54.15\n1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 3, 550.54.15\n',
  '--query-gpu=index,compute_cap': '0, 9.0\n1, 9.0\n',
  '--query-gpu=index,ecc.errors.uncorrected.volatile.total': '0, 0\n1, 2\n',
  '--query-gpu=index,retired_pages.pending': '0, [N/A]\n1, [N/A]\n',
  '--query-gpu=index,remapped_rows.pending': '0, No\n1, Yes\n',
  '--query-gpu=index,remapped_rows.failure': '0, No\n1, No\n',
  '--query-gpu=index,clocks_throttle_reasons.active': '0, 0x0000000000000001\n1, 0x0000000000000044\n',
  '--query-gpu=index,persistence_mode': '0, Enabled\n1, Disabled\n',
  '--query-compute-apps=pid,used_memory,gpu_uuid,process_name': '4242, 70000, GPU-aaaa, python3\n77, 900, GPU-bbbb, node\n',
};

describe('gpu-health', () => {
  it('reads every field, per GPU', async () => {
    const smi = async (args: string[]) => answers[args[0]!];
    const r = await readGpuHealth(smi, (pid) => pid === 77);
    expect(r.state).toBe('ok');
    expect(r.gpus[0]).toMatchObject({ index: 0, name: 'NVIDIA H100 80GB HBM3', computeCap: '9.0', eccUncorrectedVolatile: 0, throttleReasons: [], persistenceMode: 'Enabled', foreign: [{ pid: 4242, name: 'python3', bytes: 70000 * 2 ** 20 }] });
    expect(r.gpus[0]!.retiredPagesPending).toBeUndefined();
    expect(r.gpus[1]).toMatchObject({ eccUncorrectedVolatile: 2, remappedRowsPending: true, remappedRowsFailure: false, throttleReasons: ['software power cap', 'hardware thermal slowdown'], persistenceMode: 'Disabled', foreign: [] });
  });

  it('a driver that fails the base query is "failed"; one that does not know a field just lacks it', async () => {
    expect((await readGpuHealth(async () => undefined, () => false)).state).toBe('failed');
    const r = await readGpuHealth(async (a) => (a[0]!.includes('ecc') ? undefined : answers[a[0]!]), () => false);
    expect(r.gpus[1]!.eccUncorrectedVolatile).toBeUndefined();
    expect(r.gpus[1]!.computeCap).toBe('9.0');
  });

  it('decodes throttle masks, idle left out', () => {
    expect(decodeThrottle('0x0000000000000001')).toEqual([]);
    expect(decodeThrottle('0x8')).toEqual(['hardware slowdown']);
    expect(decodeThrottle('[N/A]')).toEqual([]);
  });
});

describe('gpu-health: a driver that only knows the newer clocks_event_reasons name', () => {
  it('still reads the throttle mask', async () => {
    const smi = async (a: string[]) => (a[0] === '--query-gpu=index,clocks_event_reasons.active' ? '0, 0x0000000000000020\n' : a[0]!.includes('throttle') ? undefined : answers[a[0]!]);
    const r = await readGpuHealth(smi, () => false);
    expect(r.gpus[0]!.throttleReasons).toEqual(['software thermal slowdown']);
  });
});
