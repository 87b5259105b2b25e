// A scheduled (Slurm) run's side of the controller's shell (split from run-controller.ts, issue 24
// item 7): submit the job, wait while it is queued (telling why and where), follow its nodes once it
// runs (a requeued job's next run too), ask the scheduler whether a job asked to stop had already
// ended (defect 2), and ask it how a job whose record ended not ok ended (`ended`). Only I/O: its
// answers go to the lifecycle (controller-lifecycle.ts) through `dispatch` as inputs, and the
// transition decides (a requeue, the scheduler's own end in words, the record's word).
import { makeEvent, type CohortEvent, type ErrorEvent, type SchedulerQueue } from '../../../trainer/protocol';
import type { ControllerInput } from './controller-lifecycle';
import type { RunPlan, SchedulerQueueState, SlurmJobEnd } from './run-plan';

export interface ScheduledContext {
  plan: RunPlan;
  emit(e: CohortEvent): void;
  emitError(e: Omit<ErrorEvent, 'v' | 'time' | 'type'>): void;
  dispatch(i: ControllerInput): void;
  /** The queue state for onQueue listeners (undefined: the job runs). */
  queued(q: SchedulerQueueState | undefined): void;
  signal: AbortSignal;
  over(): boolean;
  stopRequested(): boolean;
  stopping(): boolean;
}

export class ScheduledSide {
  constructor(private readonly c: ScheduledContext) {}

  private get job() {
    return this.c.plan.scheduler!;
  }

  /** The scheduler accepts the job (sbatch): from then on it is detached by nature. False when refused. */
  async submit(): Promise<boolean> {
    try {
      const id = await this.job.submit();
      this.c.emit(makeEvent({ type: 'log', level: 'info', message: `submitted Slurm job ${id} (run ${this.c.plan.runId})` }));
      this.c.dispatch({ t: 'submitted' });
      return true;
    } catch (err) {
      this.failed(err);
      return false;
    }
  }

  /**
   * Waits while the scheduler's job is queued (telling why and where), then follows its nodes
   * (job-running: each node index's record from where a requeued job's last run left off, the
   * lifecycle keeps those offsets). After a requeue (`requeue`): waits for that run of the job.
   */
  async follow(requeue?: { attempt: number; reason: string }): Promise<void> {
    const { plan } = this.c;
    try {
      const hosts = await this.job.waitRunning(
        (q) => {
          const where = `${q.position ? `, position ${q.position} in partition ${q.partition ?? ''}`.trimEnd() : ''}`;
          // A client attaching while a requeued job waits learns it from Slurm's Restarts.
          const restarting = requeue?.reason ?? (q.restarts ? `Slurm requeued job ${q.jobId} (Restarts=${q.restarts})` : undefined);
          this.c.emit(makeEvent({ type: 'log', level: 'info', message: restarting ? `restarting: Slurm job ${q.jobId} is pending again (${q.reason})${where}: ${restarting}` : `queued: Slurm job ${q.jobId} is pending (${q.reason})${where}` }));
          const slurm: SchedulerQueue = { jobId: q.jobId, reason: q.reason, ...(q.position ? { position: q.position } : {}), ...(q.partition ? { partition: q.partition } : {}) };
          this.c.emit(makeEvent({ type: 'queued', host: plan.hosts[0]?.host ?? 'slurm', behind: '', slurm }));
          this.c.queued(restarting ? { ...q, restarting } : q);
        },
        this.c.signal,
        requeue ? { minAttempt: requeue.attempt } : {},
      );
      // (a stop still being checked with the scheduler goes on following: the job may have ended on its own)
      if (this.c.over() || this.c.stopping()) return;
      this.c.queued(undefined);
      plan.hosts = hosts;
      this.c.emit(makeEvent({ type: 'log', level: 'info', message: `Slurm job ${this.job.id} runs on ${hosts.map((h) => h.host).join(', ')}` }));
      this.c.dispatch({ t: 'job-running', hosts: hosts.map((h) => h.host) }); // follow-hosts
    } catch (err) {
      this.failed(err);
    }
  }

  /** The ask-end effect: the scheduler's account of the job (undefined: it said nothing). The
   *  lifecycle decides what it means (a requeue, the scheduler's own end, the record's word). */
  ended(): Promise<SlurmJobEnd | undefined> {
    return this.job.ended().catch(() => undefined);
  }

  /** The ask-job effect: had the job already ended (on its own) when the stop was asked? */
  askJob(): void {
    void this.ended().then((end) => this.c.dispatch({ t: 'job-state', ...(end ? { end } : {}) }));
  }

  private failed(err: unknown): void {
    if (this.c.over()) return;
    if (!this.c.stopRequested()) {
      const e = err as { code?: string; message: string; hint?: string };
      this.c.emitError({ rank: -1, host: this.c.plan.hosts[0]?.host ?? 'slurm', message: e.message, logTail: [], code: e.code ?? 'slurm-failed' });
    }
    this.c.dispatch({ t: 'job-failed' });
  }
}
