// The client controller's state table (issue 24 item 6, as agent-table.ts for the host agent): what
// `transition` (controller-lifecycle.ts) does for every phase × input, over one sample state per
// phase and one sample input per kind, for SSH/local runs and scheduled (Slurm) runs. The rows are
// generated (controller-table-rows.ts) and checked in; controller-table.test.ts fails when the code,
// the rows and ARCHITECTURE.md disagree (COHORT_WRITE_CONTROLLER_TABLE=1 rewrites both after a
// deliberate change). Pairs not listed change nothing.
import { initialControllerState, transition, type ControllerEffect, type ControllerInput, type ControllerPhase, type ControllerPhaseName, type ControllerState } from './controller-lifecycle';

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
  stopping: { k: 'stopping', force: false },
  done: { k: 'done', status: 'ok' },
};

/** Sample states: every phase, plus `following` after a stop was seen in a record (stopSeen). */
export function sampleStates(scheduled: boolean): [string, ControllerState][] {
  const base = initialControllerState(scheduled);
  const out: [string, ControllerState][] = Object.entries(CONTROLLER_PHASES).map(([name, phase]) => [name, { ...base, phase }]);
  out.push(['following+stopSeen', { ...base, phase: { k: 'following' }, stopSeen: true }]);
  out.push(['stopping(force)', { ...base, phase: { k: 'stopping', force: true } }]);
  return out;
}

export const CONTROLLER_INPUTS: Record<string, ControllerInput> = {
  start: { t: 'start' },
  attach: { t: 'attach' },
  submitted: { t: 'submitted' },
  'job-failed': { t: 'job-failed' },
  'job-running': { t: 'job-running' },
  'job-requeued': { t: 'job-requeued' },
  'hosts-started': { t: 'hosts-started' },
  'host-refused': { t: 'host-refused' },
  'restart(no wait)': { t: 'restart', waitingFor: [] },
  'restart(h2)': { t: 'restart', waitingFor: ['h2'] },
  'restart(h3)': { t: 'restart', waitingFor: ['h3'] },
  stepped: { t: 'stepped' },
  'wait-over(h2)': { t: 'wait-over', host: 'h2' },
  'record-done(ok)': { t: 'record-done', status: 'ok' },
  'record-done(cancelled)': { t: 'record-done', status: 'cancelled' },
  stop: { t: 'stop', reason: 'stopped by the user', force: false },
  'stop(force)': { t: 'stop', reason: 'stopped (forced)', force: true },
  'job-state(over)': { t: 'job-state', over: true },
  'job-state(running)': { t: 'job-state', over: false },
  'stop-sent': { t: 'stop-sent' },
  'leader-ended(ok)': { t: 'leader-ended', status: 'ok' },
  'leader-ended(cancelled)': { t: 'leader-ended', status: 'cancelled' },
  'leader-ended(failed)': { t: 'leader-ended', status: 'failed' },
  'leader-unreachable': { t: 'leader-unreachable' },
  detach: { t: 'detach' },
};

const phaseText = (p: ControllerPhase): string => (p.k === 'done' ? `done(${p.status})` : p.k === 'awaiting-hosts' ? `awaiting-hosts(${p.waitingFor.join(',')})` : p.k === 'stopping' && p.force ? 'stopping(force)' : p.k);
const stateText = (s: ControllerState): string => `${phaseText(s.phase)}${s.stopSeen ? '+stopSeen' : ''}`;

function effectText(e: ControllerEffect): string {
  if (e.e === 'relaunch') return `relaunch(${e.hosts.join(',')})`;
  if (e.e === 'finish') return `finish(${e.status})`;
  if (e.e === 'stop-hosts') return e.force ? 'stop-hosts(force)' : 'stop-hosts';
  if (e.e === 'tell') return `tell(${e.level})`;
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
