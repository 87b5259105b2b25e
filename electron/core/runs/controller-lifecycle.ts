// The client's RunController lifecycle as data (issue 24 item 1, client side): a state union and a
// pure `transition(state, input) → { state, effects }`, in the agent's vocabulary (agent-lifecycle.ts:
// phases, inputs, effects). The controller (run-controller.ts) is the shell: it turns what happens
// (a host command's reply, a record's event, the scheduler's word, a user's stop) into inputs and
// runs the effects (start or stop hosts, follow records, relaunch a lost host's agent, finish).
// Slurm and SSH differ only by the `scheduled` flag the inputs carry. The table of every
// (phase, input) pair is generated from this function into ARCHITECTURE.md (controller-table.ts).
// Each host's follow is here too (its re-follow backoff, the grace a dead leader's record gets, how
// its `run-follow` ended, a silent host, a requeued job's offsets); the shell keeps only the bytes:
// the command, its byte offset and when the host was last heard from (controller-follow.ts).
// start() and attach() only feed the first input: submitting the job, waiting for it and starting the
// hosts are effects too, run by the shell like every other. A stop asked while the hosts start waits
// for their `run-start`s to return (a `run-stop` racing a `run-start` finds no record and the agent
// starts after it, orphaned), then stops them all.
import { DEFAULT_TIMINGS, HOST_CMD_EXIT, isTerminalRunState, type HostRunState, type RunStatus } from '../../../trainer/protocol';
import { slurmJobOver } from './host-replies';
import type { SlurmJobEnd } from './run-plan';

export type RunOutcome = RunStatus | 'lost';

export type ControllerPhase =
  | { k: 'idle' }
  /** A scheduled run: sbatch in flight. */
  | { k: 'submitting' }
  /** A scheduled run waits in the scheduler's queue (or its requeued job does). */
  | { k: 'queued' }
  /** run-start on every host, leader first; `stop`: a stop asked meanwhile, sent once they have started. */
  | { k: 'starting'; stop?: { reason: string; force: boolean } }
  /** The hosts' records are followed. */
  | { k: 'following' }
  /** The run waits for lost hosts (a restart's waitingFor); this client relaunches their agents. */
  | { k: 'awaiting-hosts'; waitingFor: string[] }
  /** A stop of a scheduled run waits for the scheduler's word: a job that already ended is not stopped. */
  | { k: 'checking-job'; reason: string }
  /** A scheduled run's leader record ended not ok with no stop asked: the scheduler is asked how the
   *  job ended (`status`: the record's word; `attempt`: the job's run that was followed; `tries`: asks
   *  of a job still finishing so far; `stop`: a stop asked meanwhile, decided by the answer). */
  | { k: 'job-ending'; status: RunOutcome; attempt: number; tries: number; stop?: string }
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
  /** The hosts followed, the leader first (attach, or the scheduled job's nodes). */
  hosts: string[];
  /** Each host's follow (a spare's too, from its first exit). */
  follows: Record<string, FollowBook>;
  /** A requeued job: where each node index's record was left off, for the next run's follow. */
  resumeOffsets: number[];
  /** The re-follow backoff grows to this at most (Timings.retryMaxMs). */
  retryMaxMs: number;
  /** The status of the last `done` event in the record (record-done with `event`): the run's own end, told as is. */
  done?: RunStatus;
}

/** One host's follow, as the transition keeps it. */
export interface FollowBook {
  /** Re-follows after a dropped link so far (the backoff's index). */
  attempt: number;
  /** The leader's agent was found dead once (its followers get a moment to say they wait for it). */
  deadOnce: boolean;
}

/** How a host's `run-follow` ended for good (its exit code, HOST_CMD_EXIT). */
export type FollowEnd = 'drained' | 'agent-lost' | 'no-such-run' | 'record-damaged';

/** Between re-follows of a dropped link (at most the state's retryMaxMs). */
export const FOLLOW_BACKOFF_MS = [250, 500, 1000, 2000, 4000];
/** A dead leader agent's record is read again after this long: its followers need a moment to say they wait for it. */
export const LEADER_DEAD_GRACE_MS = 3000;

