// One run view (issue 24 item 2): a pure reducer over a run's event log, the one place that says
// where a run stands (phase, last step, restarts told once, errors told once with the root cause
// first, whom it queues behind, which lost hosts it waits for, its end). The client's controller
// and history (core), the CLI printer and the renderer's live view fold events through it instead
// of keeping their own flags. `isFinished` is the one "is this run over?" test. Plain TypeScript.
import type { CohortEvent, DoneEvent, ErrorEvent, RunStatus, SchedulerQueue } from './events';

/** The statuses of a run that has ended for good (`lost` is not one: the run may still be going; attach asks again). */
export const FINISHED_STATUSES: readonly RunStatus[] = ['ok', 'failed', 'cancelled'];

/** The one "is this run over?" test, for every status type (history's, the hosts' record, a done event). */
export function isFinished(status: string): status is RunStatus {
  return (FINISHED_STATUSES as readonly string[]).includes(status);
}

export type RunPhase = 'starting' | 'queued' | 'warmup' | 'training' | 'restarting' | RunStatus;

export interface RunView {
  phase: RunPhase;
  /** The last step reported (0 before training). */
  step: number;
  /** The highest restart attempt told (a lost leader's restart is in several hosts' records: told once). */
  restarts: number;
  /** Every error, each told once (host, rank, message), in order: the first is the root cause. */
  errors: ErrorEvent[];
  /** The error to show now: the first since the last restart (a restart handles the one before it). */
  error: ErrorEvent | null;
  /** The run waits for slots another run holds, or in the scheduler's queue. */
  queued: { behind: string; host: string; slurm?: SchedulerQueue } | null;
  /** Lost hosts the run waits for (the last restart's waitingFor) until it steps again. */
  waitingFor: string[];
  done: DoneEvent | null;
}

export const initialRunView = (): RunView => ({ phase: 'starting', step: 0, restarts: 0, errors: [], error: null, queued: null, waitingFor: [], done: null });

export const errorKey = (e: Pick<ErrorEvent, 'host' | 'rank' | 'message'>): string => `${e.host}|${e.rank}|${e.message}`;

/** What `reduceRunView` did with an event: `told` false when it repeats what was told already (a duplicate restart or error). */
export interface RunViewStep {
  view: RunView;
  told: boolean;
}

/** Folds one event into the view; never mutates `v`. A finished run's phase stays. */
export function stepRunView(v: RunView, e: CohortEvent): RunViewStep {
  const over = isFinished(v.phase);
  const waiting = v.phase === 'starting' || v.phase === 'queued';
  switch (e.type) {
    case 'queued':
      return { view: { ...v, queued: { behind: e.behind, host: e.host, ...(e.slurm ? { slurm: e.slurm } : {}) }, phase: waiting ? 'queued' : v.phase }, told: true };
    case 'hello':
    case 'plan':
      return { view: { ...v, queued: null, phase: waiting ? 'warmup' : v.phase }, told: true };
    case 'step':
      return { view: { ...v, step: e.step, waitingFor: [], phase: over || v.phase === 'training' ? v.phase : 'training' }, told: true };
    case 'restart': {
      const waitingFor = e.waitingFor?.length ? [...new Set([...v.waitingFor, ...e.waitingFor])] : v.waitingFor;
      if (e.attempt <= v.restarts) return { view: waitingFor === v.waitingFor ? v : { ...v, waitingFor }, told: false };
      return { view: { ...v, restarts: e.attempt, waitingFor, error: null, phase: over ? v.phase : 'restarting' }, told: true };
    }
    case 'error': {
      const key = errorKey(e);
      if (v.errors.some((x) => errorKey(x) === key)) return { view: v, told: false };
      return { view: { ...v, errors: [...v.errors, e], error: v.error ?? e }, told: true };
    }
    case 'done':
      if (v.done) return { view: v, told: false };
      return { view: { ...v, done: e, phase: over ? v.phase : e.status }, told: true };
    default:
      return { view: v, told: true };
  }
}

export const reduceRunView = (v: RunView, e: CohortEvent): RunView => stepRunView(v, e).view;

export const runViewOf = (events: Iterable<CohortEvent>): RunView => {
  let v = initialRunView();
  for (const e of events) v = reduceRunView(v, e);
  return v;
};

/** The view's phase as the history's status words say it (warm-up and training are `running`). */
export function runViewStatus(v: RunView): 'starting' | 'queued' | 'running' | 'restarting' | RunStatus {
  return v.phase === 'warmup' || v.phase === 'training' ? 'running' : v.phase;
}
