// What the agent checks and decides about GPUs before it starts a host's ranks: --require-gpu for
// torch (the Python probe says whether that torch has CUDA), --bf16 for torch (each rank's GPU must
// compute bf16 natively, compute capability ≥ 8.0, the rule the engine applies: refused here, before
// any rank starts, naming the host and the GPU) and each rank's GPU environment (gpu-assignment.ts).
// Pure: the agent reads nvidia-smi (readGpuRows) and passes the rows in, so every case is a unit test.
import type { AgentRank, TrainConfig } from '../protocol';
import { BF16_RULE, bf16Native, parseComputeCapability } from '../util/compute-capability';
import { resolveCudaDevice, type GpuRow, type MigRow } from '../util/nvidia-smi';
import type { EngineChoice } from './engine-choice';
import { assignGpus } from './gpu-assignment';

export interface PreflightInput {
  host: string;
  engine: Pick<EngineChoice, 'name' | 'cuda' | 'reason'>;
  config: Pick<TrainConfig, 'bf16' | 'requireGpu'>;
  ranks: AgentRank[];
  /** nvidia-smi's answer on this host; undefined when it is missing or failed (no driver). */
  smi: { gpus: GpuRow[]; migs: MigRow[] } | undefined;
  /** What the ranks would inherit (the agent's environment over the profile's host env). */
  inherited: { CUDA_VISIBLE_DEVICES?: string | undefined; CUDA_DEVICE_ORDER?: string | undefined; TF_FORCE_GPU_ALLOW_GROWTH?: string | undefined };
}

export type Preflight =
  | { ok: true; env: Record<string, string>[]; notes: string[] }
  | { ok: false; code: 'gpu-required' | 'bf16-unsupported'; message: string; hint: string };

export function gpuPreflight(input: PreflightInput): Preflight {
  const { host, engine, config, ranks, smi, inherited } = input;
  if (config.requireGpu && engine.name === 'torch' && !engine.cuda) {
    return {
      ok: false,
      code: 'gpu-required',
      message: `--require-gpu: ${host}'s torch has no CUDA (${engine.reason})`,
      hint: `install a CUDA build of PyTorch on ${host}, set the host's python in the profile, or run without --require-gpu`,
    };
  }
  const gpus = assignGpus({ engine: engine.name, ranks, hostGpus: smi?.gpus.length ?? 0, inherited });
  const notes = [`GPUs: ${gpus.explanation}`];
  if (config.bf16 && engine.name === 'torch') {
    const hint = 'run with --fp16 instead (float16 autocast with loss scaling works on every CUDA GPU), or without --bf16, or on hosts with Ampere or newer GPUs';
    if (!engine.cuda) {
      return { ok: false, code: 'bf16-unsupported', message: `--bf16: ${host}'s ranks would run on the CPU (its torch has no CUDA: ${engine.reason}); bf16 autocast needs a CUDA GPU with ${BF16_RULE}`, hint };
    }
    for (const [i, r] of ranks.entries()) {
      const env = { ...inherited, ...gpus.env[i] };
      const visible = env.CUDA_VISIBLE_DEVICES === undefined ? smi?.gpus.length ?? 0 : env.CUDA_VISIBLE_DEVICES.split(',').filter((s) => s.trim() !== '').length;
      // The torch engine drives cuda:(LOCAL_RANK mod visible GPUs) (cohort_torch/distributed.py cuda_index).
      const ordinal = visible > 0 ? r.localRank % visible : r.localRank;
      const res = smi ? resolveCudaDevice(env, ordinal, smi.gpus, smi.migs) : ({ ok: false, reason: 'nvidia-smi is missing or failed' } as const);
      if (!res.ok) {
        notes.push(`--bf16 not checked before launch for rank ${r.rank} (${res.reason}); the engine checks ${BF16_RULE} itself`);
        continue;
      }
      const g = res.device.gpu;
      const cc = parseComputeCapability(g.computeCap);
      const which = `GPU ${g.index} (${g.name}, ${g.uuid})`;
      if (!cc) notes.push(`--bf16 not checked before launch for rank ${r.rank} on ${which}: nvidia-smi does not report compute_cap (driver older than R510); the engine checks ${BF16_RULE} itself`);
      else if (!bf16Native(cc)) {
        return { ok: false, code: 'bf16-unsupported', message: `--bf16: rank ${r.rank} on ${host} would run on ${which}, compute capability ${g.computeCap}; bf16 needs ${BF16_RULE} to run natively (older GPUs emulate it and have no bf16 convolutions)`, hint };
      }
    }
  }
  return { ok: true, env: gpus.env, notes };
}
