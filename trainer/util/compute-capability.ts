// CUDA compute capability: what a GPU computes natively. One place for the bf16 rule, shared by the
// probe, provision and the agent's pre-launch check; the torch engine states the same threshold
// (cohort_torch/capabilities.py BF16_MIN_CAPABILITY, kept equal by compute-capability.test.ts).
// Pure: no Node, no DOM.

/** Ampere (8.0) and newer compute bfloat16 natively; older GPUs emulate it and have no bf16 convolutions. */
export const BF16_MIN_COMPUTE_CAPABILITY = { major: 8, minor: 0 } as const;

export interface ComputeCapability {
  major: number;
  minor: number;
}

/** "8.6" (nvidia-smi's compute_cap, torch's get_device_capability joined by a dot) → {8, 6}; anything else undefined. */
export function parseComputeCapability(s: string | undefined): ComputeCapability | undefined {
  const m = /^\s*(\d+)\.(\d+)\s*$/.exec(s ?? '');
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

export function bf16Native(cc: ComputeCapability): boolean {
  const min = BF16_MIN_COMPUTE_CAPABILITY;
  return cc.major > min.major || (cc.major === min.major && cc.minor >= min.minor);
}

/** "compute capability ≥ 8.0" */
export const BF16_RULE = `compute capability ≥ ${BF16_MIN_COMPUTE_CAPABILITY.major}.${BF16_MIN_COMPUTE_CAPABILITY.minor} (Ampere or newer)`;
