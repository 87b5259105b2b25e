// What hosts report across the Api: a probe's findings (GPUs, Node, Python/torch, Slurm), deploy
// progress and results, host keys to confirm, and connection tests. Its own module so api.ts holds
// the contract itself (CohortApi, its argument decoders, followRun); api.ts re-exports these, so
// the Api's shapes are still reached from one place (electron/common).
import type { ApiErrorInfo } from './api';

export interface GpuInfo {
  index: number;
  name: string;
  memoryBytes: number;
  driver: string;
  cuda: string;
  /** nvidia-smi's compute_cap, e.g. "8.0" (absent on drivers before R510). bf16 needs ≥ 8.0. */
  computeCap?: string;
}

/** A Slurm cluster as its login node describes it (probe of a scheduler profile). */
export interface SlurmProbe {
  version: string;
  partitions: { name: string; isDefault: boolean; avail: string; nodes: number; idleNodes: number; timeLimit: string; gres: string }[];
  nodes: { name: string; state: string; cpus: number; memMiB: number; gres: string }[];
  /** The user's accounts (sacctmgr), when the cluster has accounting. */
  accounts?: string[];
  accountsNote?: string;
  /** Whether a compute node saw a file written to the workdir here (a 1-node srun). */
  workdirShared: 'yes' | 'no' | 'unchecked';
  workdirNote?: string;
  /** Node on a compute node, as that srun saw it. */
  computeNode?: string;
}

/** What `probe` found on one host. */
export interface HostProbe {
  host: string;
  /** The profile's scheduler as seen from this (login) host. */
  slurm?: SlurmProbe;
  ok: boolean;
  error?: ApiErrorInfo;
  probedAt: string;
  os?: string;
  arch?: string;
  cores?: number;
  memBytes?: number;
  /** Node on the host's PATH (the trainer needs ≥ 20). */
  node?: { version: string; path: string; ok: boolean };
  gpus: GpuInfo[];
  tfjsNodeGpu: boolean;
  tfjsNode: boolean;
  /** The Python the agent would pick (a CUDA torch first) and its torch. */
  python?: { path: string; version: string };
  torch?: { version: string; cuda: boolean };
  /** Every Python interpreter found (profile's, system, PATH, venvs under the workdir, conda) and the torch each offers. */
  pythons?: { path: string; version: string; torch?: string; cuda?: boolean; cudaVersion?: string; gpus?: number }[];
}

/** One host's connect/deploy progress (onDeployProgress): of an explicit Deploy, or of a cluster
 *  launch being prepared (`launch` set: startRun has not resolved yet, so the run id comes here). */
export interface DeployProgress {
  host: string;
  /** 'connect': opening the SSH session; then check, upload (bytes of totalBytes), verify, and done
   *  or cached (the bundle was already there); 'failed' with `error`. */
  phase: 'connect' | 'check' | 'upload' | 'verify' | 'cached' | 'done' | 'failed';
  bytes: number;
  totalBytes: number;
  message?: string;
  /** With 'failed': what failed, with its code and hint. */
  error?: ApiErrorInfo;
  /** Set while a launch (startRun) prepares its hosts: the run's id and profile. */
  launch?: { runId: string; profile: string };
}

export interface DeployResult {
  host: string;
  ok: boolean;
  /** True when the bundle was already on the host (nothing transferred). */
  cached: boolean;
  bytesSent: number;
  remoteDir: string;
  error?: ApiErrorInfo;
}

export interface HostKeyInfo {
  host: string;
  address: string;
  port: number;
  keyType: string;
  /** OpenSSH style: SHA256:base64. */
  fingerprint: string;
  /** Set when the key differs from the recorded one (never trusted automatically). */
  knownFingerprint?: string;
}

export type ConnectionResult = { ok: true; host: string; latencyMs: number } | { ok: false; host: string; error: ApiErrorInfo; hostKey?: HostKeyInfo };
