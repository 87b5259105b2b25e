// The event protocol: versioned JSON lines from the trainer (rank 0 and the host agents) to
// every consumer (core, CLI, dashboard, run history). Defined once here, with runtime
// validation; nothing else declares an event shape. Fields may be added, never renamed.
import { CohortError } from './errors';
import { decodeHostSystem, type HostSystem } from './system';
import {
  DecodeError,
  arr,
  bool,
  num,
  numOrNull,
  obj,
  oneOf,
  optBool,
  optNum,
  optStr,
  str,
  strArr,
  strRecord,
  type Obj,
} from './validate';

export const PROTOCOL_VERSION = 1;

export const EVENT_TYPES = [
  'hello',
  'plan',
  'compile',
  'warmup',
  'step',
  'epoch',
  'checkpoint',
  'log',
  'error',
  'restart',
  'queued',
  'env',
  'done',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

interface EventBase {
  v: number;
  /** Milliseconds since the Unix epoch, on the emitting host. */
  time: number;
}

export interface Capability {
  available: boolean;
  /** Why (not): e.g. "fp16 compute: unavailable on backend wasm (tfjs has no float16 tensors)". */
  detail: string;
}

export interface HelloEvent extends EventBase {
  type: 'hello';
  engine: string;
  backend: string;
  device: string;
  worldSize: number;
  /** Trainable parameter count. */
  params: number;
  host: string;
  /** At least `fp16` and `compile`; engines add more (e.g. `fp16Transport`, `channelsLast`). */
  capabilities: Record<string, Capability>;
  /** Versions of the engine's parts, e.g. {node, tfjs, torch}. */
  versions: Record<string, string>;
  /** Why this engine/backend was chosen (auto selection or the user's flag). */
  reason?: string;
  /** Set when a GPU was asked for and the rank runs on the CPU: why, and what the host needs. Shown loudly. */
  deviceWarning?: string;
}

export interface PlanRank {
  rank: number;
  host: string;
  localRank: number;
  /** nvidia-smi's index of the GPU the rank computes on (torch: found by the device's own UUID; tfjs: the one visible device). */
  gpu?: number;
  /** The device the rank really computes on (checked at run time), e.g. "CUDA NVIDIA A100 (GPU 2, GPU-…) via libtensorflow 2.9.1". */
  device?: string;
  gpuUuid?: string;
  /** The rank asked for a GPU and runs on the CPU. */
  gpuFellBack?: boolean;
}

export interface PlanEvent extends EventBase {
  type: 'plan';
  worldSize: number;
  ranks: PlanRank[];
  globalBatch: number;
  /** Optimizer steps the run will take. */
  steps: number;
  epochs: number;
  stepsPerEpoch: number;
  data: string;
}

export interface CompileEvent extends EventBase {
  type: 'compile';
  /** What ran: e.g. "kernel-selection", "torch.compile". */
  name: string;
  /** 'running': a progress report (elapsed so far in durationMs); one final ok/skipped/failed follows. */
  status: 'running' | 'ok' | 'skipped' | 'failed';
  durationMs: number;
  detail: string;
  /** With 'running': the stage (e.g. "conv 3x3 s1 64→64 @16²"), and which of how many. */
  stage?: string;
  index?: number;
  total?: number;
  /** Step time before / after, when the pass measured it. */
  baselineStepMs?: number;
  compiledStepMs?: number;
  /** baselineStepMs / compiledStepMs. */
  speedup?: number;
}

export interface WarmupEvent extends EventBase {
  type: 'warmup';
  /** Steps run as warm-up (not counted in throughput). */
  steps: number;
  durationMs: number;
  detail: string;
}

export interface RankMemory {
  rank: number;
  host: string;
  rssBytes: number;
  /** Bytes held by the framework (tfjs numBytes, torch memory_allocated). */
  tensorBytes?: number;
  /**
   * Peak framework bytes since warm-up ended: torch max_memory_allocated after reset_peak_memory_stats
   * (this process, CUDA only); tfjs the highest value tf.memory().numBytes took (every allocation
   * watched, not sampled).
   */
  peakTensorBytes?: number;
  /** torch: memory_reserved, what this process's caching allocator holds from the driver (≥ tensorBytes). */
  reservedBytes?: number;
  /** The whole GPU's used bytes (nvidia-smi memory.used: includes every other process on it). */
  gpuUsedBytes?: number;
  gpuTotalBytes?: number;
  /** Bytes this rank's own process holds on its own GPU (nvidia-smi --query-compute-apps, matched by pid and UUID). */
  gpuProcessBytes?: number;
  /** The GPU (or MIG instance) the rank's numbers are about. */
  gpuUuid?: string;
  /** The host's physical memory (what RSS is measured against when there is no GPU). */
  hostTotalBytes?: number;
  /** The rank's GPU's utilisation, 0-100 (nvidia-smi utilization.gpu); absent without a GPU or when it cannot be read. */
  gpuUtilPercent?: number;
}

export interface StepEvent extends EventBase {
  type: 'step';
  step: number;
  epoch: number;
  /** Mean loss over the window across all ranks; null if it was not finite. */
  loss: number | null;
  /** Samples per second over the last window, summed over every rank (the seeds' "Throughputs"). */
  globalSamplesPerSec: number;
  /** Mean wall time of one optimizer step over the window. */
  stepTimeMs: number;
  worldSize: number;
  lr: number;
  memory: RankMemory[];
  /** Bytes each rank sent for gradient exchange during the window (fp16 halves it). */
  commBytes?: number;
  /**
   * Each rank's mean forward + backward time per step over the window, indexed by rank (ms). Step
   * time itself is the same on every rank (the exchange waits for the slowest), so this is where a
   * straggler shows. Engines that do not measure it leave it out.
   */
  rankComputeMs?: number[];
  /**
   * Each rank's step time split over the window (mean ms per step), in rank order (issue 21). Added
   * in v1 as an optional field: older readers ignore it, older trainers leave it out.
   */
  rankPhases?: RankStepPhases[];
  /** Every host's CPU, load, network and memory over the window (issue 22; `protocol/system.ts`), added by the leader's agent. */
  system?: HostSystem[];
}

/** The phases of a step, in the order a rank runs them; `RankStepPhases` has a `<phase>Ms` field for each. */
export const STEP_PHASES = ['data', 'compute', 'wait', 'exchange', 'optimizer'] as const;
export type StepPhase = (typeof STEP_PHASES)[number];

/**
 * One rank's mean ms per step over a step window. `data`: building the batch; `compute`: forward +
 * backward; `wait`: waiting for slower peers in the gradient exchange; `exchange`: the exchange
 * itself; `optimizer`: the update. Wait and exchange are told apart from every rank's exchange
 * time: the ring ends together on every rank, so the fastest rank's exchange time is the
 * exchange, and what a rank spends beyond it is waiting (`splitWait`).
 */
export interface RankStepPhases {
  rank: number;
  dataMs: number;
  computeMs: number;
  waitMs: number;
  exchangeMs: number;
  optimizerMs: number;
}


export interface EpochEvent extends EventBase {
  type: 'epoch';
  epoch: number;
  trainLoss: number | null;
  valLoss?: number;
  valAccuracy?: number;
  durationMs: number;
}

export interface CheckpointEvent extends EventBase {
  type: 'checkpoint';
  step: number;
  path: string;
  action: 'saved' | 'resumed';
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export interface LogEvent extends EventBase {
  type: 'log';
  level: LogLevel;
  message: string;
  rank?: number;
  host?: string;
  stream?: 'stdout' | 'stderr';
  /** A warning's kind, for clients that show it specially ('slow-rank'). */
  code?: string;
  /** With 'slow-rank': the phase in which the rank is slower than its peers. */
  phase?: StepPhase;
  /** The run this stream is about: the first line of `cohort run --json` (scripts read the id from it). */
  runId?: string;
}

export interface ErrorEvent extends EventBase {
  type: 'error';
  /** -1 when the failure is not a rank's (e.g. rendezvous, a host's connection). */
  rank: number;
  host: string;
  message: string;
  /** The rank's last log lines, oldest first. */
  logTail: string[];
  code?: string;
  /** What to do next, when the failing side knew (CohortError's hint). */
  hint?: string;
  /**
   * Code `rank-hung`: `rank` and `host` are the rank that stopped making progress; these are the
   * ranks that noticed it, the collective operation they were in, its sequence number, and each
   * rank's last reported phase.
   */
  reportedBy?: number[];
  collective?: string;
  seq?: number;
  lastPhases?: RankLastPhase[];
}

/** What a rank last said it was doing (`phase`: a StepPhase or a setup stage) and at which step; `ageMs`: how long ago. */
export interface RankLastPhase {
  rank: number;
  host: string;
  phase: string;
  step?: number;
  ageMs?: number;
}

/** The run restarts every rank from its last checkpoint after a failure (`maxRestarts`). */
export interface RestartEvent extends EventBase {
  type: 'restart';
  /** 1 for the first restart. */
  attempt: number;
  /** The host and rank whose failure caused it (rank -1: the host itself, e.g. its agent was lost). */
  host: string;
  rank: number;
  reason: string;
  /** The step training resumes from (0 when no checkpoint was written yet). */
  resumeStep: number;
  /** The failure's code (`rank-exited`, `host-lost`, ...), when known. */
  code?: string;
  /**
   * Hosts lost with their agent (code `host-lost`): the ranks resume only once each of them is back
   * and its agent rejoined. The hosts cannot relaunch a lost host's agent (no daemon): a client
   * following the run does (`run-rejoin`), within `waitMs`, or the run fails `host-lost`. A lost
   * leader is named by each follower, in its own record; the relaunched leader tells the same
   * `attempt` again in its record, and a client tells it once.
   */
  waitingFor?: string[];
  /** How long the leader waits for the hosts in `waitingFor` to rejoin (default HOST_WAIT_MS). */
  waitMs?: number;
}

/**
 * How long a leader waits, ranks stopped and slots held, for a lost follower host to come back and
 * its agent to rejoin (a client following the run relaunches it: the hosts cannot, there is no
 * daemon) before the run fails `host-lost`. COHORT_HOST_WAIT_MS in the leader's host env overrides it;
 * a client reads the wait from the restart event's `waitMs`, this only when the event does not say.
 */
export const HOST_WAIT_MS = 180_000;

/**
 * The run waits: for GPU slots another run holds (said once per holder), or in a batch scheduler's
 * queue (`slurm` set; said each time Slurm's reason or the position changes). It starts when they free.
 */
export interface QueuedEvent extends EventBase {
  type: 'queued';
  /** The host whose slot is busy (for a Slurm job: the login node). */
  host: string;
  /** The run holding it ('' for a Slurm job: the scheduler holds it, see `slurm`). */
  behind: string;
  /** A Slurm job pending in its partition: Slurm's reason (Resources, Priority, ...) and 1-based queue position. */
  slurm?: SchedulerQueue;
}

export interface SchedulerQueue {
  jobId: string;
  reason: string;
  position?: number;
  partition?: string;
}

export type RunStatus = 'ok' | 'failed' | 'cancelled';
/** Where one rank's step time went: medians over the measured (post-warm-up) steps, in ms. */
export interface RankPhases {
  rank: number;
  host: string;
  /** Forward + backward + gradient readback. */
  computeMs: number;
  /**
   * The gradient exchange, including waiting for slower peers (name kept from v1: with the sharded
   * update it is the reduce-scatter + all-gather, without the optimizer work done in between).
   */
  allreduceMs: number;
  /** Optimizer update (this rank's shard, or all of it with --fp16) + weight upload. */
  updateMs: number;
}

export interface DoneEvent extends EventBase {
  type: 'done';
  status: RunStatus;
  steps: number;
  medianGlobalSamplesPerSec: number | null;
  /** Deterministic digest of the final weights (hex), '' when the run did not finish training. */
  paramChecksum: string;
  durationMs: number;
  /** Per rank, when the run measured steps (engines that time their phases). */
  phases?: RankPhases[];
}

/**
 * A host's agent, as it first starts its ranks: the environment switches (env-switches.ts) each
 * rank runs with: the host's own environment, the profile's host env and the GPU variables the
 * agent sets per rank. History and compare record these, not what the client could guess.
 */
export interface EnvEvent extends EventBase {
  type: 'env';
  host: string;
  ranks: { rank: number; switches: Record<string, string> }[];
}

export type CohortEvent =
  | HelloEvent
  | PlanEvent
  | CompileEvent
  | WarmupEvent
  | StepEvent
  | EpochEvent
  | CheckpointEvent
  | LogEvent
  | ErrorEvent
  | RestartEvent
  | QueuedEvent
  | EnvEvent
  | DoneEvent;

type Payload<E> = E extends CohortEvent ? Omit<E, 'v' | 'time'> : never;
export type EventPayload = Payload<CohortEvent>;

/** Stamps version and time onto an event payload. */
export function makeEvent<P extends EventPayload>(payload: P, time: number = Date.now()): P & EventBase {
  return { v: PROTOCOL_VERSION, time, ...payload };
}

export function encodeEvent(e: CohortEvent): string {
  return JSON.stringify(e);
}

// ---- decoding ---------------------------------------------------------------------------

function capability(v: unknown, path: string): Capability {
  const o = obj(v, path);
  return { available: bool(o, 'available', path), detail: str(o, 'detail', path) };
}

function schedulerQueue(v: unknown, path: string): SchedulerQueue {
  const o = obj(v, path);
  return {
    jobId: str(o, 'jobId', path),
    reason: str(o, 'reason', path),
    ...opt('position', optNum(o, 'position', path, { int: true, min: 1 })),
    ...opt('partition', optStr(o, 'partition', path)),
  };
}

function rankMemory(v: unknown, path: string): RankMemory {
  const o = obj(v, path);
  const m: RankMemory = { rank: num(o, 'rank', path, { int: true, min: 0 }), host: str(o, 'host', path), rssBytes: num(o, 'rssBytes', path, { min: 0 }) };
  for (const k of ['tensorBytes', 'peakTensorBytes', 'reservedBytes', 'gpuUsedBytes', 'gpuTotalBytes', 'gpuProcessBytes', 'hostTotalBytes'] as const) {
    const x = optNum(o, k, path, { min: 0 });
    if (x !== undefined) m[k] = x;
  }
  const util = optNum(o, 'gpuUtilPercent', path, { min: 0, max: 100 });
  if (util !== undefined) m.gpuUtilPercent = util;
  const uuid = optStr(o, 'gpuUuid', path);
  if (uuid !== undefined) m.gpuUuid = uuid;
  return m;
}

function record<T>(o: Obj, key: string, path: string, item: (v: unknown, p: string) => T): Record<string, T> {
  const rec = obj(o[key], `${path}${key}`);
  const out: Record<string, T> = {};
  for (const [k, v] of Object.entries(rec)) out[k] = item(v, `${key}.${k}`);
  return out;
}

const p = '';
const decoders: { [K in EventType]: (o: Obj) => Payload<Extract<CohortEvent, { type: K }>> } = {
  hello: (o) => ({
    type: 'hello',
    engine: str(o, 'engine', p),
    backend: str(o, 'backend', p),
    device: str(o, 'device', p),
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    params: num(o, 'params', p, { int: true, min: 0 }),
    host: str(o, 'host', p),
    capabilities: requireKeys(record(o, 'capabilities', p, capability), ['fp16', 'compile'], 'capabilities'),
    versions: record(o, 'versions', p, (v, path) => {
      if (typeof v !== 'string') throw new DecodeError(path, 'expected a string');
      return v;
    }),
    ...opt('reason', optStr(o, 'reason', p)),
    ...opt('deviceWarning', optStr(o, 'deviceWarning', p)),
  }),
  plan: (o) => ({
    type: 'plan',
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    ranks: arr(o, 'ranks', p, (v, path) => {
      const r = obj(v, path);
      return {
        rank: num(r, 'rank', path, { int: true, min: 0 }),
        host: str(r, 'host', path),
        localRank: num(r, 'localRank', path, { int: true, min: 0 }),
        ...opt('gpu', optNum(r, 'gpu', path, { int: true, min: 0 })),
        ...opt('device', optStr(r, 'device', path)),
        ...opt('gpuUuid', optStr(r, 'gpuUuid', path)),
        ...opt('gpuFellBack', optBool(r, 'gpuFellBack', path)),
      };
    }),
    globalBatch: num(o, 'globalBatch', p, { int: true, min: 1 }),
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    epochs: num(o, 'epochs', p, { int: true, min: 0 }),
    stepsPerEpoch: num(o, 'stepsPerEpoch', p, { int: true, min: 0 }),
    data: str(o, 'data', p),
  }),
  compile: (o) => ({
    type: 'compile',
    name: str(o, 'name', p),
    status: oneOf(o, 'status', p, ['running', 'ok', 'skipped', 'failed'] as const),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    detail: str(o, 'detail', p),
    ...opt('stage', optStr(o, 'stage', p)),
    ...opt('index', optNum(o, 'index', p, { int: true, min: 0 })),
    ...opt('total', optNum(o, 'total', p, { int: true, min: 0 })),
    ...opt('baselineStepMs', optNum(o, 'baselineStepMs', p, { min: 0 })),
    ...opt('compiledStepMs', optNum(o, 'compiledStepMs', p, { min: 0 })),
    ...opt('speedup', optNum(o, 'speedup', p, { min: 0 })),
  }),
  warmup: (o) => ({
    type: 'warmup',
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    detail: str(o, 'detail', p),
  }),
  step: (o) => ({
    type: 'step',
    step: num(o, 'step', p, { int: true, min: 0 }),
    epoch: num(o, 'epoch', p, { int: true, min: 0 }),
    loss: numOrNull(o, 'loss', p),
    globalSamplesPerSec: num(o, 'globalSamplesPerSec', p, { min: 0 }),
    stepTimeMs: num(o, 'stepTimeMs', p, { min: 0 }),
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    lr: num(o, 'lr', p, { min: 0 }),
    memory: arr(o, 'memory', p, rankMemory),
    ...opt('commBytes', optNum(o, 'commBytes', p, { min: 0 })),
    ...opt('rankComputeMs', o.rankComputeMs === undefined ? undefined : arr(o, 'rankComputeMs', p, (v, at) => num({ v }, 'v', at, { min: 0 }))),
    ...opt('rankPhases', o.rankPhases === undefined ? undefined : arr(o, 'rankPhases', p, rankStepPhases)),
    ...opt('system', o.system === undefined ? undefined : arr(o, 'system', p, decodeHostSystem)),
  }),
  epoch: (o) => ({
    type: 'epoch',
    epoch: num(o, 'epoch', p, { int: true, min: 0 }),
    trainLoss: numOrNull(o, 'trainLoss', p),
    ...opt('valLoss', optNum(o, 'valLoss', p)),
    ...opt('valAccuracy', optNum(o, 'valAccuracy', p, { min: 0, max: 1 })),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
  }),
  checkpoint: (o) => ({
    type: 'checkpoint',
    step: num(o, 'step', p, { int: true, min: 0 }),
    path: str(o, 'path', p),
    action: oneOf(o, 'action', p, ['saved', 'resumed'] as const),
  }),
  log: (o) => ({
    type: 'log',
    level: oneOf(o, 'level', p, ['debug', 'info', 'warn', 'error'] as const),
    message: str(o, 'message', p),
    ...opt('rank', optNum(o, 'rank', p, { int: true, min: 0 })),
    ...opt('host', optStr(o, 'host', p)),
    ...opt('stream', o.stream === undefined ? undefined : oneOf(o, 'stream', p, ['stdout', 'stderr'] as const)),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('phase', o.phase === undefined ? undefined : oneOf(o, 'phase', p, STEP_PHASES)),
    ...opt('runId', optStr(o, 'runId', p)),
  }),
  error: (o) => ({
    type: 'error',
    rank: num(o, 'rank', p, { int: true, min: -1 }),
    host: str(o, 'host', p),
    message: str(o, 'message', p),
    logTail: strArr(o, 'logTail', p),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('hint', optStr(o, 'hint', p)),
    ...opt('reportedBy', o.reportedBy === undefined ? undefined : arr(o, 'reportedBy', p, (v, at) => num({ v }, 'v', at, { int: true, min: 0 }))),
    ...opt('collective', optStr(o, 'collective', p)),
    ...opt('seq', optNum(o, 'seq', p, { int: true, min: 0 })),
    ...opt('lastPhases', o.lastPhases === undefined ? undefined : arr(o, 'lastPhases', p, rankLastPhase)),
  }),
  restart: (o) => ({
    type: 'restart',
    attempt: num(o, 'attempt', p, { int: true, min: 1 }),
    host: str(o, 'host', p),
    rank: num(o, 'rank', p, { int: true, min: -1 }),
    reason: str(o, 'reason', p),
    resumeStep: num(o, 'resumeStep', p, { int: true, min: 0 }),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('waitingFor', o.waitingFor === undefined ? undefined : strArr(o, 'waitingFor', p)),
    ...opt('waitMs', optNum(o, 'waitMs', p, { int: true, min: 0 })),
  }),
  queued: (o) => ({
    type: 'queued',
    host: str(o, 'host', p),
    behind: str(o, 'behind', p),
    ...opt('slurm', o.slurm === undefined ? undefined : schedulerQueue(o.slurm, 'slurm')),
  }),
  env: (o) => ({
    type: 'env',
    host: str(o, 'host', p),
    ranks: arr(o, 'ranks', p, (v, q) => {
      const r = obj(v, q);
      return { rank: num(r, 'rank', q, { int: true, min: 0 }), switches: strRecord(r, 'switches', q) };
    }),
  }),
  done: (o) => ({
    type: 'done',
    status: oneOf(o, 'status', p, ['ok', 'failed', 'cancelled'] as const),
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    medianGlobalSamplesPerSec: o.medianGlobalSamplesPerSec === null ? null : num(o, 'medianGlobalSamplesPerSec', p, { min: 0 }),
    paramChecksum: str(o, 'paramChecksum', p),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    ...opt('phases', o.phases === undefined ? undefined : arr(o, 'phases', p, rankPhases)),
  }),
};

function rankStepPhases(v: unknown, path: string): RankStepPhases {
  const o = obj(v, path);
  const ms = (k: string): number => num(o, k, path, { min: 0 });
  return { rank: num(o, 'rank', path, { int: true, min: 0 }), dataMs: ms('dataMs'), computeMs: ms('computeMs'), waitMs: ms('waitMs'), exchangeMs: ms('exchangeMs'), optimizerMs: ms('optimizerMs') };
}

function rankLastPhase(v: unknown, path: string): RankLastPhase {
  const o = obj(v, path);
  return {
    rank: num(o, 'rank', path, { int: true, min: 0 }),
    host: str(o, 'host', path),
    phase: str(o, 'phase', path),
    ...opt('step', optNum(o, 'step', path, { int: true, min: 0 })),
    ...opt('ageMs', optNum(o, 'ageMs', path, { min: 0 })),
  };
}

function rankPhases(v: unknown, path: string): RankPhases {
  const o = obj(v, path);
  return {
    rank: num(o, 'rank', path, { int: true, min: 0 }),
    host: str(o, 'host', path),
    computeMs: num(o, 'computeMs', path, { min: 0 }),
    allreduceMs: num(o, 'allreduceMs', path, { min: 0 }),
    updateMs: num(o, 'updateMs', path, { min: 0 }),
  };
}

function opt<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function requireKeys<T>(rec: Record<string, T>, keys: string[], path: string): Record<string, T> {
  for (const k of keys) if (!(k in rec)) throw new DecodeError(`${path}.${k}`, 'is required');
  return rec;
}

export function isEventType(t: unknown): t is EventType {
  return typeof t === 'string' && (EVENT_TYPES as readonly string[]).includes(t);
}

export class UnknownEventType extends CohortError {
  constructor(readonly eventType: string) {
    super('unknown-event-type', `unknown event type ${JSON.stringify(eventType)}`, { fatal: false });
    this.name = 'UnknownEventType';
  }
}

/** Validates one parsed event object. Throws DecodeError (bad field) or UnknownEventType. */
export function decodeEvent(value: unknown): CohortEvent {
  const o = obj(value, '');
  const type = str(o, 'type', '');
  const v = num(o, 'v', '', { int: true, min: 1 });
  if (v > PROTOCOL_VERSION) throw new DecodeError('v', `protocol version ${v} is newer than this reader (${PROTOCOL_VERSION}); update Cohort`);
  const time = num(o, 'time', '', { min: 0 });
  if (!isEventType(type)) throw new UnknownEventType(type);
  const payload = decoders[type](o);
  return { ...payload, v, time } as CohortEvent;
}

export type LineResult =
  | { kind: 'event'; event: CohortEvent }
  | { kind: 'unknown'; eventType: string }
  | { kind: 'invalid'; line: number; error: string; text: string };

/**
 * Decodes a JSON-lines event stream line by line. A bad line is reported with its line
 * number; unknown event types (from a newer trainer) are counted, not fatal.
 */
export class EventLineDecoder {
  private lineNo = 0;
  private pending = '';
  unknownCount = 0;
  invalidCount = 0;

  /** Feeds a chunk of text; returns results for every complete line in it. */
  push(chunk: string): LineResult[] {
    this.pending += chunk;
    const out: LineResult[] = [];
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      const r = this.decodeLine(line);
      if (r) out.push(r);
    }
    return out;
  }

  /** Decodes whatever remains after the stream ended. */
  end(): LineResult[] {
    const rest = this.pending;
    this.pending = '';
    const r = rest ? this.decodeLine(rest) : undefined;
    return r ? [r] : [];
  }

  decodeLine(line: string): LineResult | undefined {
    this.lineNo++;
    const text = line.trim();
    if (!text) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.invalidCount++;
      return { kind: 'invalid', line: this.lineNo, error: 'not JSON', text };
    }
    try {
      return { kind: 'event', event: decodeEvent(parsed) };
    } catch (err) {
      if (err instanceof UnknownEventType) {
        this.unknownCount++;
        return { kind: 'unknown', eventType: err.eventType };
      }
      this.invalidCount++;
      return { kind: 'invalid', line: this.lineNo, error: (err as Error).message, text };
    }
  }
}

/** The seeds' human line: `Epoch: 0, Step: 20, Loss: 4.87, Throughputs: 27.9 samples/s`. */
/** The seeds' step line; with the run's total, `Step: 120/500`. */
export function formatStepLine(e: StepEvent, totalSteps?: number): string {
  const loss = e.loss === null ? 'nan' : e.loss.toFixed(4);
  return `Epoch: ${e.epoch}, Step: ${e.step}${totalSteps ? `/${totalSteps}` : ''}, Loss: ${loss}, Throughputs: ${e.globalSamplesPerSec.toFixed(1)} samples/s`;
}