export type ControllerInput =
  | { t: 'start' }
  /** Follow the run's hosts (leader first) from the start of their records. */
  | { t: 'attach'; hosts: string[] }
  | { t: 'submitted' }
  /** The scheduler refused the job, or it ended before its agents ran. */
  | { t: 'job-failed' }
  /** The scheduled job runs: its nodes are known (leader first). */
  | { t: 'job-running'; hosts: string[] }
  /** The scheduler's account of the job (ask-end's answer; undefined: it said nothing); `offsets`: where
   *  each node index's record is followed to (a requeued job's next run goes on from there). */
  | { t: 'job-end'; end?: SlurmJobEnd; offsets: number[] }
  | { t: 'hosts-started'; hosts: string[] }
  | { t: 'host-refused' }
  /** A restart in some host's record, naming the lost hosts it waits for (maybe none). */
  | { t: 'restart'; waitingFor: string[] }
  /** The run steps again: every lost host is back. */
  | { t: 'stepped' }
  /** The wait for a lost host is over (its restart's waitMs) and it is not back. */
  | { t: 'wait-over'; host: string }
  /** A `done` event in the record (`event`), or a follower's state record ended / the stop question found a stop (`cancelled`: a stop reached it). */
  | { t: 'record-done'; status: RunStatus; event?: boolean }
  | { t: 'stop'; reason: string; force: boolean }
  /** The scheduler's account of a job asked to stop (ask-job's answer; undefined: it said nothing). */
  | { t: 'job-state'; end?: SlurmJobEnd }
  /** The stop commands have returned (or timed out). */
  | { t: 'stop-sent' }
  /** The leader's record is drained and its state read: the outcome (`attempt`: a scheduled job's run
   *  the record was written by, its state record's schedulerAttempt). */
  | { t: 'leader-ended'; status: RunOutcome; attempt?: number }
  /** A host's `run-follow` ended (code: its exit code, null when the link dropped); `silent`: the host
   *  has not been heard from for lostAfterMs (the leader holds the outcome: the run is lost from here). */
  | { t: 'follow-exit'; host: string; leader: boolean; code: number | null; silent: boolean }
  /** The client stops following (dispose): the run goes on on its hosts. */
  | { t: 'detach' };

export type ControllerEffect =
  /** sbatch: its answer is `submitted` or `job-failed`. */
  | { e: 'submit' }
  /** Wait while the job is queued (a requeued job: for its next run); its answer is `job-running` or `job-failed`. */
  | { e: 'wait-job'; requeue?: { attempt: number; reason: string } }
  /** run-start on every host, leader first; the answer is `hosts-started` or `host-refused`. */
  | { e: 'start-hosts' }
  /** Follow every host's record, each from its offset (absent: 0). */
  | { e: 'follow-hosts'; offsets: Record<string, number> }
  /** Run that host's `run-follow` again, from its offset, after `afterMs`. */
  | { e: 'refollow'; host: string; afterMs: number }
  /** That host's record is followed to its end: tell how (an error for the leader's), read the outcome (leader) or how a follower ended. */
  | { e: 'follow-ended'; host: string; leader: boolean; end: FollowEnd }
  /** That host was not heard from for lostAfterMs: told (the leader's as the run's error); its follow ends. */
  | { e: 'host-silent'; host: string; leader: boolean }
  | { e: 'relaunch'; hosts: string[] }
  | { e: 'ask-job' }
  /** Ask the scheduler how the job ended, after `afterMs`; the answer is `job-end`. */
  | { e: 'ask-end'; afterMs: number }
  /** Slurm requeued the job: the last run's follows retire, the queue listeners hear it restarting. */
  | { e: 'requeued'; jobId: string; reason: string; restarting: string }
  /** An error the controller tells (the scheduler's account of an end: its code, host and words). */
  | { e: 'error'; host: string; message: string; code: string; hint?: string }
  /** run-stop on every host (a scheduled run: scancel); stop-sent follows `settleMs` after they return
   *  (a host that could not be reached cannot confirm; a job still queued has nothing to follow: at once). A forced stop: 2 s. */
  | { e: 'stop-hosts'; reason: string; force: boolean; settleMs?: number }
  | { e: 'tell'; level: 'info' | 'warn'; message: string }
  | { e: 'stop-following' }
  /** run-stop on every host once more, after a stop another client sent: a host that was down then
   *  (no stop marker) learns it now that the run's end was read, so no relaunch of it is accepted. */
  | { e: 'mark-stopped' }
  /** The end, told once to every consumer. `tellsDone`: the record has no `done` event, the controller tells one with this status (see `endRun`). */
  | { e: 'finish'; status: RunOutcome; tellsDone?: RunStatus };

