// What a run really had, next to what was asked: a run with --fp16 on a backend without fp16
// compute trains in fp32 (only the gradient exchange is fp16), a --compile whose tuned plan lost
// keeps the defaults, a tfjs-node-gpu rank may be on the CPU, and two runs of the seeds' ladder
// may differ only by an environment switch. History, compare and CSV read RunMeta.applied.
import type { CohortEvent, TrainConfig } from '../../../trainer/protocol';
import type { AppliedConfig } from '../../common';

/** Environment variables that change what a run computes or how fast (names or prefixes ending in _). */
// TensorFlow's own TF_ variables only: Terraform's (TF_CLI_CONFIG_FILE, TF_VAR_*, TF_LOG …) share the
// prefix and change nothing here, yet showed up as a "difference" between runs.
const SWITCHES = ['COHORT_TORCH_', 'COHORT_THREADS', 'COHORT_PYTHON', 'TF_CPP_', 'TF_FORCE_', 'TF_ENABLE_', 'TF_GPU_', 'TF_XLA_', 'TF_CUDNN_', 'TF_NUM_', 'TF_DETERMINISTIC_OPS', 'TF_USE_', 'TF_INTRA_OP_', 'TF_INTER_OP_', 'CUDA_', 'NCCL_', 'TORCH_', 'PYTORCH_', 'CUBLAS_', 'CUDNN_', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'XLA_'];

export function runSwitches(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env).sort(([a], [b]) => a.localeCompare(b))) {
    if (v !== undefined && SWITCHES.some((s) => (s.endsWith('_') ? k.startsWith(s) : k === s))) out[k] = v;
  }
  return out;
}

/** Folds one event into the applied config (the same object back when the event says nothing new). */
export function applyEvent(applied: AppliedConfig, asked: TrainConfig, e: CohortEvent): AppliedConfig {
  switch (e.type) {
    case 'hello': {
      const cap = (k: string) => e.capabilities[k]?.available === true;
      return {
        ...applied,
        engine: e.engine,
        backend: e.backend,
        device: e.device,
        ...(e.deviceWarning ? { gpuFellBack: true } : {}),
        fp16Compute: asked.fp16 && cap('fp16'),
        bf16Compute: asked.bf16 && cap('bf16'),
        // Engines that do not list fp16Transport exchange in the compute precision.
        fp16Transport: asked.fp16 && (e.capabilities.fp16Transport ? cap('fp16Transport') : cap('fp16')),
        compile: asked.compile ? (applied.compile ?? 'not run') : 'off',
      };
    }
    case 'plan': {
      const devices = [...new Set(e.ranks.map((r) => r.device).filter((d): d is string => !!d))];
      const fell = e.ranks.some((r) => r.gpuFellBack);
      if (!devices.length && !fell) return applied;
      return { ...applied, ...(devices.length ? { devices } : {}), ...(fell ? { gpuFellBack: true } : {}) };
    }
    case 'compile':
      if (!asked.compile) return applied;
      return { ...applied, compile: e.status === 'ok' ? (/kept the defaults/.test(e.detail) ? 'defaults kept' : 'on') : e.status };
    default:
      return applied;
  }
}
