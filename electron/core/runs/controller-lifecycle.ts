// The client's RunController lifecycle as data (issue 24 item 1, client side): a state union and a
// pure `transition(state, input) → { state, effects }`, in the agent's vocabulary (agent-lifecycle.ts:
// phases, inputs, effects). The controller (run-controller.ts) is the shell: it turns what happens
// (a host command's reply, a record's event, the scheduler's word, a user's stop) into inputs and
// runs the effects (start or stop hosts, follow records, relaunch a lost host's agent, finish).
// Slurm and SSH differ only by the `scheduled` flag the inputs carry. The table of every
// (phase, input) pair is generated from this function into ARCHITECTURE.md (controller-table.ts).
//
// UNFINISHED (issue 24 item 1): the follow loops (run-follow re-follow with backoff, the lost-leader
// grace, a requeued job's re-follow) still keep their own per-host bookkeeping in the shell
// (controller-follow.ts, controller-scheduled.ts); the decisions about the run as a whole (start,
// stop, waiting for lost hosts, a stop seen, the end) are here.
import type { RunStatus } from '../../../trainer/protocol';

export type RunOutcome = RunStatus | 'lost';

export type ControllerPhase =
  | { k: 'idle' }
  /** A scheduled run: sbatch in flight. */
  | { k: 'submitting' }
  /** A scheduled run waits in the scheduler's queue (or its requeued job does). */
  | { k: 'queued' }
  /** run-start on every host, leader first. */
  | { k: 'starting' }
  /** The hosts' records are followed. */
  | { k: 'following' }
  /** The run waits for lost hosts (a restart's waitingFor); this client relaunches their agents. */
  | { k: 'awaiting-hosts'; waitingFor: string[] }
  /** A stop of a scheduled run waits for the scheduler's word: a job that already ended is not stopped. */
  | { k: 'checking-job'; reason: string }
  /** Stop commands are in flight (run-stop, or scancel). */
  | { k: 'stopping'; force: boolean }
  | { k: 'done'; status: RunOutcome };

export type ControllerPhaseName = ControllerPhase['k'];

export interface ControllerState {
  phase: ControllerPhase;
  scheduled: boolean;
  /** A stop was seen in some host's record (a `done` cancelled): another client stopped the run.
   *  A stop is final for every client: no lost host is relaunched after it (defect 6). */
  stopSeen: boolean;
}

export type ControllerInput =
  | { t: 'start' }
  | { t: 'attach' }
  | { t: 'submitted' }
  /** The scheduler refused the job, or it ended before its agents ran. */
  | { t: 'job-failed' }
  /** The scheduled job runs: its nodes are known. */
  | { t: 'job-running' }
  /** Slurm requeued the job: the run waits for its next run. */
  | { t: 'job-requeued' }
  | { t: 'hosts-started' }
  | { t: 'host-refused' }
  /** A restart in some host's record, naming the lost hosts it waits for (maybe none). */
  | { t: 'restart'; waitingFor: string[] }
  /** The run steps again: every lost host is back. */
  | { t: 'stepped' }
  /** The wait for a lost host is over (its restart's waitMs) and it is not back. */
  | { t: 'wait-over'; host: string }
  /** A `done` in some host's record, or a follower's state record ended (`cancelled`: a stop reached it). */
  | { t: 'record-done'; status: RunStatus }
  | { t: 'stop'; reason: string; force: boolean }
  /** The scheduler's word on a job asked to stop: `over` when it had already ended (its own state, not cancelled). */
  | { t: 'job-state'; over: boolean }
  /** The stop commands have returned (or timed out). */
  | { t: 'stop-sent' }
  /** The leader's record is drained and its state read: the outcome. */
  | { t: 'leader-ended'; status: RunOutcome }
  /** The leader could not be reached for lostAfterMs: it holds the outcome, so the run is lost from here. */
  | { t: 'leader-unreachable' }
  /** The client stops following (dispose): the run goes on on its hosts. */
  | { t: 'detach' };

export type ControllerEffect =
  | { e: 'submit' }
  | { e: 'wait-job' }
  | { e: 'start-hosts' }
  | { e: 'follow-hosts' }
  | { e: 'relaunch'; hosts: string[] }
  | { e: 'ask-job' }
  | { e: 'stop-hosts'; reason: string; force: boolean }
  | { e: 'tell'; level: 'info' | 'warn'; message: string }
  | { e: 'stop-following' }
  /** run-stop on every host once more, after a stop another client sent: a host that was down then
   *  (no stop marker) learns it now that the run's end was read, so no relaunch of it is accepted. */
  | { e: 'mark-stopped' }
  | { e: 'finish'; status: RunOutcome };

export interface Transition {
  state: ControllerState;
  effects: ControllerEffect[];
}

export const initialControllerState = (scheduled: boolean): ControllerState => ({ phase: { k: 'idle' }, scheduled, stopSeen: false });

export const isOver = (s: ControllerState): boolean => s.phase.k === 'done';
/** Whether a stop was asked (or the run is over): the shell then stops relaunching and re-following. */
export const isStopping = (s: ControllerState): boolean => s.phase.k === 'stopping' || s.phase.k === 'done';