export interface Transition {
  state: ControllerState;
  effects: ControllerEffect[];
}

export const initialControllerState = (scheduled: boolean, retryMaxMs: number = DEFAULT_TIMINGS.retryMaxMs): ControllerState => ({ phase: { k: 'idle' }, scheduled, stopSeen: false, hosts: [], follows: {}, resumeOffsets: [], retryMaxMs });

export const isOver = (s: ControllerState): boolean => s.phase.k === 'done';
/** Whether a stop was asked (or the run is over): the shell then stops relaunching and re-following. */
export const isStopping = (s: ControllerState): boolean => s.phase.k === 'stopping' || s.phase.k === 'done';

/** A stop was asked (or is being checked with the scheduler, or waits for the hosts' starts or the scheduler's account of the end). */
export const stopAsked = (s: ControllerState): boolean => s.phase.k === 'stopping' || s.phase.k === 'checking-job' || ((s.phase.k === 'starting' || s.phase.k === 'job-ending') && !!s.phase.stop);

/** A job still finishing is asked again this often, this many times (Slurm counts a requeue before it signals the job's steps). */
export const JOB_END_POLL_MS = 500;
export const JOB_END_TRIES = 20;

/** The scheduler's own ends, in words: a job so ended is `failed` with its reason even though its agents only saw a SIGTERM. */
const SLURM_ENDS: Record<string, (end: SlurmJobEnd) => string> = {
  TIMEOUT: () => 'it reached its time limit',
  NODE_FAIL: (end) => `node ${end.nodes} failed`,
  PREEMPTED: () => 'it was preempted',
  OUT_OF_MEMORY: () => 'it ran out of memory',
  BOOT_FAIL: () => 'a node failed to boot',
  DEADLINE: () => 'it reached its deadline',
};
/** The run waits for this (lost) host. */
export const waitsFor = (s: ControllerState, host: string): boolean => s.phase.k === 'awaiting-hosts' && s.phase.waitingFor.includes(host);

/**
 * The run's end: `finish` with the outcome. A run whose record has no `done` event gets one from the
 * controller (the outcome; lost: failed), so every consumer (the CLI printer, history, Live) sees an
 * end; a recorded `done` stands as told, even when the outcome differs (a state record that says
 * cancelled after an ok done).
 */
function endRun(s: ControllerState, status: RunOutcome, ...before: ControllerEffect[]): Transition {
  return { state: { ...s, phase: { k: 'done', status } }, effects: [...before, { e: 'finish', status, ...(s.done ? {} : { tellsDone: status === 'lost' ? 'failed' : status }) }] };
}

/**
 * The leader's record is drained: the outcome is its state record's when that has ended, else its
 * `done` event's, else failed when an error was told and the record exists, else lost (the shell
 * reads the state record; a scheduled run may then wait for a requeue or ask the scheduler).
 */
