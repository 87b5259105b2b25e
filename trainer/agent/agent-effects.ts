// What the host agent's transition function asks its shell to do (agent-lifecycle.ts): effects as
// data, run in order by run-agent.ts. Each names one piece of I/O.
import type { HostRunState, RunStateError } from '../protocol';
import type { ControlMsg } from './control';
import type { TimerName } from './agent-state';

/** A change to the host's state.json (`ended`: stamp endedAt). */
export interface RecordPatch {
  state?: HostRunState;
  error?: RunStateError;
  queuedBehind?: string | undefined;
  restarts?: number;
  ended?: boolean;
}

export type Effect =
  | { do: 'record'; patch: RecordPatch }
  /** An error event appended to the host's events.jsonl. */
  | { do: 'event'; event: import('../protocol').ErrorEvent }
  /** Rank 0's `done` appended to the host's events.jsonl (the run's end on this host). */
  | { do: 'record-done'; event: import('../protocol').DoneEvent }
  /** A line for rank `rank`'s log only, not the record (a failed attempt's `done` while the run restarts). */
  | { do: 'rank-line'; rank: number; text: string }
  | { do: 'log'; level: 'info' | 'warn'; message: string }
  /** A line for agent.log only (the record itself may be what cannot be written). */
  | { do: 'stderr'; message: string }
  | { do: 'emit-queued'; host: string; behind: string }
  /** The `restart` event; `resumeStep` absent: the shell reads the newest checkpoint. */
  | { do: 'emit-restart'; attempt: number; host: string; rank: number; reason: string; resumeStep?: number; code?: string; waitingFor?: string[]; waitMs?: number; excluded?: string; replacement?: string }
  | { do: 'listen' }
  | { do: 'connect'; withinMs: number }
  | { do: 'say-hello' }
  | { do: 'claim' }
  /** `to`: a follower's host, or 'leader'. */
  | { do: 'send'; to: string; msg: ControlMsg }
  | { do: 'accept-link'; host: string }
  | { do: 'refuse-link'; host: string }
  | { do: 'close-link'; host: string; why: string }
  | { do: 'spawn'; attempt: number; resume: boolean }
  | { do: 'kill-ranks' }
  /** Ask this host's rank `rank` for its stack (torch: SIGUSR1, its Python stack into its log; tfjs ranks have none to give). */
  | { do: 'dump-stack'; rank: number }
  | { do: 'timer'; name: TimerName; ms: number }
  | { do: 'clear-timer'; name: TimerName }
  | { do: 'clear-timers' }
  | { do: 'no-more-requeues'; restarts: number }
  /** Bad node out under Slurm: requeue the job with `node` excluded when the partition has an idle node; else feed `requeue-refused`. */
  | { do: 'requeue-excluding'; node: string; cause: import('../protocol').ErrorEvent }
  /** Stop: wait for the ranks to exit and the links to flush, then feed `stopped`. */
  | { do: 'stop' }
  /**
   * The final record is written: release the slots and exit with the status's code. `linger`: a leader
   * whose first start failed keeps listening until every follower rank heard the end (followersTold),
   * up to a follower's own connect window (issue 24 defect 10).
   */
  | { do: 'exit'; status: 'ok' | 'failed' | 'cancelled'; linger?: boolean };
