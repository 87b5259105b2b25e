// The client controller's state table (issue 24 item 6, as agent-table.ts for the host agent): what
// `transition` (controller-lifecycle.ts) does for every phase × input, over one sample state per
// phase and one sample input per kind, for SSH/local runs and scheduled (Slurm) runs. The rows are
// generated (controller-table-rows.ts) and checked in; controller-table.test.ts fails when the code,
// the rows and ARCHITECTURE.md disagree (COHORT_WRITE_CONTROLLER_TABLE=1 rewrites both after a
// deliberate change). Pairs not listed change nothing.
import { HOST_CMD_EXIT } from '../../../trainer/protocol';
import { JOB_END_TRIES, initialControllerState, transition, type ControllerEffect, type ControllerInput, type ControllerPhase, type ControllerPhaseName, type ControllerState } from './controller-lifecycle';
import type { SlurmJobEnd } from './run-plan';

export interface ControllerRow {
  run: 'hosts' | 'scheduled';
  from: string;
  input: string;
  /** The next phase ('=' unchanged). */
  to: string;
  effects: string[];
}

export const CONTROLLER_PHASES: Record<ControllerPhaseName, ControllerPhase> = {
  idle: { k: 'idle' },
  submitting: { k: 'submitting' },
  queued: { k: 'queued' },
  starting: { k: 'starting' },
  following: { k: 'following' },
  'awaiting-hosts': { k: 'awaiting-hosts', waitingFor: ['h2'] },
  'checking-job': { k: 'checking-job', reason: 'stopped by the user' },
  'job-ending': { k: 'job-ending', status: 'failed', attempt: 0, tries: 0 },
  stopping: { k: 'stopping', force: false },
  done: { k: 'done', status: 'ok' },
};

/** Sample states: every phase (hosts h1, the leader, and h2), plus `following` after a stop was seen
 *  in a record (stopSeen), after the leader's agent was found dead once, after 4 re-follows of h2 and
 *  with the leader's `done` recorded, `starting` with a stop asked meanwhile, and `job-ending` (the
 *  record ended failed; the scheduler is asked) with a stop asked meanwhile and at its last try. */
export function sampleStates(scheduled: boolean): [string, ControllerState][] {
  const base = { ...initialControllerState(scheduled), hosts: ['h1', 'h2'] };
  // (job-ending is a scheduled run's only: the scheduler's account of an end)
  const out: [string, ControllerState][] = Object.entries(CONTROLLER_PHASES)
    .filter(([name]) => scheduled || name !== 'job-ending')
    .map(([name, phase]) => [name, { ...base, phase }]);
  out.push(['following+stopSeen', { ...base, phase: { k: 'following' }, stopSeen: true }]);
  out.push(['stopping(force)', { ...base, phase: { k: 'stopping', force: true } }]);
  out.push(['starting+stop', { ...base, phase: { k: 'starting', stop: { reason: 'stopped by the user', force: false } } }]);
  out.push(['following+h1 dead once', { ...base, phase: { k: 'following' }, follows: { h1: { attempt: 0, deadOnce: true } } }]);
  out.push(['following+h2 4 re-follows', { ...base, phase: { k: 'following' }, follows: { h2: { attempt: 4, deadOnce: false } } }]);
  // the leader's record has its `done` (ok): the end tells none of its own
  out.push(['following+done(ok)', { ...base, phase: { k: 'following' }, done: 'ok' }]);
  // the scheduler asked how the job ended: with a stop asked meanwhile, and after the last ask of a job still finishing
  if (!scheduled) return out;
  out.push(['job-ending+stop', { ...base, phase: { k: 'job-ending', status: 'failed', attempt: 0, tries: 0, stop: 'stopped by the user' } }]);
  out.push(['job-ending(last try)', { ...base, phase: { k: 'job-ending', status: 'failed', attempt: 0, tries: JOB_END_TRIES } }]);
  return out;
}

