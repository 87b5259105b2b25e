// The event protocol's shapes: every event type, its fields, and the constants they refer to.
// Defined once here (re-exported by events.ts, the one import place); nothing else declares an
// event shape. Fields may be added, never renamed.

import type { ErrorFields } from './errors';
import type { HostSystem } from './system';

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

/** An error in the event log: the one error shape (ErrorFields, errors.ts) with its host and rank required. */
export interface ErrorEvent extends EventBase, ErrorFields {
  type: 'error';
  /** -1 when the failure is not a rank's (e.g. rendezvous, a host's connection). */
  rank: number;
  host: string;
  /** The rank's last log lines, oldest first. */
  logTail: string[];
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
  /**
   * Bad node out (issue 21 item 5): the lost host left out of the next attempt, and the profile's
   * spare host that takes its ranks (then in `waitingFor`: a client starts its agent).
   */
  excluded?: string;
  replacement?: string;
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

/** An event without its envelope (`v`, `time`): what a decoder returns and makeEvent stamps. */
export type Payload<E> = E extends CohortEvent ? Omit<E, 'v' | 'time'> : never;
export type EventPayload = Payload<CohortEvent>;

/** Stamps version and time onto an event payload. */
export function makeEvent<P extends EventPayload>(payload: P, time: number = Date.now()): P & EventBase {
  return { v: PROTOCOL_VERSION, time, ...payload };
}

export function encodeEvent(e: CohortEvent): string {
  return JSON.stringify(e);
}
