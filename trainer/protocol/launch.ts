// What core hands a host agent (first line on its stdin), and the rendezvous environment every
// rank process receives (the same names torch.distributed uses, so both engines share it).
import { decodeTrainConfig, type TrainConfig } from './train-config';
import { arr, num, obj, optNum, str, strRecord } from './validate';

export interface AgentRank {
  rank: number;
  localRank: number;
  /** GPU index exported as CUDA_VISIBLE_DEVICES for this rank, if the host lists GPUs. */
  gpu?: number;
}

export interface LaunchSpec {
  runId: string;
  /** This host's name as the profile knows it (used in events and logs). */
  host: string;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  ranks: AgentRank[];
  config: TrainConfig;
  /** Extra environment for every rank (the profile host's `env`). */
  env: Record<string, string>;
  /** The agent kills its ranks if no heartbeat line arrives on stdin for this long; 0 = rely on EOF only. */
  heartbeatTimeoutMs: number;
}

export function decodeLaunchSpec(value: unknown): LaunchSpec {
  const o = obj(value, 'launch');
  return {
    runId: str(o, 'runId', 'launch', { nonEmpty: true }),
    host: str(o, 'host', 'launch', { nonEmpty: true }),
    worldSize: num(o, 'worldSize', 'launch', { int: true, min: 1 }),
    masterAddr: str(o, 'masterAddr', 'launch', { nonEmpty: true }),
    masterPort: num(o, 'masterPort', 'launch', { int: true, min: 1, max: 65535 }),
    ranks: arr(o, 'ranks', 'launch', (v, p) => {
      const r = obj(v, p);
      const gpu = optNum(r, 'gpu', p, { int: true, min: 0 });
      return { rank: num(r, 'rank', p, { int: true, min: 0 }), localRank: num(r, 'localRank', p, { int: true, min: 0 }), ...(gpu === undefined ? {} : { gpu }) };
    }),
    config: decodeTrainConfig(o.config),
    env: o.env === undefined ? {} : strRecord(o, 'env', 'launch'),
    heartbeatTimeoutMs: num(o, 'heartbeatTimeoutMs', 'launch', { min: 0 }),
  };
}

/** Lines core writes to an agent's stdin after the spec. */
export const AGENT_HEARTBEAT = 'heartbeat';
export const AGENT_CANCEL = 'cancel';

/** Environment variable names of the rendezvous (torch.distributed's). */
export const RENDEZVOUS_ENV = {
  masterAddr: 'MASTER_ADDR',
  masterPort: 'MASTER_PORT',
  rank: 'RANK',
  worldSize: 'WORLD_SIZE',
  localRank: 'LOCAL_RANK',
} as const;
/** The run configuration reaches each rank as JSON in this variable. */
export const CONFIG_ENV = 'COHORT_TRAIN_CONFIG';
/** The host name a rank reports in its events. */
export const HOST_ENV = 'COHORT_HOST';
/** A per-host cache directory under the workdir (e.g. the --compile kernel plan). */
export const CACHE_DIR_ENV = 'COHORT_CACHE_DIR';
/** The agent's per-run working directory (checkpoints default there). */
export const RUN_DIR_ENV = 'COHORT_RUN_DIR';