export const CONTROLLER_INPUTS: Record<string, ControllerInput> = {
  start: { t: 'start' },
  attach: { t: 'attach', hosts: ['h1', 'h2'] },
  submitted: { t: 'submitted' },
  'job-failed': { t: 'job-failed' },
  'job-running': { t: 'job-running', hosts: ['n1', 'n2'] },
  /** The scheduler's account of job 7 (the record ended not ok): requeued (a later run, pending again), still finishing, its own ends, cancelled, or nothing. */
  'job-end(requeued)': { t: 'job-end', end: jobEnd('PENDING', 1), offsets: [120, 80] },
  'job-end(completing)': { t: 'job-end', end: jobEnd('COMPLETING', 0), offsets: [120, 80] },
  'job-end(timeout)': { t: 'job-end', end: jobEnd('TIMEOUT', 0), offsets: [120, 80] },
  'job-end(node-fail)': { t: 'job-end', end: jobEnd('NODE_FAIL', 0), offsets: [120, 80] },
  'job-end(cancelled)': { t: 'job-end', end: jobEnd('CANCELLED', 0), offsets: [120, 80] },
  'job-end(unknown)': { t: 'job-end', offsets: [120, 80] },
  'hosts-started': { t: 'hosts-started', hosts: ['h1', 'h2'] },
  'host-refused': { t: 'host-refused' },
  'restart(no wait)': { t: 'restart', waitingFor: [] },
  'restart(h2)': { t: 'restart', waitingFor: ['h2'] },
  'restart(h3)': { t: 'restart', waitingFor: ['h3'] },
  stepped: { t: 'stepped' },
  'wait-over(h2)': { t: 'wait-over', host: 'h2' },
  'record-done(ok)': { t: 'record-done', status: 'ok' },
  'record-done(cancelled)': { t: 'record-done', status: 'cancelled' },
  /** A `done` event in the leader's record (the other record-done inputs: a follower's state record, the stop question). */
  'record-done(event ok)': { t: 'record-done', status: 'ok', event: true },
  'record-done(event cancelled)': { t: 'record-done', status: 'cancelled', event: true },
  stop: { t: 'stop', reason: 'stopped by the user', force: false },
  'stop(force)': { t: 'stop', reason: 'stopped (forced)', force: true },
  /** The scheduler's account of a job asked to stop: ended on its own (COMPLETED), still running, cancelled already, or nothing. */
  'job-state(over)': { t: 'job-state', end: jobEnd('COMPLETED', 0) },
  'job-state(running)': { t: 'job-state', end: jobEnd('RUNNING', 0) },
  'job-state(cancelled)': { t: 'job-state', end: jobEnd('CANCELLED', 0) },
  'job-state(unknown)': { t: 'job-state' },
  'stop-sent': { t: 'stop-sent' },
  'leader-ended(ok)': { t: 'leader-ended', status: 'ok' },
  'leader-ended(cancelled)': { t: 'leader-ended', status: 'cancelled' },
  'leader-ended(failed)': { t: 'leader-ended', status: 'failed' },
  'follow-exit(h1 drained)': { t: 'follow-exit', host: 'h1', leader: true, code: 0, silent: false },
  'follow-exit(h2 drained)': { t: 'follow-exit', host: 'h2', leader: false, code: 0, silent: false },
  'follow-exit(h1 agent-lost)': { t: 'follow-exit', host: 'h1', leader: true, code: HOST_CMD_EXIT.agentLost, silent: false },
  'follow-exit(h2 agent-lost)': { t: 'follow-exit', host: 'h2', leader: false, code: HOST_CMD_EXIT.agentLost, silent: false },
  'follow-exit(h1 no-such-run)': { t: 'follow-exit', host: 'h1', leader: true, code: HOST_CMD_EXIT.noSuchRun, silent: false },
  'follow-exit(h2 record-damaged)': { t: 'follow-exit', host: 'h2', leader: false, code: HOST_CMD_EXIT.recordDamaged, silent: false },
  'follow-exit(h2 dropped)': { t: 'follow-exit', host: 'h2', leader: false, code: null, silent: false },
  'follow-exit(h1 silent)': { t: 'follow-exit', host: 'h1', leader: true, code: null, silent: true },
  'follow-exit(h2 silent)': { t: 'follow-exit', host: 'h2', leader: false, code: null, silent: true },
  detach: { t: 'detach' },
};

