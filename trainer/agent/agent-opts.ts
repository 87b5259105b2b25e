// What starts a host agent (run-agent.ts): its options (Slurm's agent-slurm adds a scheduler), its
// exit codes; the waits from the host's environment are read in run-agent.ts (trainer/protocol/timings.ts).
import { HOST_WAIT_MS, isTerminalRunState, type ErrorEvent, type LaunchSpec, type RunStateRecord, type Timings } from '../protocol';
import type { AgentConfig, AgentInput } from './agent-state';
import { claimKey } from './claim-order';

export const AGENT_RUN_EXIT = { ok: 0, failed: 1, cancelled: 130 } as const;

export interface AgentRunOpts {
  trainerEntry: string;
  enginesDir: string;
  workdir: string;
  runId: string;
  /** Set when this agent runs on a node other than the one that serves its record (a Slurm node). */
  agentNode?: string;
  /** Leader: how long to wait for a lost host's agent to rejoin (default HOST_WAIT_MS). */
  hostWaitMs?: number;
  /** The heartbeat timeout, queue poll, silent-follower blame (default DEFAULT_TIMINGS; runDetachedAgent reads the host env, trainer/protocol/timings.ts). */
  timings?: Timings;
  /** Set under a scheduler that may run the job again (Slurm, agent-slurm in slurm.ts). */
  scheduler?: {
    /** The scheduler's restart count of this job (SLURM_RESTART_COUNT). */
    attempt: number;
    /** The job was submitted requeueable: a lost node is left to the scheduler while restarts are left. */
    requeueable: boolean;
    /** The leader of a job the scheduler ran again: why, and the run's restart count with this one. */
    requeued?: SchedulerRestart;
    /** Restarts spent: asks the scheduler not to run the job again; resolves to its refusal, if any. */
    noMoreRequeues: () => Promise<string | undefined>;
    /** Bad node out: runs the job again without `node` (its rank failed: `cause`); resolves to why not (undefined: requeued). */
    requeueExcluding?: (node: string, cause: ErrorEvent) => Promise<string | undefined>;
  };
}

/** A restart the scheduler made (a requeued job): the node it names and its reason. */
export interface SchedulerRestart {
  restarts: number;
  host: string;
  reason: string;
  /** The failed rank on `host` (bad node out); absent: the node itself failed. */
  rank?: number;
  /** Bad node out: the job runs again without `excluded`, `replacement` in its place. */
  excluded?: string;
  replacement?: string;
}

/** A leader's record already there and not ended: run-rejoin relaunched this agent after the leader host was lost (SSH hosts only). */
export function relaunchedOver(spec: LaunchSpec, opts: AgentRunOpts, prior: () => RunStateRecord | undefined): RunStateRecord | undefined {
  const p = !opts.scheduler && (spec.role ?? 'leader') === 'leader' ? prior() : undefined;
  return p && !isTerminalRunState(p.state) ? p : undefined;
}

/** The lifecycle's first input: a requeued job (the leader under a scheduler), a relaunched leader, a stop marker found. */
export function beginInput(cfg: AgentConfig, opts: AgentRunOpts, relaunched: RunStateRecord | undefined, stopMarker: boolean): AgentInput {
  const requeued = cfg.role === 'leader' ? opts.scheduler?.requeued : undefined;
  return { t: 'begin', ...(requeued ? { requeued } : {}), ...(relaunched ? { relaunched: { state: relaunched.state, lastStep: relaunched.lastStep ?? 0 } } : {}), stopMarker };
}

/** Bad node out under a scheduler: ask it to run the job again without `node`; resolves to why not (undefined: requeued). */
export function askRequeueExcluding(opts: AgentRunOpts, node: string, cause: ErrorEvent): Promise<string | undefined> {
  const ask = opts.scheduler?.requeueExcluding?.(node, cause) ?? Promise.resolve('no scheduler to ask');
  return ask.catch((err: Error) => err.message);
}

/** The lifecycle's configuration: what differs between leader and follower, SSH/local and Slurm. */
export function agentConfigOf(spec: LaunchSpec, opts: AgentRunOpts): AgentConfig {
  const role = spec.role ?? 'leader';
  return {
    role,
    host: spec.host,
    runId: spec.runId,
    maxRestarts: spec.maxRestarts ?? 0,
    followerRanks: spec.worldSize - spec.ranks.length,
    queue: spec.queue !== false,
    hostWaitMs: opts.hostWaitMs ?? HOST_WAIT_MS,
    ...(opts.timings ? { silentFollowerMs: opts.timings.silentFollowerMs, connectMs: opts.timings.followerConnectMs } : {}),
    claimKey: claimKey(opts.workdir),
    ...(opts.scheduler ? { scheduler: { requeueable: opts.scheduler.requeueable } } : {}),
    ...(spec.control ? { controlled: true } : {}),
    ...(role === 'follower' && spec.leader !== undefined && spec.control ? { leaderHost: spec.leader } : {}),
    ...(role === 'leader' && spec.spares?.length ? { spares: spec.spares } : {}),
  };
}

/** Restarts spent under a requeueing scheduler: ask it not to run the job again; what to log. */
export async function noMoreRequeues(opts: AgentRunOpts, restarts: number, max: number): Promise<['info' | 'warn', string]> {
  const refused = await opts.scheduler?.noMoreRequeues();
  if (refused) return ['warn', `restarts spent, but Slurm would not make the job non-requeueable (${refused}); a requeue will end the run without training`];
  return ['info', `restarts spent (${restarts} of ${max}): Slurm will not requeue the job again`];
}
