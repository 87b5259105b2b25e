// The on-host record of a durable run (`<workdir>/runs/<runId>/state.json`) and what the host
// commands print (run-start, run-stop, run-status). Written by the host agent, read by clients.
import type { ErrorFields, ErrorInfo } from './errors';
import { FINISHED_STATUSES, isFinished } from './run-view';
import { num, obj, oneOf, optNum, optStr, str, type Obj } from './validate';

export const HOST_RUN_STATES = ['queued', 'starting', 'running', 'restarting', 'ok', 'failed', 'cancelled'] as const;
export type HostRunState = (typeof HOST_RUN_STATES)[number];
export const TERMINAL_RUN_STATES: readonly HostRunState[] = FINISHED_STATUSES;
/** isFinished (run-view.ts) for the hosts' record states. */
export const isTerminalRunState = (s: HostRunState): boolean => isFinished(s);

/**
 * The error in a host's state.json: the one error shape (ErrorFields, errors.ts) with its host and
 * rank required. The agent writes the failure's `hint` there as its `error` event carries it (since
 * session 8); a record without one, as every record written before, reads as it did.
 */
export interface RunStateError extends ErrorFields {
  host: string;
  /** -1 when the failure is not a rank's (a host lost, a bad spec, busy slots). */
  rank: number;
}

export interface RunStateRecord {
  v: 1;
  runId: string;
  host: string;
  role: 'leader' | 'follower';
  state: HostRunState;
  agentPid: number;
  /**
   * Set when the agent runs on another machine than the one serving this record (a Slurm compute
   * node writing to the shared workdir, read through the login node): its pid means nothing there,
   * so readers judge liveness by the updatedAt beat (recordAgentAlive).
   */
  agentNode?: string;
  /** Slurm's restart count of the job this record's agent ran in (SLURM_RESTART_COUNT; 0: first run). A requeued job's agents rewrite the record with a higher one. */
  schedulerAttempt?: number;
  startedAt: number;
  /** Refreshed at least every 2 s while the agent lives. */
  updatedAt: number;
  lastStep?: number;
  /** The run holding the slots this one waits for (state `queued`). */
  queuedBehind?: string;
  restarts: number;
  error?: RunStateError;
  endedAt?: number;
}

/** run-status adds the liveness check: false when a non-terminal record's agent is gone. */
export type RunStatusLine = RunStateRecord & { agentAlive: boolean };

export function decodeRunState(value: unknown): RunStateRecord {
  const o = obj(value, 'state');
  const p = 'state';
  const r: RunStateRecord = {
    v: 1,
    runId: str(o, 'runId', p, { nonEmpty: true }),
    host: str(o, 'host', p),
    role: oneOf(o, 'role', p, ['leader', 'follower'] as const),
    state: oneOf(o, 'state', p, HOST_RUN_STATES),
    agentPid: num(o, 'agentPid', p, { int: true, min: 0 }),
    startedAt: num(o, 'startedAt', p, { min: 0 }),
    updatedAt: num(o, 'updatedAt', p, { min: 0 }),
    restarts: num(o, 'restarts', p, { int: true, min: 0 }),
  };
  const lastStep = optNum(o, 'lastStep', p, { int: true, min: 0 });
  if (lastStep !== undefined) r.lastStep = lastStep;
  const agentNode = optStr(o, 'agentNode', p);
  if (agentNode !== undefined) r.agentNode = agentNode;
  const schedulerAttempt = optNum(o, 'schedulerAttempt', p, { int: true, min: 0 });
  if (schedulerAttempt !== undefined) r.schedulerAttempt = schedulerAttempt;
  const behind = optStr(o, 'queuedBehind', p);
  if (behind !== undefined) r.queuedBehind = behind;
  const endedAt = optNum(o, 'endedAt', p, { min: 0 });
  if (endedAt !== undefined) r.endedAt = endedAt;
  if (o.error !== undefined) {
    const e: Obj = obj(o.error, 'state.error');
    const code = optStr(e, 'code', 'state.error');
    const hint = optStr(e, 'hint', 'state.error');
    r.error = { host: str(e, 'host', 'state.error'), rank: num(e, 'rank', 'state.error', { int: true, min: -1 }), message: str(e, 'message', 'state.error'), ...(code === undefined ? {} : { code }), ...(hint === undefined ? {} : { hint }) };
  }
  return r;
}

/**
 * Exit codes of the host commands (besides 0 = ok): the one table, read by the hosts and the
 * client alike (never a bare number). recordDamaged: the run's state.json cannot be read (cut
 * short, not JSON): asking again will not help (issue 24 defect 9).
 */
export const HOST_CMD_EXIT = { failed: 1, badSpec: 2, usage: 3, agentLost: 4, noSuchRun: 5, recordDamaged: 6 } as const;

/** What run-start prints on success (one JSON line). */
export interface RunStartReply {
  runId: string;
  host: string;
  agentPid: number;
  state: HostRunState;
}
/** What run-remove prints when it removed a run's record on a host (one JSON line; `cohort runs rm --hosts`). */
export interface RunRemoveReply {
  runId: string;
  /** The run directory removed (`<workdir>/runs/<id>`: events, state, spec, logs, default checkpoints). */
  dir: string;
  files: number;
  bytes: number;
  /** Checkpoint files among them (the run directory's `checkpoints/`). */
  checkpoints: number;
  /** A `--checkpoint-dir` outside the run directory: left in place (it may hold other runs' files). */
  keptCheckpointDir?: string;
}
/** What a host command prints when it fails (one JSON line): the one error wire shape (ErrorInfo, errors.ts). */
export interface HostCmdError {
  error: ErrorInfo;
}
