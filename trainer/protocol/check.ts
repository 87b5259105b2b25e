// `cohort check` (the cluster doctor, issue 21): what the host commands `check-host`,
// `check-link` and `check-compute` of the trainer bundle answer (one JSON line each), and the one
// result document the CLI prints with --json, `cohort serve` and the desktop app show. Defined
// once here: the bundle writes these, core reads them, the renderer draws them. A host's or the
// scheduler's refusal travels as the one wire shape of an error, `ErrorInfo` (errors.ts).
import type { ErrorFields, ErrorInfo } from './errors';

/** One GPU as nvidia-smi's query interface describes it (fields the driver does not know are absent). */
export interface GpuHealth {
  index: number;
  uuid: string;
  name: string;
  memoryTotalBytes: number;
  memoryUsedBytes: number;
  driver: string;
  computeCap?: string;
  /** ecc.errors.uncorrected.volatile.total (since the last driver load); absent when ECC is off or unknown. */
  eccUncorrectedVolatile?: number;
  /** retired_pages.pending (pre-Ampere): "Yes" means a page retirement waits for a reset. */
  retiredPagesPending?: boolean;
  /** remapped_rows.pending / remapped_rows.failure (Ampere and newer). */
  remappedRowsPending?: boolean;
  remappedRowsFailure?: boolean;
  /** Active clock-throttle reasons, decoded from clocks_throttle_reasons.active (idle excluded). */
  throttleReasons: string[];
  persistenceMode?: 'Enabled' | 'Disabled';
  /** Compute processes on this GPU that are not Cohort's (pid, bytes, name). */
  foreign: { pid: number; bytes: number; name: string }[];
}

/** `check-host`'s reply. */
export interface HostCheckReport {
  v: 1;
  nodeVersion: string;
  /** The manifest hash of the bundle that answered (the deployed one). */
  bundleHash: string;
  workdir: string;
  workdirWritable: boolean;
  workdirError?: string;
  /** Free bytes on the workdir's filesystem. */
  freeBytes?: number;
  /** Date.now() on the host when it wrote this line. */
  timeMs: number;
  hostname: string;
  cpuModel: string;
  cores: number;
  /**
   * The kernel's boot id (Linux). Hosts with the same one are one machine (network namespaces,
   * containers): their ranks share its cores, so the check measures them computing at once.
   */
  bootId?: string;
  memBytes: number;
  /**
   * The engine the agent would pick for the planned run's --engine, or why none: the one error shape
   * (since session 8; a check saved before has {error: message, hint}: upgradeCheckResult reads it).
   */
  engine: { name: 'tfjs' | 'torch'; reason: string; cuda?: boolean } | { error: ErrorInfo };
  /** tfjs: the backend `auto` loads on this host (tensorflow-gpu, tensorflow, wasm). */
  tfjsBackend: string;
  /** The interpreter the torch engine would use, with its library versions. */
  python?: { path: string; version: string; torch?: string; cuda?: string; cudnn?: string; nccl?: string };
  /** 'missing': no nvidia-smi (a CPU host); 'failed': it is there but did not answer (driver problem). */
  smi: 'ok' | 'missing' | 'failed';
  gpus: GpuHealth[];
}

/** `check-link send`'s reply: one TCP connection to a listener on another host. */
export interface LinkSendReport {
  ok: boolean;
  /** Round-trip time of a small message, median of a few (ms). */
  rttMs?: number;
  /** Bytes the receiver counted and over how long (its clock: sender-side buffers do not count). */
  bytes?: number;
  ms?: number;
  error?: ErrorInfo;
}

/** `check-compute`'s reply: a one-rank run of the planned config on this host. */
export interface ComputeReport {
  ok: boolean;
  /** Median step time of the measured steps (after warm-up), ms. */
  stepMs?: number;
  steps?: number;
  engine?: string;
  backend?: string;
  error?: ErrorInfo;
}

// ---- the result document (`cohort check --json`) ----

/** A problem the check found: the one error shape (ErrorFields, errors.ts) with code, host and hint required. */
export interface CheckProblem extends ErrorFields {
  severity: 'error' | 'warning';
  /** A profile host name; '*' when the problem is the whole cluster's (a consistency row names its hosts in the message). */
  host: string;
  code: string;
  hint: string;
}

export interface CheckLink {
  from: string;
  to: string;
  /** Megabits per second, measured by the receiver. */
  mbps: number;
  /** Round-trip time of a small message over that TCP connection (ms). */
  latencyMs: number;
  /**
   * 'ring': a hop of the ring the ranks would form; 'rendezvous': a follower (or a spare) reaching the
   * leader's port; 'spare': a ring hop a spare host would have in a lost follower's place (latency only).
   */
  kind: 'ring' | 'rendezvous' | 'spare';
}

export interface CheckHost {
  host: string;
  address: string;
  reachable: boolean;
  report?: HostCheckReport;
  /** Host clock minus this client's (ms), within half the exec's round trip. */
  clockOffsetMs?: number;
}

/** One row of the consistency table: a property and each host's value. */
export interface ConsistencyRow {
  what: string;
  values: Record<string, string>;
  /** 'error' when hosts differ in a way that breaks a run, 'warning' when they differ otherwise, 'same'. */
  verdict: 'same' | 'warning' | 'error';
}