export function recordOutcome(s: ControllerState, o: { record?: HostRunState; errored: boolean; recordGone: boolean }): RunOutcome {
  if (o.record && isTerminalRunState(o.record)) return o.record as RunStatus;
  if (s.done) return s.done;
  return o.errored && !o.recordGone ? 'failed' : 'lost';
}

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
      if (p.k !== 'idle') return same;
      if (s.scheduled && p.k === 'idle') return to({ k: 'queued' }, { e: 'wait-job' });
      return follow(s, i.hosts, {});
    case 'submitted':
      return p.k === 'submitting' ? to({ k: 'queued' }, { e: 'wait-job' }) : same;
    case 'job-failed':
      // A stop asked meanwhile: the job is gone, which is what was asked.
      if (p.k === 'stopping' || p.k === 'checking-job') return endRun(s, 'cancelled');
      return endRun(s, 'failed');
    case 'job-running':
      // A requeued job's next run: each node index's record goes on from where the last run's left off
      // (the allocation may have other nodes now). While a stop is checked with the scheduler the
      // nodes are followed too (the job may have ended on its own).
      if (p.k !== 'queued' && p.k !== 'checking-job') return same;
      return follow(s, i.hosts, Object.fromEntries(i.hosts.flatMap((h, n) => (s.resumeOffsets[n] === undefined ? [] : [[h, s.resumeOffsets[n]]]))), p.k === 'checking-job' ? p : undefined);
    case 'job-end':
      return p.k === 'job-ending' ? jobEnd(s, p, i) : same;
    case 'hosts-started':
      if (p.k === 'starting' && p.stop) {
        // The stop asked while they started: now that every run-start has returned, run-stop reaches each agent.
        const stop = stopHosts(s, p.stop.reason, p.stop.force);
        if (p.stop.force) return { state: { ...s, phase: { k: 'stopping', force: true }, hosts: i.hosts }, effects: [stop] };
        return { ...follow(s, i.hosts, {}, { k: 'stopping', force: false }), effects: [{ e: 'follow-hosts', offsets: {} }, stop] };
      }
      if (p.k === 'starting') return follow(s, i.hosts, {});
      // A stop asked while the hosts started: their records are followed to the stop's end.
      return p.k === 'stopping' && !p.force ? follow(s, i.hosts, {}, p) : same;
    case 'host-refused':
      // The shell has stopped the hosts that did start (it knows which).
      if (p.k !== 'starting') return same;
      // (a stop asked meanwhile: nothing of the run runs, which is what was asked)
      return endRun(s, p.stop ? 'cancelled' : 'failed');
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
    case 'record-done': {
      // A `done` event is the run's own end, told as is (the finish tells none of its own).
      const t = i.event ? { ...s, done: i.status } : s;
      if (i.status !== 'cancelled' || s.stopSeen) return { state: t, effects: [] };
      // Another client's stop (or this one's) reached a host: no relaunch from here on.
      return { state: { ...t, stopSeen: true, phase: p.k === 'awaiting-hosts' ? { k: 'following' } : p }, effects: [] };
    }
    case 'stop':
      // The hosts are being started: the stop waits for their run-starts (hosts-started sends it).
      if (p.k === 'starting') {
        if (p.stop && (p.stop.force || !i.force)) return same;
        return to({ k: 'starting', stop: { reason: i.reason, force: i.force } }, { e: 'tell', level: 'info', message: 'the stop is sent to the hosts once their agents have started (a stop sent sooner could miss an agent still starting)' });
      }
      if (p.k === 'stopping') return i.force && !p.force ? to({ k: 'stopping', force: true }, stopHosts(s, i.reason, true), { e: 'stop-following' }) : same;
      if (i.force) return to({ k: 'stopping', force: true }, stopHosts(s, i.reason, true), { e: 'stop-following' });
      if (p.k === 'checking-job') return same;
      // The record has ended: the scheduler's answer decides (a requeued job is cancelled, an ended one keeps its record's word).
      if (p.k === 'job-ending') return p.stop ? same : to({ ...p, stop: i.reason });
      // A scheduled run's job may have ended already: ask before calling it cancelled (defect 2).
      if (s.scheduled && p.k !== 'idle' && p.k !== 'submitting') return to({ k: 'checking-job', reason: i.reason }, { e: 'ask-job' });
      return to({ k: 'stopping', force: false }, stopHosts(s, i.reason, false));
    case 'job-state': {
      if (p.k !== 'checking-job') return same;
      // Over on its own (a JobState that left the queue, not a cancel): its record tells how the run
      // ended. Followed already, or (the scheduler answered before the job's nodes were known: seen on
      // the real Slurm cluster, `cohort stop` then waited for ever) back to waiting for the job's
      // nodes, whose job-running starts the follows. Cancelled already, still running, no answer: scancel.
      const end = i.end;
      if (end && slurmJobOver(end.state) && end.state !== 'CANCELLED') {
        const tell: ControllerEffect = { e: 'tell', level: 'info', message: `Slurm job ${end.jobId} had already ended (JobState=${end.state}) before the stop: nothing to stop; its record tells how the run ended` };
        return to(s.hosts.length ? { k: 'following' } : { k: 'queued' }, tell);
      }
      return to({ k: 'stopping', force: false }, stopHosts(s, p.reason, false));
    }
    case 'stop-sent':
      return p.k === 'stopping' ? endRun(s, 'cancelled') : same;
    case 'leader-ended': {
      // Another client's stop ended it (seen in a follower's record; the leader's own record may not
      // say so: its host was down, its agent died with it): cancelled, and every host reachable now
      // gets the stop marker (defect 6). An ok end stands: the run finished before the stop landed.
      if (i.status !== 'ok' && s.stopSeen && !s.scheduled && p.k !== 'stopping') return endRun(s, 'cancelled', { e: 'mark-stopped' });
      if (p.k === 'job-ending') return same; // asked already
      // A scheduled run that did not end ok and no stop asked: the scheduler may have requeued the job
      // (a node failure, a preemption with restarts left), or ended it itself (a time limit): ask it.
      if (s.scheduled && i.status !== 'ok' && !stopAsked(s)) return to({ k: 'job-ending', status: i.status, attempt: i.attempt ?? 0, tries: 0 }, { e: 'ask-end', afterMs: 0 });
      // A stop asked and the record ended otherwise (ok before the stop landed): the record's word stands.
      return endRun(s, i.status);
    }
    case 'follow-exit':
      return followExit(s, i);
    case 'detach':
      return to({ k: 'done', status: 'lost' }, { e: 'stop-following' });
  }
}

