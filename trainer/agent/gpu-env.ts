// Which GPUs a rank sees. Without a profile `gpus` list nothing is set: every rank sees all of the
// host's GPUs (the torch engine then drives GPU LOCAL_RANK, the seeds' mapping). With a list, a
// torch rank sees every pinned GPU of its host in local-rank order (so LOCAL_RANK still indexes its
// own, and NCCL keeps its peer-to-peer / NVLink paths between local ranks, which one visible GPU per
// process would cost it); a tfjs rank sees only its own GPU (TensorFlow takes every GPU it sees).
import type { AgentRank } from '../protocol';
import type { EngineChoice } from './engine-choice';

/** CUDA_VISIBLE_DEVICES for rank `r` of `hostRanks` (this host's ranks), or undefined to leave it unset. */
export function visibleGpus(engine: EngineChoice['name'], hostRanks: readonly AgentRank[], r: AgentRank): string | undefined {
  if (r.gpu === undefined) return undefined;
  if (engine !== 'torch') return String(r.gpu);
  const pinned = [...hostRanks].sort((a, b) => a.localRank - b.localRank);
  if (pinned.some((x) => x.gpu === undefined)) return String(r.gpu);
  return pinned.map((x) => x.gpu).join(',');
}
