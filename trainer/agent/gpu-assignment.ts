// Which GPU(s) each rank on a host sees: the environment the agent adds per rank. Pure (the agent
// reads the host's GPU count from nvidia-smi and passes it in), so every case is a unit test.
//
// tfjs: TensorFlow puts a process on its GPU:0 and reserves nearly all memory of every GPU it can
// see, so two ranks that see the same GPUs collide. Each rank gets ONE visible device (its
// profile-pinned GPU, else GPU localRank of the host's — or of an inherited CUDA_VISIBLE_DEVICES
// list) and TF_FORCE_GPU_ALLOW_GROWTH=true, so memory is taken as needed and reads truthfully.
// torch: one GPU per rank via CUDA_VISIBLE_DEVICES can cost NCCL its peer-to-peer / NVLink path
// between local ranks; the seeds keep every GPU visible and select cuda:LOCAL_RANK, and so do we.
// A profile that pins GPUs makes the host's pinned list the visible set, still indexed by LOCAL_RANK.
// Both: CUDA_DEVICE_ORDER=PCI_BUS_ID (unless set), so CUDA's numbering is nvidia-smi's.
import type { AgentRank } from '../protocol';
import { visibleGpus } from './gpu-env';

export interface GpuAssignmentInput {
  engine: 'tfjs' | 'torch';
  /** This host's ranks, in launch order. */
  ranks: AgentRank[];
  /** GPUs nvidia-smi lists on this host (0: none, or no driver). */
  hostGpus: number;
  /** What the ranks would inherit (the agent's environment over the profile's host env). */
  inherited: { CUDA_VISIBLE_DEVICES?: string | undefined; CUDA_DEVICE_ORDER?: string | undefined; TF_FORCE_GPU_ALLOW_GROWTH?: string | undefined };
}

export interface GpuAssignment {
  /** Environment to add, per rank (same order as `ranks`). */
  env: Record<string, string>[];
  /** One line for the agent's log: what was decided and why. */
  explanation: string;
}

export function assignGpus(input: GpuAssignmentInput): GpuAssignment {
  const { engine, ranks, hostGpus, inherited } = input;
  const pinned = ranks.some((r) => r.gpu !== undefined) ? ranks.map((r) => r.gpu) : undefined;
  const inheritedList = inherited.CUDA_VISIBLE_DEVICES?.split(',').map((s) => s.trim()).filter((s) => s !== '' && s !== '-1');
  const anyGpu = !!pinned || hostGpus > 0 || !!inheritedList?.length;
  const common: Record<string, string> = anyGpu && !inherited.CUDA_DEVICE_ORDER ? { CUDA_DEVICE_ORDER: 'PCI_BUS_ID' } : {};
  if (!anyGpu) return { env: ranks.map(() => ({})), explanation: 'no GPU on this host (nvidia-smi lists none): ranks run on the CPU' };

  if (engine === 'torch') {
    if (pinned) {
      // gpu-env.ts: the host's pinned list in local-rank order, so cuda:LOCAL_RANK is the rank's own.
      const env = ranks.map((r) => {
        const v = visibleGpus('torch', ranks, r);
        return { ...common, ...(v === undefined ? {} : { CUDA_VISIBLE_DEVICES: v }) };
      });
      return { env, explanation: `torch: the profile pins GPUs ${pinned.join(',')}; every local rank sees the pinned list (NCCL keeps its peer-to-peer path) and uses cuda:LOCAL_RANK` };
    }
    const seen = inheritedList?.length ? `CUDA_VISIBLE_DEVICES=${inherited.CUDA_VISIBLE_DEVICES}` : `the host's ${hostGpus} GPU(s)`;
    return { env: ranks.map(() => ({ ...common })), explanation: `torch: every local rank sees ${seen} and uses cuda:LOCAL_RANK, as the seeds do` };
  }

  const growth: Record<string, string> = inherited.TF_FORCE_GPU_ALLOW_GROWTH ? {} : { TF_FORCE_GPU_ALLOW_GROWTH: 'true' };
  const pool = inheritedList?.length ? inheritedList : Array.from({ length: Math.max(1, hostGpus) }, (_, i) => String(i));
  const env = ranks.map((r) => ({ ...common, ...growth, CUDA_VISIBLE_DEVICES: pinned ? (visibleGpus('tfjs', ranks, r) ?? pool[r.localRank % pool.length]!) : pool[r.localRank % pool.length]! }));
  const shared = !pinned && ranks.length > pool.length;
  const source = pinned ? 'pinned by the profile' : inheritedList?.length ? `from CUDA_VISIBLE_DEVICES=${inherited.CUDA_VISIBLE_DEVICES}` : `of the host's ${hostGpus}`;
  return {
    env,
    explanation: `tfjs: one visible GPU per rank (${env.map((e, i) => `rank ${ranks[i]!.rank}→${e.CUDA_VISIBLE_DEVICES}`).join(', ')}; ${source}), memory growth on${shared ? `; ${ranks.length} ranks share ${pool.length} GPU(s): each takes memory as it grows, but they compete for compute` : ''}`,
  };
}
