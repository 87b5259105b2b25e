// A scheduled (Slurm) run's side of the controller's shell (split from run-controller.ts, issue 24
// item 7): submit the job, wait while it is queued (telling why and where), follow its nodes once it
// runs, follow a requeued job's next run, ask the scheduler whether a job asked to stop had already
// ended (defect 2), and the scheduler's account of an end that was not ok. Its inputs go to the
// lifecycle (controller-lifecycle.ts) through `dispatch`.
import { makeEvent, type CohortEvent, type ErrorEvent, type SchedulerQueue } from '../../../trainer/protocol';
import type { ControllerInput, RunOutcome } from './controller-lifecycle';
import { slurmJobOver } from './host-replies';
import type { RunPlan, SchedulerQueueState } from './run-plan';

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
  /** Stops following the last run's records; returns their offsets (node index order). */
  retireFollows(): number[];
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

  /**
   * The leader's record ended, not ok, and no stop was asked for: did Slurm requeue the job (a node
   * failure or a preemption of a run with --max-restarts)? Then wait for its next run and follow it.
   */
  async followRequeued(followedAttempt: number): Promise<boolean> {
    // Slurm counts the requeue before it signals the job's steps; a still-finishing job gets a moment.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const end = await this.job.ended().catch(() => undefined);
      if (!end || this.c.stopRequested() || this.c.over()) return false;
      if (end.restarts > followedAttempt && !slurmJobOver(end.state)) {
        const offsets = this.c.retireFollows();
        const reason = `Slurm requeued job ${end.jobId} (Restarts=${end.restarts}, JobState=${end.state}, Reason=${end.reason})`;
        this.c.emit(makeEvent({ type: 'log', level: 'warn', message: `restarting: ${reason}; the run resumes from its last checkpoint when the job runs again` }));
        this.c.queued({ jobId: end.jobId, reason: end.reason, restarting: reason });
        this.c.dispatch({ t: 'job-requeued', offsets, attempt: end.restarts, reason }); // wait-job: follow() for that run
        return true;
      }
      if (!/^(COMPLETING|RUNNING)$/.test(end.state) || Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The ask-job effect: had the job already ended (on its own) when the stop was asked? */
  askJob(): void {
    void this.job
      .ended()
      .catch(() => undefined)
      .then((end) => {
        const over = !!end && slurmJobOver(end.state) && end.state !== 'CANCELLED';
        if (over) this.c.emit(makeEvent({ type: 'log', level: 'info', message: `Slurm job ${end.jobId} had already ended (JobState=${end.state}) before the stop: nothing to stop; its record tells how the run ended` }));
        this.c.dispatch({ t: 'job-state', over });
      });
  }

  /**
   * A scheduled run that did not end ok: the scheduler's account wins where it says more. A job
   * the scheduler ended (time limit, node failure, preemption) is `failed` with its reason even
   * though its agents only saw a SIGTERM; a cancel we asked for stays `cancelled`.
   */
  async verdict(status: RunOutcome): Promise<RunOutcome> {
    const end = await this.job.ended().catch(() => undefined);
    if (!end || this.c.stopRequested()) return status;
    const why: Record<string, string> = { TIMEOUT: 'it reached its time limit', NODE_FAIL: `node ${end.nodes} failed`, PREEMPTED: 'it was preempted', OUT_OF_MEMORY: 'it ran out of memory', BOOT_FAIL: 'a node failed to boot', DEADLINE: 'it reached its deadline' };
    const said = why[end.state];
    if (!said) return status;
    const message = `Slurm ended job ${end.jobId}: ${said} (JobState=${end.state}, Reason=${end.reason})`;
    // A time limit is not a fault to restart from (the next run would hit it too): a longer limit is the fix.
    const hint = end.state === 'TIMEOUT' ? "a time limit is not restarted, even with --max-restarts: ask for a longer limit (the profile's scheduler.timeLimit, sbatch --time) and resume with --resume from the run's checkpoints" : undefined;
    this.c.emitError({ rank: -1, host: end.state === 'NODE_FAIL' ? end.nodes : (this.c.plan.hosts[0]?.host ?? 'slurm'), message, logTail: [], code: `slurm-${end.state.toLowerCase().replace(/_/g, '-')}`, ...(hint ? { hint } : {}) });
    return 'failed';
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