/** The pure lifecycle rule. Pairs it does not name leave the state as it is and do nothing. */
export function transition(s: ControllerState, i: ControllerInput): Transition {
  const to = (phase: ControllerPhase, ...effects: ControllerEffect[]): Transition => ({ state: { ...s, phase }, effects });
  const same: Transition = { state: s, effects: [] };
  const p = s.phase;
  if (p.k === 'done') return same; // the end is final
  switch (i.t) {
    case 'start':
      if (p.k !== 'idle') return same;
      return s.scheduled ? to({ k: 'submitting' }, { e: 'submit' }) : to({ k: 'starting' }, { e: 'start-hosts' });
    case 'attach':
      if (p.k !== 'idle' && p.k !== 'starting') return same;
      return s.scheduled && p.k === 'idle' ? to({ k: 'queued' }, { e: 'wait-job' }) : to({ k: 'following' }, { e: 'follow-hosts' });
    case 'submitted':
      return p.k === 'submitting' ? to({ k: 'queued' }, { e: 'wait-job' }) : same;
    case 'job-failed':
      // A stop asked meanwhile: the job is gone, which is what was asked.
      if (p.k === 'stopping' || p.k === 'checking-job') return to({ k: 'done', status: 'cancelled' }, { e: 'finish', status: 'cancelled' });
      return to({ k: 'done', status: 'failed' }, { e: 'finish', status: 'failed' });
    case 'job-running':
      return p.k === 'queued' ? to({ k: 'following' }, { e: 'follow-hosts' }) : same;
    case 'job-requeued':
      return p.k === 'following' || p.k === 'awaiting-hosts' ? to({ k: 'queued' }, { e: 'wait-job' }) : same;
    case 'hosts-started':
      return p.k === 'starting' ? to({ k: 'following' }, { e: 'follow-hosts' }) : same;
    case 'host-refused':
      // The shell has stopped the hosts that did start (it knows which).
      return p.k === 'starting' ? to({ k: 'done', status: 'failed' }, { e: 'finish', status: 'failed' }) : same;
    case 'restart': {
      if (!i.waitingFor.length || (p.k !== 'following' && p.k !== 'awaiting-hosts')) return same;
      const known = p.k === 'awaiting-hosts' ? p.waitingFor : [];
      const fresh = i.waitingFor.filter((h) => !known.includes(h));
      if (!fresh.length) return same;
      // A stop seen in some record is final: the lost hosts stay down (defect 6).
      if (s.stopSeen) return { state: s, effects: [{ e: 'tell', level: 'info', message: `not relaunching ${fresh.join(', ')}: the run was stopped` }] };
      return to({ k: 'awaiting-hosts', waitingFor: [...known, ...fresh] }, { e: 'relaunch', hosts: fresh });
    }
    case 'stepped':
      return p.k === 'awaiting-hosts' ? to({ k: 'following' }) : same;
    case 'wait-over': {
      if (p.k !== 'awaiting-hosts' || !p.waitingFor.includes(i.host)) return same;
      const rest = p.waitingFor.filter((h) => h !== i.host);
      return to(rest.length ? { k: 'awaiting-hosts', waitingFor: rest } : { k: 'following' });
    }
    case 'record-done':
      if (i.status !== 'cancelled' || s.stopSeen) return same;
      // Another client's stop (or this one's) reached a host: no relaunch from here on.
      return { state: { ...s, stopSeen: true, phase: p.k === 'awaiting-hosts' ? { k: 'following' } : p }, effects: [] };
    case 'stop':
      if (p.k === 'stopping') return i.force && !p.force ? to({ k: 'stopping', force: true }, { e: 'stop-hosts', reason: i.reason, force: true }, { e: 'stop-following' }) : same;
      if (i.force) return to({ k: 'stopping', force: true }, { e: 'stop-hosts', reason: i.reason, force: true }, { e: 'stop-following' });
      if (p.k === 'checking-job') return same;
      // A scheduled run's job may have ended already: ask before calling it cancelled (defect 2).
      if (s.scheduled && p.k !== 'idle' && p.k !== 'submitting') return to({ k: 'checking-job', reason: i.reason }, { e: 'ask-job' });
      return to({ k: 'stopping', force: false }, { e: 'stop-hosts', reason: i.reason, force: false });
    case 'job-state':
      if (p.k !== 'checking-job') return same;
      if (i.over) return to({ k: 'following' }, { e: 'tell', level: 'info', message: 'the job had already ended before the stop: nothing to stop; its record tells how the run ended' });
      return to({ k: 'stopping', force: false }, { e: 'stop-hosts', reason: p.reason, force: false });
    case 'stop-sent':
      return p.k === 'stopping' ? to({ k: 'done', status: 'cancelled' }, { e: 'finish', status: 'cancelled' }) : same;
    case 'leader-ended': {
      // Another client's stop ended it (seen in a follower's record; the leader's own record may not
      // say so: its host was down, its agent died with it): cancelled, and every host reachable now
      // gets the stop marker (defect 6). An ok end stands: the run finished before the stop landed.
      if (i.status !== 'ok' && s.stopSeen && !s.scheduled && p.k !== 'stopping') return to({ k: 'done', status: 'cancelled' }, { e: 'mark-stopped' }, { e: 'finish', status: 'cancelled' });
      // A stop asked and the record ended otherwise (ok before the stop landed): the record's word stands.
      return to({ k: 'done', status: i.status }, { e: 'finish', status: i.status });
    }
    case 'leader-unreachable':
      if (p.k === 'stopping') return same; // the stop's own end decides
      // A stop seen in a follower's record while the leader is gone: the run cannot go on (a stop is final).
      if (s.stopSeen) return to({ k: 'done', status: 'cancelled' }, { e: 'finish', status: 'cancelled' });
      return to({ k: 'done', status: 'lost' }, { e: 'finish', status: 'lost' });
    case 'detach':
      return to({ k: 'done', status: 'lost' }, { e: 'stop-following' });
  }
}
