// The host agent's lifecycle state, inputs and configuration (agent-lifecycle.ts runs them): plain
// data, printable and comparable, for leader and follower alike.
import { DEFAULT_TIMINGS, type DoneEvent, type ErrorEvent, type HostRunState, type RunStateError, type RunStatus } from '../protocol';
import type { ControlMsg } from './control';
import type { Effect } from './agent-effects';

export interface AgentConfig {
  role: 'leader' | 'follower';
  host: string;
  runId: string;
  maxRestarts: number;
  /** Leader: ranks on other hosts (0: a one-host run, no control channel). */
  followerRanks: number;
  /** false: busy slots fail the start (--no-queue). */
  queue: boolean;
  /** Under a scheduler that may run the job again (Slurm). */
  scheduler?: { requeueable: boolean };
  /** The spec has the run's control endpoint (every host of a run over more than one host): a leader listens on it, a follower connects to it. */
  controlled?: boolean;
  /** Follower on SSH hosts: the leader's host, waited for when it is lost (undefined: not waited for, Slurm). */
  leaderHost?: string;
  hostWaitMs: number;
  /** Leader: a follower agent silent this long is blamed for a peer-lost (Timings.silentFollowerMs; default SILENT_FOLLOWER_MS). */
  silentFollowerMs?: number;
  /** Follower: how long it tries to reach the leader at the start; the leader waits twice this for its followers (Timings.followerConnectMs; default CONNECT_TIMEOUT_MS). */
  connectMs?: number;
  /** Leader: spare hosts (LaunchSpec.spares) a lost follower host's ranks may move to. */
  spares?: string[];
  /** This host's place in the global claim order (claim-order.ts's claimKey of its workdir). */
  claimKey: string;
}

export interface Failure {
  error: ErrorEvent;
  consequence: boolean;
}

export type Phase =
  | { k: 'starting' }
  /** `by`: the follower host that is queued (the leader's own slots may be held). */
  | { k: 'queued'; behind: string; by?: string }
  /** Slots held: the leader waits for every follower to be ready; a follower for the leader's go. */
  | { k: 'rendezvous' }
  | { k: 'running' }
  /** Leader: a failure came; the ranks are being stopped and the blame grace runs before deciding. */
  | { k: 'halting'; failures: Failure[] }
  /** Leader: restart decided; waits for every rank of the attempt to exit and for lost hosts to come back. */
  | { k: 'restarting'; cause: ErrorEvent; waitingFor: string[]; told: boolean; swap?: NodeSwap }
  /**
   * Leader under a requeueing scheduler: a node is lost, Slurm ends this run of the job. `excluding`:
   * a rank failed on a node that stays up; the shell asks Slurm to run the job again without that
   * node (requeue-excluding); if it cannot (no idle node), `requeue-refused` restarts in the allocation.
   */
  | { k: 'awaiting-scheduler'; error: RunStateError; excluding?: ErrorEvent }
  /** Follower: halted by the leader, waits for its next go. */
  | { k: 'halted' }
  /** Follower: the leader's agent is gone; waits for its relaunch (run-rejoin by a client). */
  | { k: 'awaiting-leader'; leader: string }
  /** Ending: ranks killed, links flushed; then `stopped`. */
  | { k: 'stopping'; status: EndStatus; error?: RunStateError }
  | { k: 'done'; status: EndStatus; error?: RunStateError };
export type PhaseName = Phase['k'];
/** How a run ended: the protocol's one RunStatus (isFinished's set, run-view.ts). */
export type EndStatus = RunStatus;

/** Bad node out (issue 21 item 5): the host or node left out of the next attempt, and who took its ranks. */
export interface NodeSwap {
  excluded: string;
  replacement: string;
}

export interface FollowerView {
  ranks: number;
  ready: boolean;
  /** The last attempt all of its ranks exited from (-1: none). */
  exited: number;
  /** Its place in the global claim order (its hello's key; its host name when an older agent sent none). */
  key: string;
  /** Asked to claim its slots (the `claim` message sent; its claim may be queued). */
  asked: boolean;
}

export interface AgentState {
  phase: Phase;
  attempt: number;
  restarts: number;
  /** The host's ranks run (spawned and not all exited). */
  ranksUp: boolean;
  leases: boolean;
  /** This host's claim is under way (its turn in the claim order came; queued while the slots are busy). */
  claiming: boolean;
  /** The attempt in which rank 0 reported `done` (-1: none yet). */
  doneAttempt: number;
  /**
   * Rank 0's `done`, held while this host's ranks still run: recorded when they have all exited, so
   * their last output lines (read from their pipes after rank 0's `done`) go into the record before it,
   * and a record, like a `--json` stream, ends with `done` (seen: rank 1's last stderr line after it).
   */
  heldDone?: DoneEvent;
  /** Leader: this host's ranks of the attempt all ended ok. */
  ownOk: boolean;
  followers: Record<string, FollowerView>;
  /** Leader: a restart of an attempt no rank runs any more (requeued job, relaunched leader), done at go. */
  overCause?: { cause: ErrorEvent; attempt: number; swap?: NodeSwap };
  spentSaid: boolean;
  /** Follower: a pre-launch refusal told to the leader once connected. */
  refusal?: RunStateError;
  connected: boolean;
  queuedBehind?: string;
  lastCheckpointStep: number;
  ioWarned: boolean;
  /** Leader: relaunched over the record of a leader agent lost with its host (begin's `relaunched`). */
  relaunched?: boolean;
  /** Leader: hosts excluded from the run after they were lost (their ranks moved to a spare); a hello from one is refused. */
  excluded: string[];
}