/**
 * The scheduler's account of a job whose leader record ended not ok: requeued (a later run of the job
 * than the one followed, not over) → wait for that run and follow it from the offsets, or, with a stop
 * asked meanwhile, cancel it; still finishing → ask again (JOB_END_TRIES at most); ended by the
 * scheduler itself (time limit, node failure, preemption...) → failed with its reason, unless a stop
 * was asked; else the record's word.
 */
function jobEnd(s: ControllerState, p: Extract<ControllerPhase, { k: 'job-ending' }>, i: Extract<ControllerInput, { t: 'job-end' }>): Transition {
  const end = i.end;
  if (!end) return endRun(s, p.status);
  if (end.restarts > p.attempt && !slurmJobOver(end.state)) {
    if (p.stop) return { state: { ...s, phase: { k: 'stopping', force: false } }, effects: [stopHosts(s, p.stop, false)] };
    const reason = `Slurm requeued job ${end.jobId} (Restarts=${end.restarts}, JobState=${end.state}, Reason=${end.reason})`;
    return {
      state: { ...s, phase: { k: 'queued' }, hosts: [], follows: {}, resumeOffsets: i.offsets },
      effects: [
        { e: 'requeued', jobId: end.jobId, reason: end.reason, restarting: reason },
        { e: 'tell', level: 'warn', message: `restarting: ${reason}; the run resumes from its last checkpoint when the job runs again` },
        { e: 'wait-job', requeue: { attempt: end.restarts, reason } },
      ],
    };
  }
  if (p.stop) return endRun(s, p.status);
  if (/^(COMPLETING|RUNNING)$/.test(end.state) && p.tries < JOB_END_TRIES) return { state: { ...s, phase: { ...p, tries: p.tries + 1 } }, effects: [{ e: 'ask-end', afterMs: JOB_END_POLL_MS }] };
  const said = SLURM_ENDS[end.state]?.(end);
  if (!said) return endRun(s, p.status);
  const message = `Slurm ended job ${end.jobId}: ${said} (JobState=${end.state}, Reason=${end.reason})`;
  // A time limit is not a fault to restart from (the next run would hit it too): a longer limit is the fix.
  const hint = end.state === 'TIMEOUT' ? "a time limit is not restarted, even with --max-restarts: ask for a longer limit (the profile's scheduler.timeLimit, sbatch --time) and resume with --resume from the run's checkpoints" : undefined;
  const host = end.state === 'NODE_FAIL' ? end.nodes : (s.hosts[0] ?? 'slurm');
  return endRun(s, 'failed', { e: 'error', host, message, code: `slurm-${end.state.toLowerCase().replace(/_/g, '-')}`, ...(hint ? { hint } : {}) });
}

