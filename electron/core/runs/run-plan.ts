// What a RunController follows (split from run-controller.ts, issue 24 item 7): the run's hosts and
// links, a batch scheduler's job, and the result the controller resolves with.
import type { CohortEvent, ErrorEvent, LaunchSpec, RunStatusLine, SchedulerQueue } from '../../../trainer/protocol';
import type { HostRecordRef } from '../../common';
import type { RunOutcome } from './controller-lifecycle';
import type { HostLink } from './host-link';

export interface HostLaunch {
  host: string;
  link: HostLink;
  /** This host's LaunchSpec (absent when attaching to a run started elsewhere). */
  spec?: LaunchSpec;
}

/**
 * A spare host of the profile (`spare: true`, issue 21 item 5): deployed to, running nothing. When a
 * restart moves a lost host's ranks to it, the controller starts its agent with the lost host's
 * ranks (spareSpec) and follows it like any host.
 */
export interface SpareLaunch {
  host: string;
  link: HostLink;
  /** The profile host's env (and COHORT_PYTHON), for its spec. */
  env: Record<string, string>;
  /** The profile host's GPU indices, one per slot. */
  gpus?: number[];
  /** Where it keeps the run's record once it runs (its workdir, the run's bundle there): RunMeta.spareRecord. */
  record: HostRecordRef;
  /** Set once a `restart` names this spare as the replacement of that (excluded) host. */
  replaces?: string;
}

/** The spare's LaunchSpec: the excluded host's (its ranks, rendezvous, control), under the spare's name, env and GPUs. */
export function spareSpec(excluded: LaunchSpec, spare: SpareLaunch): LaunchSpec {
  const ranks = excluded.ranks.map((r) => {
    const { gpu: _gpu, ...rest } = r;
    return spare.gpus?.[r.localRank] !== undefined ? { ...rest, gpu: spare.gpus[r.localRank]! } : rest;
  });
  const { slots: _slots, ...spec } = excluded;
  return { ...spec, host: spare.host, env: spare.env, ranks, role: 'follower' };
}

/**
 * Where a scheduled run waits: the scheduler's pending reason and its place in the queue (the
 * `queued` event's `slurm`), and, while a requeued job waits to run again (the run is
 * `restarting`), why Slurm requeued it and its Restarts count.
 */
export type SchedulerQueueState = SchedulerQueue & { restarting?: string; restarts?: number };

/** The scheduler's final word on a job (Slurm: JobState, Reason, NodeList). */
export interface SlurmJobEnd {
  jobId: string;
  state: string;
  reason: string;
  nodes: string;
  /** How many times the scheduler has run the job again (Slurm's Restarts). */
  restarts: number;
}

/**
 * A run placed by a batch scheduler (Slurm, cluster/slurm-job.ts): the controller submits it, waits
 * while it is queued, then follows the hosts the allocation gave it like any others. Stop is the
 * scheduler's (scancel), and its account of the end (time limit, node failure) names the reason.
 */
export interface ScheduledJob {
  readonly id: string | undefined;
  submit(): Promise<string>;
  /** Resolves with the allocation's hosts (leader first) once every node's agent has its record. */
  /** minAttempt: the records must be from this run of the job or a later one (a requeued job's). */
  waitRunning(onQueued: (q: SchedulerQueueState) => void, signal: AbortSignal, opts?: { minAttempt?: number }): Promise<HostLaunch[]>;
  /** Cancels the job; resolves once it has left the queue (bounded). */
  cancel(): Promise<void>;
  ended(): Promise<SlurmJobEnd | undefined>;
}

export interface RunPlan {
  runId: string;
  /** hosts[0] is the leader (rank 0's host). Empty for a scheduled run until its job runs. */
  hosts: HostLaunch[];
  /** Spare hosts that run nothing until a restart moves a lost host's ranks to one. */
  spares?: SpareLaunch[];
  /** Each host's ranks, for a plan without launch specs (attach): a spare's spec takes the excluded host's. */
  hostRanks?: Record<string, number[]>;
  /** Set: the run is a batch job; hosts come from its allocation. */
  scheduler?: ScheduledJob;
  /** Where each host keeps the record (kept in the local history so any client can attach later). */
  record?: HostRecordRef[];
  /** No contact with the leader for this long: the run is `lost` (default 60 s). */
  lostAfterMs?: number;
  /** The longest pause between this client's tries to re-follow a host or relaunch a lost host's agent (Timings.retryMaxMs; default 4 s). */
  retryMaxMs?: number;
  /** How long run-stop waits for the run to end (default 10 s). */
  stopWaitMs?: number;
}

export type { RunOutcome };

export interface RunResult {
  status: RunOutcome;
  /** The first error (the root cause), if the run failed. */
  error?: ErrorEvent;
  done?: Extract<CohortEvent, { type: 'done' }>;
  lastStep: number;
  /** The leader's state record, when it could be read. */
  state?: RunStatusLine;
  /** Hosts a stop was sent to that never confirmed it (down then): the history keeps them (RunMeta.stopOwed). */
  stopOwed?: string[];
}