function jobEnd(state: string, restarts: number): SlurmJobEnd {
  return { jobId: '7', state, reason: state === 'PENDING' ? 'BeginTime' : 'None', nodes: 'n2', restarts };
}

const phaseText = (p: ControllerPhase): string => {
  if (p.k === 'done') return `done(${p.status})`;
  if (p.k === 'job-ending') return `job-ending(${p.status}${p.tries ? `, ${p.tries} asks` : ''})${p.stop ? '+stop' : ''}`;
  if (p.k === 'awaiting-hosts') return `awaiting-hosts(${p.waitingFor.join(',')})`;
  if (p.k === 'starting' && p.stop) return p.stop.force ? 'starting+stop(force)' : 'starting+stop';
  return p.k === 'stopping' && p.force ? 'stopping(force)' : p.k;
};
const bookText = (s: ControllerState): string =>
  Object.entries(s.follows)
    .map(([h, b]) => `+${h} ${b.deadOnce ? 'dead once' : ''}${b.deadOnce && b.attempt ? ', ' : ''}${b.attempt ? `${b.attempt} re-follows` : ''}`)
    .join('');
const stateText = (s: ControllerState): string => `${phaseText(s.phase)}${s.stopSeen ? '+stopSeen' : ''}${s.done ? `+done(${s.done})` : ''}${bookText(s)}${s.resumeOffsets.length ? `+resume@${s.resumeOffsets.join(',')}` : ''}`;

function effectText(e: ControllerEffect): string {
  if (e.e === 'relaunch') return `relaunch(${e.hosts.join(',')})`;
  if (e.e === 'finish') return `finish(${e.status})${e.tellsDone ? ` tells done(${e.tellsDone})` : ''}`;
  if (e.e === 'stop-hosts') return e.force ? 'stop-hosts(force)' : e.settleMs === 0 ? 'stop-hosts(queued: at once)' : 'stop-hosts';
  if (e.e === 'tell') return `tell(${e.level})`;
  if (e.e === 'follow-hosts') return Object.keys(e.offsets).length ? `follow-hosts(${Object.entries(e.offsets).map(([h, o]) => `${h}@${o}`).join(',')})` : 'follow-hosts';
  if (e.e === 'refollow') return `refollow(${e.host}, ${e.afterMs} ms)`;
  if (e.e === 'follow-ended') return `follow-ended(${e.host} ${e.end})`;
  if (e.e === 'host-silent') return `host-silent(${e.host})`;
  if (e.e === 'ask-end') return `ask-end(${e.afterMs} ms)`;
  if (e.e === 'error') return `error(${e.code}, ${e.host})`;
  if (e.e === 'wait-job' && e.requeue) return `wait-job(attempt ${e.requeue.attempt})`;
  return e.e;
}

/** Every (run kind, phase, input) pair whose transition changes something. */
export function deriveRows(): ControllerRow[] {
  const rows: ControllerRow[] = [];
  for (const run of ['hosts', 'scheduled'] as const) {
    for (const [from, s] of sampleStates(run === 'scheduled')) {
      for (const [input, i] of Object.entries(CONTROLLER_INPUTS)) {
        const r = transition(s, i);
        if (r.state === s && r.effects.length === 0) continue;
        const to = stateText(r.state);
        rows.push({ run, from, input, to: to === stateText(s) ? '=' : to, effects: r.effects.map(effectText) });
      }
    }
  }
  return rows;
}

export function renderTable(rows: ControllerRow[]): string {
  return ['| run | phase | input | next | effects |', '|---|---|---|---|---|', ...rows.map((r) => `| ${r.run} | ${r.from} | ${r.input} | ${r.to} | ${r.effects.join(', ') || '–'} |`)].join('\n');
}
