// The bf16 rule is stated twice (this module for probe/provision/agent, the torch engine for itself):
// this test reads the engine's constant from the real Python module so the two cannot drift apart.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BF16_MIN_COMPUTE_CAPABILITY, bf16Native, parseComputeCapability } from './compute-capability';
import { parseGpuRows, withComputeCaps } from './nvidia-smi';

describe('compute capability', () => {
  it('parses nvidia-smi compute_cap values and applies the bf16 rule (≥ 8.0)', () => {
    expect(parseComputeCapability('8.6')).toEqual({ major: 8, minor: 6 });
    expect(parseComputeCapability('[N/A]')).toBeUndefined();
    expect(parseComputeCapability(undefined)).toBeUndefined();
    const native = (s: string) => bf16Native(parseComputeCapability(s)!);
    expect(['7.0', '7.5', '6.1'].map(native)).toEqual([false, false, false]); // V100, T4, P40
    expect(['8.0', '8.6', '8.9', '9.0', '10.0'].map(native)).toEqual([true, true, true, true, true]); // A100, A10/3090, L4, H100, B200
  });

  it('agrees with the torch engine’s BF16_MIN_CAPABILITY', () => {
    // The engine's modules point stdout at stderr (events.py owns fd 1), so the answer is read from stderr.
    const out = spawnSync('/usr/bin/python3', ['-c', 'from cohort_torch.capabilities import BF16_MIN_CAPABILITY as c; print(f"BF16 {c[0]}.{c[1]}")'], {
      cwd: join(import.meta.dirname, '../../resources/trainer/engines'), // the built copy (npm run build; the suite's global setup builds it)
      encoding: 'utf8',
    });
    expect(out.status, out.stderr).toBe(0);
    expect(/^BF16 (.*)$/m.exec(out.stderr)?.[1]).toBe(`${BF16_MIN_COMPUTE_CAPABILITY.major}.${BF16_MIN_COMPUTE_CAPABILITY.minor}`);
  });

  it('merges `nvidia-smi --query-gpu=uuid,compute_cap` into the GPU rows by UUID; an old driver’s refusal leaves them unknown', () => {
    const rows = parseGpuRows(`0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Tesla V100-SXM2-16GB, 00000000:3B:00.0, 310, 16384
1, GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA A100-SXM4-40GB, 00000000:AF:00.0, 4, 40960
`);
    const merged = withComputeCaps(rows, 'GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff, 8.0\nGPU-1b2c3d4e-0000-1111-2222-333344445555, 7.0\n');
    expect(merged.map((r) => r.computeCap)).toEqual(['7.0', '8.0']);
    // A pre-R510 driver: 'Field "compute_cap" is not a valid field to query.' on stderr, exit 2 → no stdout.
    expect(withComputeCaps(rows, undefined).map((r) => r.computeCap)).toEqual([undefined, undefined]);
  });
});
