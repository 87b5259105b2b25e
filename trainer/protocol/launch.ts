// What core hands a host agent (first line on its stdin), and the rendezvous environment every
// rank process receives (the same names torch.distributed uses, so both engines share it).
import { decodeTrainConfig, type TrainConfig } from './train-config';
import { DecodeError, arr, num, obj, oneOf, optBool, optNum, str, strArr, strRecord } from './validate';

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
  /** The agents of a multi-host run take each other for lost after this long without a beat on their control link; 0 = the default (20 s). */
  heartbeatTimeoutMs: number;
  // ---- durable runs (`run-start`) ----
  /** "leader": the host of rank 0, holds the run's record and state; "follower": every other host. */
  role?: 'leader' | 'follower';
  /** The leader's control endpoint; followers connect to it. Absent on a single-host run. */
  control?: ControlEndpoint;
  /**
   * A follower's: the leader host's name as the profile knows it. A follower that loses its leader
   * with restarts left names it in the `restart` event's waitingFor, so a client relaunches it.
   */
  leader?: string;
  /**
   * The leader's: spare hosts of the profile that run nothing (issue 21 item 5). A follower host lost
   * with restarts left is excluded from the next attempt and its ranks go to the first spare not yet
   * used; the `restart` event names both (excluded, replacement), and a client starts the spare's agent.
   * Set by planRun from the profile's `spare: true` hosts; the controller starts the spare's agent (electron/core/runs/run-spare.ts).
   */
  spares?: string[];
  /** Restarts from the last checkpoint after a rank or host failure (default 0). */
  maxRestarts?: number;
  /** Busy slots: wait (true, default) or refuse at once with code slots-busy (false). */
  queue?: boolean;
  /** The slots this host's ranks claim (default: each rank's gpu, else its localRank). */
  slots?: number[];
}

export interface ControlEndpoint {
  addr: string;
  port: number;
  /** A random per-run secret; a follower that does not present it is refused. */
  token: string;
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
    ...(o.role === undefined ? {} : { role: oneOf(o, 'role', 'launch', ['leader', 'follower'] as const) }),
    ...(o.control === undefined ? {} : { control: decodeControl(o.control) }),
    ...(o.leader === undefined ? {} : { leader: str(o, 'leader', 'launch', { nonEmpty: true }) }),
    ...(o.spares === undefined ? {} : { spares: strArr(o, 'spares', 'launch') }),
    maxRestarts: optNum(o, 'maxRestarts', 'launch', { int: true, min: 0 }) ?? 0,
    queue: optBool(o, 'queue', 'launch') ?? true,
    ...(o.slots === undefined ? {} : { slots: arr(o, 'slots', 'launch', (v, p) => num({ v }, 'v', p, { int: true, min: 0 })) }),
  };
}

function decodeControl(value: unknown): ControlEndpoint {
  const c = obj(value, 'launch.control');
  const token = str(c, 'token', 'launch.control', { nonEmpty: true });
  if (token.length < 16) throw new DecodeError('launch.control.token', 'must be a random secret of at least 16 characters');
  return { addr: str(c, 'addr', 'launch.control', { nonEmpty: true }), port: num(c, 'port', 'launch.control', { int: true, min: 1, max: 65535 }), token };
}

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