/** How long after the stop commands return the stop counts as sent. */
export const STOP_SETTLE_MS = 3000;

/** The stop-hosts effect: a scheduled job with no node followed yet (still queued) is gone once scancel returns. */
function stopHosts(s: ControllerState, reason: string, force: boolean): ControllerEffect {
  return force ? { e: 'stop-hosts', reason, force } : { e: 'stop-hosts', reason, force, settleMs: s.scheduled && !s.hosts.length ? 0 : STOP_SETTLE_MS };
}

/** Following the hosts from the given offsets: every host's follow starts afresh. */
function follow(s: ControllerState, hosts: string[], offsets: Record<string, number>, keep?: ControllerPhase): Transition {
  return { state: { ...s, phase: keep ?? { k: 'following' }, hosts, follows: {}, resumeOffsets: [] }, effects: [{ e: 'follow-hosts', offsets }] };
}

const FOLLOW_END: Record<number, FollowEnd> = { 0: 'drained', [HOST_CMD_EXIT.agentLost]: 'agent-lost', [HOST_CMD_EXIT.noSuchRun]: 'no-such-run', [HOST_CMD_EXIT.recordDamaged]: 'record-damaged' };

/** A host's run-follow ended: re-follow (backoff, or the dead leader's grace), its end, or silence. */
function followExit(s: ControllerState, i: Extract<ControllerInput, { t: 'follow-exit' }>): Transition {
  const p = s.phase;
  if (p.k === 'stopping' && p.force) return { state: s, effects: [] }; // a forced stop follows nothing more
  const book = s.follows[i.host] ?? { attempt: 0, deadOnce: false };
  const keep = (b: FollowBook, ...effects: ControllerEffect[]): Transition => ({ state: { ...s, follows: { ...s.follows, [i.host]: b } }, effects });
  // A lost host the run waits for: its old agent's record says dead until the relaunched one writes.
  const waited = waitsFor(s, i.host);
  const agentLost = i.code === HOST_CMD_EXIT.agentLost;
  // The leader's agent died with its host up (or the host came back first): its followers get a
  // moment to say whether the run waits for it (restarts left) before the run is called over.
  if (agentLost && i.leader && !waited && s.hosts.length > 1 && !book.deadOnce) return keep({ ...book, deadOnce: true }, { e: 'refollow', host: i.host, afterMs: LEADER_DEAD_GRACE_MS });
  const end = i.code === null || (agentLost && waited) ? undefined : FOLLOW_END[i.code];
  if (end) return { state: s, effects: [{ e: 'follow-ended', host: i.host, leader: i.leader, end }] };
  if (i.silent && !waited) {
    const silent: ControllerEffect = { e: 'host-silent', host: i.host, leader: i.leader };
    // The leader holds the outcome: lost from here. During a stop the stop's own end decides; a stop
    // seen in a follower's record while the leader is gone is final (cancelled).
    if (!i.leader || p.k === 'stopping') return { state: s, effects: [silent] };
    return endRun(s, s.stopSeen ? 'cancelled' : 'lost', silent);
  }
  return keep({ ...book, attempt: book.attempt + 1 }, { e: 'refollow', host: i.host, afterMs: Math.min(s.retryMaxMs, FOLLOW_BACKOFF_MS[Math.min(book.attempt, FOLLOW_BACKOFF_MS.length - 1)]!) });
}