/** Link health at the blame grace's end (the shell measures the sockets). */
export interface LinkHealth {
  host: string;
  closed: boolean;
  silentMs: number;
}

export type AgentInput =
  /** `requeued.excluded`: the scheduler ran the job again without that node (`replacement` in its place); `rank`: the failed rank there. */
  | { t: 'begin'; requeued?: { restarts: number; host: string; reason: string; rank?: number; excluded?: string; replacement?: string }; relaunched?: { state: HostRunState; lastStep: number }; stopMarker?: boolean }
  | { t: 'prepared' }
  | { t: 'refused'; error: RunStateError }
  /** The agent cannot go on (a bad spec, the control port taken): the run fails with it. */
  | { t: 'fatal'; error: RunStateError }
  /** `warnings`: stale or damaged leases the claim took over (leases.ts), each logged. */
  | { t: 'slots-held'; warnings?: string[] }
  | { t: 'slots-busy'; slot: number; busyBy: string; warnings?: string[] }
  /** Rank 0's `done` event: recorded as the run's end, or not when its attempt is being replaced (isReplacingAttempt). */
  | { t: 'rank-done'; event: DoneEvent }
  | { t: 'rank-error'; event: ErrorEvent; fromExit: boolean }
  | { t: 'ranks-exited'; attempt: number; ok: boolean; noDone?: ErrorEvent }
  | { t: 'hello'; host: string; ranks: number; tokenOk: boolean; priorClosed: boolean; key?: string }
  | { t: 'follower-msg'; host: string; msg: ControlMsg }
  | { t: 'follower-lost'; host: string; why: string }
  | { t: 'leader-connected' }
  | { t: 'leader-msg'; msg: ControlMsg }
  | { t: 'leader-lost'; why: string }
  | { t: 'connect-failed'; message: string; addr: string }
  | { t: 'timer'; name: TimerName; links?: LinkHealth[] }
  | { t: 'signal'; why: string }
  | { t: 'io-error'; what: string; message: string }
  /** The scheduler would not run the job again without the failed node (no idle node, refused): restart in the allocation. */
  | { t: 'requeue-refused'; why: string }
  | { t: 'stopped' };
export type InputName = AgentInput['t'];
export type TimerName = 'blame' | 'host-wait' | 'leader-wait' | 'followers-deadline';

export interface Step {
  state: AgentState;
  effects: Effect[];
}

export const BLAME_GRACE_MS = 1500;
export const DECIDE_MS = 200;
/** A follower agent silent this long (it beats every second) is taken for lost when a peer-lost needs a cause. */
export const SILENT_FOLLOWER_MS = DEFAULT_TIMINGS.silentFollowerMs;
export const CONNECT_TIMEOUT_MS = DEFAULT_TIMINGS.followerConnectMs;
/**
 * Codes that describe a consequence of another rank's failure, never the cause. `rank-hung` names
 * the hung rank itself (rank and host are its), but a whole host gone silent looks the same from a
 * peer, so a silent follower host, when there is one, is the story; else the rank-hung report is
 * (agent-leader's decide), over the peers' peer-lost.
 */
export const CONSEQUENCE = new Set(['peer-lost', 'rank-hung']);

export function initialState(): AgentState {
  return { phase: { k: 'starting' }, attempt: 0, restarts: 0, ranksUp: false, leases: false, claiming: false, doneAttempt: -1, ownOk: false, followers: {}, spentSaid: false, connected: false, lastCheckpointStep: 0, ioWarned: false, excluded: [] };
}

export const isEnding = (s: AgentState): boolean => s.phase.k === 'stopping' || s.phase.k === 'done';
/** A failed attempt is being replaced by another (its leftovers, e.g. a `done failed`, are not the run's). */
export const isReplacingAttempt = (s: AgentState): boolean => s.phase.k === 'halting' || s.phase.k === 'restarting' || s.phase.k === 'awaiting-scheduler';
/** Leader: every rank on other hosts has said hello (and so heard the run's end once it ended). */
export const followersTold = (cfg: AgentConfig, s: AgentState): boolean => Object.values(s.followers).reduce((n, f) => n + f.ranks, 0) >= cfg.followerRanks;
/** The record's state word for a phase. */
export function recordStateOf(p: Phase): HostRunState {
  switch (p.k) {
    case 'queued':
      return 'queued';
    case 'running':
    case 'halting':
      return 'running';
    case 'restarting':
    case 'awaiting-scheduler':
    case 'halted':
    case 'awaiting-leader':
      return 'restarting';
    case 'done':
      return p.status;
    default:
      return 'starting';
  }
}

export const errorOf = (e: ErrorEvent): RunStateError => ({ host: e.host, rank: e.rank, message: e.message, ...(e.code ? { code: e.code } : {}), ...(e.hint ? { hint: e.hint } : {}) });
export const errorEvent = (e: RunStateError & { logTail?: string[] }, time = 0): ErrorEvent => ({
  v: 1,
  time,
  type: 'error',
  rank: e.rank,
  host: e.host,
  message: e.message,
  logTail: e.logTail ?? [],
  ...(e.code ? { code: e.code } : {}),
  ...(e.hint ? { hint: e.hint } : {}),
});