export interface CheckPrediction {
  worldSize: number;
  /** Predicted step time: compute + exchange (ms). */
  stepMs: number;
  /** One rank's step time on its own (ms) and where it came from. */
  computeMs: number;
  computeSource: string;
  /** What the compute time was measured for (config and host types): a later check with the same key reuses it. */
  computeKey?: string;
  /** Gradient bytes each rank moves per step and the wire type. */
  gradientBytes: number;
  wire: 'fp32' | 'fp16';
  /** Ring allreduce over the slowest link (ms). */
  exchangeMs: number;
  /**
   * When ranks share one machine's cores (several slots, or hosts with one boot id): one rank's
   * step time with all those ranks computing at once (ms: computeMs × sharedRatio, at least
   * computeMs), and which ranks; the predicted step uses it in place of computeMs.
   */
  sharedComputeMs?: number;
  /** The ranks at once ÷ one rank alone, measured back to back (reused by a later check of the same plan). */
  sharedRatio?: number;
  sharing?: string;
  /** computeMs ÷ stepMs: the global rate as a fraction of worldSize × the one-rank rate. */
  scaling: number;
  bottleneck: string;
}

export interface CheckResult {
  v: 1;
  profile: string;
  checkedAt: string;
  durationMs: number;
  /** Where durationMs went, phase by phase (ms; absent on a check written before they were kept). */
  phasesMs?: CheckPhases;
  hosts: CheckHost[];
  links: CheckLink[];
  consistency: ConsistencyRow[];
  problems: CheckProblem[];
  /** Absent when no prediction could be made (say why in a problem). */
  prediction?: CheckPrediction;
  /** true when no error: a run would start. */
  ok: boolean;
  /**
   * A Slurm profile: the check's own short allocation (released when the check ended), and `spares`:
   * the partition's other nodes a run could be given then (up, not drained; absent: unknown), which
   * `cohort run --check` counts before it leaves a node with errors out (check-spares.ts).
   */
  allocation?: { jobId: string; nodes: string[]; spares?: string[] };
}

/**
 * The check's phases, one after another: reach (connect, Node, the bundle's manifest; a Slurm
 * check: the deploy to the login node), hosts (check-host everywhere), links (the ring's streams
 * and the rendezvous connections), compute (one rank, the ranks sharing cores; 0 when reused),
 * allocation (a Slurm check: the whole srun, hosts, links and compute inside it).
 */
export interface CheckPhases {
  reach: number;
  hosts?: number;
  links?: number;
  compute?: number;
  allocation?: number;
}

// ---- Slurm profiles: the checks inside one short allocation (`check-slurm` on the login node) ----

/** `check-slurm`'s request (one line on stdin): what to allocate and what to check there. */
export interface SlurmCheckRequest {
  /** Names the allocation (job name `cohort-check-<id>`) and its files under W/slurm-check/<id>/. */
  id: string;
  nodes: number;
  /** The run's placement options as srun takes them: --partition, --account, --gpus-per-node, the profile's extraArgs. */
  srunArgs: string[];
  engine: 'tfjs' | 'torch' | 'auto';
  python?: string;
  /** How long each ring hop streams (ms). */
  linkMs: number;
  /** How long to wait in the queue for the allocation (s) before giving up (srun --immediate). */
  queueWaitS: number;
  /** The allocation's time limit (minutes): it is released by Slurm then at the latest. */
  timeLimitMin: number;
  /**
   * When present, one rank of this config is measured (check-compute, cores ÷ tasksPerNode threads)
   * after the links: alone on node 0, or, when ranks share one machine's cores (core-sharing.ts:
   * nodes with one kernel boot id, several tasks per node), alone on that machine's first node and
   * then all of them at once. `alone: false` (History has one rank's time): only the sharing ranks
   * and their one-alone reference are measured.
   */
  compute?: { config: unknown; tasksPerNode: number; alone?: boolean };
  /**
   * Set by check-slurm for its nodes: the login node's clock on a TCP port; every node measures its
   * offset there, at SLURM_SRUN_COMM_HOST (srun's address in the step), else at these addresses.
   */
  clock?: { port: number; addresses: string[] };
}

/** A node's clock against the login node's (check-slurm's clock port): node minus login, ms; the round trip bounds it (± half). */
export type NodeClock = { offsetMs: number; rttMs: number } | { error: ErrorInfo };

/** `check-slurm`'s reply: every node's facts, the links between them, node 0's compute time. */
export interface SlurmCheckReply {
  jobId?: string;
  /** `error`: the node's check-host failed (no report). */
  nodes: { index: number; node: string; address: string; report?: HostCheckReport; error?: ErrorInfo; clock?: NodeClock }[];
  links: { from: string; to: string; kind: 'ring' | 'rendezvous'; port: number; report: LinkSendReport }[];
  compute?: ComputeReport & { node: string; threads: number };
  /** The ranks that share one machine's cores, each measured while all of them computed at once (after `compute`, their one alone). */
  shared?: (ComputeReport & { node: string })[];
  /** The partition's usable nodes besides the allocation, after it (trainer/agent/slurm-spares.ts); absent: unknown. */
  spares?: string[];
  /** Date.now() on the login node when it wrote this reply (the client's offset to the login node). */
  timeMs?: number;
  /** The allocation could not be had or the step failed: Slurm's own words. */
  error?: ErrorInfo;
}

/**
 * A check result as saved on disk, read by this version: a host's engine refusal saved before session
 * 8 as {error: message, hint} becomes the one error shape (code engine-unavailable). Pure; returns a copy only where it changed.
 */
export function upgradeCheckResult(r: CheckResult): CheckResult {
  const old = (e: unknown): e is { error: string; hint?: unknown } => typeof e === 'object' && e !== null && typeof (e as { error?: unknown }).error === 'string';
  if (!r.hosts?.some((h) => old(h.report?.engine))) return r;
  return {
    ...r,
    hosts: r.hosts.map((h) => {
      const e = h.report?.engine;
      if (!h.report || !old(e)) return h;
      return { ...h, report: { ...h.report, engine: { error: { code: 'engine-unavailable', message: e.error, ...(typeof e.hint === 'string' && e.hint ? { hint: e.hint } : {}) } } } };
    }),
  };
}
