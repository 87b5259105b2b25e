// One training run across its hosts, as a reader and commander of the hosts' record (issue 12):
//   - start(): `run-start` on every host (the leader, host of rank 0, first), each host's agent
//     runs detached from us; then attach()
//   - attach(): `run-follow` on every host from a byte offset, merging the hosts' events. A dropped
//     link is re-followed from the last offset with backoff (no event twice, none missed); a host
//     silent for lostAfterMs makes the run `lost` (in the local cache), never `running` forever
//   - cancel(): `run-stop` on the leader (it stops the followers), then on the followers as a
//     fallback; {force} (a second Ctrl-C) stops following at once instead of waiting
//   - a follower host lost mid-run: the leader stops the ranks and waits for it (a `restart` event
//     with `waitingFor`); this client keeps trying to reach that host (bounded backoff) and
//     relaunches its agent there (`run-rejoin`, from the spec kept in its workdir); the leader then
//     restarts every rank from the last checkpoint. Any client following the run does this
//   - the leader host lost mid-run (restarts left): each follower stops its ranks and says so in its
//     own record (a `restart` event waiting for the leader); this client relaunches the leader's agent
//     the same way, which goes on from its record, and the followers connect to it again. Every
//     host tells that restart: it is told once (by its attempt)
//   - the outcome comes from the leader's state record (run-status) once its record is drained;
//     errors too: the leader records every rank's error root cause first, so a follower's own copy
//     is told only when the leader's record never had it
// Dropping the controller (dispose, or the client dying) never stops the run: that is cancel().
// The same controller serves `cohort run`, `cohort attach`, SSH clusters, `local`, `cohort serve`
// and Electron; how a command reaches a host is the HostLink seam (host-link.ts).
import {
  DEFAULT_TIMINGS,
  DisposableBase,
  Emitter,
  EventLineDecoder,
  HOST_CMD_EXIT,
  HOST_WAIT_MS,
  decodeRunState,
  errorKey,
  isTerminalRunState,
  makeEvent,
  type CohortEvent,
  type ErrorEvent,
  type RunStatus,
  type RunStatusLine,
  type SchedulerQueue,
} from '../../../trainer/protocol';
import { initialControllerState, isOver, transition, type ControllerEffect, type ControllerInput, type ControllerState, type RunOutcome } from './controller-lifecycle';
import { runHostCommand, type HostCommand } from './host-link';
import { hostCmdError, parseLine, slurmJobOver, startReply } from './host-replies';
import { rejoinOnce } from './run-rejoin';
import { startSpare, type SpareShell } from './run-spare';
import type { HostLaunch, RunPlan, RunResult, ScheduledJob, SchedulerQueueState, SlurmJobEnd } from './run-plan';

export type { HostLaunch, RunPlan, RunResult, ScheduledJob, SchedulerQueueState, SlurmJobEnd };

interface Follow {
  host: HostLaunch;
  offset: number;
  /** The leader's agent found dead once: a follower may be about to say it waits for it (a restart). */
  deadOnce?: boolean;
  /** A requeued Slurm job's last run: its records are no longer followed. */
  retired?: boolean;
  cmd?: HostCommand;
  ended: boolean;
  lastContact: number;
}

const BACKOFF_MS = [250, 500, 1000, 2000, 4000];
/** A dead leader agent's record, read again after this long: its followers need a moment to say they wait for it. */
const LEADER_DEAD_GRACE_MS = 3000;
/** Between tries to reach a lost host and relaunch its agent. */
const RELAUNCH_BACKOFF_MS = [1000, 1000, 2000, 2000, 4000];

export class RunController extends DisposableBase {
  private readonly events = this.register(new Emitter<CohortEvent>());
  private follows: Follow[] = [];
  private firstError: ErrorEvent | undefined;
  /** Errors in a follower's own record: the leader records them too, root cause first, so they are
   *  told only if the leader's record never did (leader lost, agent died). */
  private followerErrors: ErrorEvent[] = [];
  private readonly errorsTold = new Set<string>();
  private doneEvent: Extract<CohortEvent, { type: 'done' }> | undefined;
  private lastStep = 0;
  /** The run as a whole, as controller-lifecycle.ts's transition keeps it. */
  private state: ControllerState;
  /** The stop commands in flight: the result waits for them (bounded), so a caller's leftover
   *  check never finds Cohort's own `run-stop` still running on a follower. */
  private stopsInFlight: Promise<void> | undefined;
  /** The leader's state record read at its end (finish's second argument). */
  private leaderState: RunStatusLine | undefined;
  private resolved = false;
  /** The leader answered that it has no record of the run (run-follow exit 5). */
  private leaderRecordGone = false;
  /** The highest restart told: a lost leader's restart is in every follower's record and then the leader's. */
  private restartsTold = 0;
  private readonly startedAt = Date.now();
  readonly result: Promise<RunResult>;
  private resolveResult!: (r: RunResult) => void;

  constructor(private readonly plan: RunPlan) {
    super();
    this.state = initialControllerState(!!plan.scheduler);
    this.result = new Promise((res) => (this.resolveResult = res));
  }

  private get finished(): boolean {
    return isOver(this.state);
  }

  /** A stop was asked (or is being checked with the scheduler). */
  private get stopRequested(): boolean {
    const k = this.state.phase.k;
    return k === 'stopping' || k === 'checking-job';
  }

  private waits(host: string): boolean {
    return this.state.phase.k === 'awaiting-hosts' && this.state.phase.waitingFor.includes(host);
  }

  /** One input through the lifecycle's transition; its effects run here (the shell). */
  private dispatch(input: ControllerInput): void {
    const { state, effects } = transition(this.state, input);
    this.state = state;
    for (const fx of effects) this.run(fx);
  }

  private run(fx: ControllerEffect): void {
    switch (fx.e) {
      case 'finish':
        return this.finish(fx.status, this.leaderState);
      case 'relaunch':
        return this.relaunchLost(fx.hosts, this.relaunchWaitMs);
      case 'ask-job':
        void this.plan
          .scheduler!.ended()
          .catch(() => undefined)
          .then((end) => {
            const over = !!end && slurmJobOver(end.state) && end.state !== 'CANCELLED';
            if (over) this.emit(makeEvent({ type: 'log', level: 'info', message: `Slurm job ${end.jobId} had already ended (JobState=${end.state}) before the stop: nothing to stop; its record tells how the run ended` }));
            this.dispatch({ t: 'job-state', over });
          });
        return;
      case 'stop-hosts':
        return this.sendStop(fx.reason, fx.force);
      case 'stop-following':
        for (const f of this.follows) f.cmd?.kill();
        return;
      case 'tell':
        if (fx.message.startsWith('the job had already ended')) return; // said with the job's id by ask-job
        return this.emit(makeEvent({ type: 'log', level: fx.level, message: fx.message }));
      default:
        return; // submit, wait-job, start-hosts, follow-hosts: the shell's own start()/attach() run them (UNFINISHED: not yet driven from here)
    }
  }

  private relaunchWaitMs = HOST_WAIT_MS;
  /** A restart's spare host → the excluded host whose ranks it takes (issue 21 item 5). */
  private readonly replacing = new Map<string, string>();

  /** What startSpare needs of this controller: the spare started is followed in the excluded host's place. */
  private spareShell(): SpareShell {
    return {
      runId: this.plan.runId,
      hosts: this.plan.hosts,
      still: (host, deadline) => this.waits(host) && !this.gaveUp() && !this.stopRequested && Date.now() < deadline,
      tell: (level, host, message) => this.emit(makeEvent({ type: 'log', level, host, message })),
      follow: (h, excluded) => {
        const i = this.plan.hosts.findIndex((x) => x.host === excluded);
        if (i > 0) this.plan.hosts[i] = h; // stops reach the spare; the excluded host is no longer the run's
        for (const f of this.follows.filter((x) => x.host.host === excluded)) {
          f.retired = f.ended = true; // its record ended with the attempt it was lost in
          f.cmd?.kill();
        }
        const f: Follow = { host: h, offset: 0, ended: false, lastContact: Date.now() };
        this.follows.push(f);
        void this.follow(f);
      },
    };
  }

  get runId(): string {
    return this.plan.runId;
  }

  onEvent(listener: (e: CohortEvent) => void): () => void {
    return this.events.event(listener);
  }

  private queueListeners = new Set<(q: SchedulerQueueState | undefined) => void>();
  /** A scheduled run's queue state: called while it waits, then once with undefined when it starts. */
  onQueue(listener: (q: SchedulerQueueState | undefined) => void): () => void {
    this.queueListeners.add(listener);
    return () => this.queueListeners.delete(listener);
  }

  private readonly waitAbort = new AbortController();

  /** The scheduler accepts the job (sbatch): from then on it is detached by nature. False when refused. */
  private async submitScheduled(): Promise<boolean> {
    const job = this.plan.scheduler!;
    try {
      const id = await job.submit();
      this.emit(makeEvent({ type: 'log', level: 'info', message: `submitted Slurm job ${id} (run ${this.plan.runId})` }));
      this.dispatch({ t: 'submitted' });
      return true;
    } catch (err) {
      this.schedulerFailed(err);
      return false;
    }
  }

  /**
   * Waits while the scheduler's job is queued (telling why and where), then follows its nodes.
   * After a requeue (`requeue`): waits for that run of the job, and follows each node index's
   * record on from where the last run's left off (the allocation may have other nodes now).
   */
  private async followScheduled(offsets: Record<string, number> = {}, requeue?: { attempt: number; reason: string; offsets: number[] }): Promise<void> {
    const job = this.plan.scheduler!;
    try {
      const hosts = await job.waitRunning(
        (q) => {
          const where = `${q.position ? `, position ${q.position} in partition ${q.partition ?? ''}`.trimEnd() : ''}`;
          // A client attaching while a requeued job waits learns it from Slurm's Restarts.
          const restarting = requeue?.reason ?? (q.restarts ? `Slurm requeued job ${q.jobId} (Restarts=${q.restarts})` : undefined);
          this.emit(makeEvent({ type: 'log', level: 'info', message: restarting ? `restarting: Slurm job ${q.jobId} is pending again (${q.reason})${where}: ${restarting}` : `queued: Slurm job ${q.jobId} is pending (${q.reason})${where}` }));
          const slurm: SchedulerQueue = { jobId: q.jobId, reason: q.reason, ...(q.position ? { position: q.position } : {}), ...(q.partition ? { partition: q.partition } : {}) };
          this.emit(makeEvent({ type: 'queued', host: this.plan.hosts[0]?.host ?? 'slurm', behind: '', slurm }));
          for (const l of this.queueListeners) l(restarting ? { ...q, restarting } : q);
        },
        this.waitAbort.signal,
        requeue ? { minAttempt: requeue.attempt } : {},
      );
      // (a stop still being checked with the scheduler goes on following: the job may have ended on its own)
      if (this.finished || this.state.phase.k === 'stopping') return;
      for (const l of this.queueListeners) l(undefined);
      this.plan.hosts = hosts;
      this.dispatch({ t: 'job-running' });
      this.emit(makeEvent({ type: 'log', level: 'info', message: `Slurm job ${job.id} runs on ${hosts.map((h) => h.host).join(', ')}` }));
      this.attach(requeue ? Object.fromEntries(hosts.map((h, i) => [h.host, requeue.offsets[i] ?? 0])) : offsets);
    } catch (err) {
      this.schedulerFailed(err);
    }
  }

  /**
   * The leader's record ended, not ok, and no stop was asked for: did Slurm requeue the job (a node
   * failure or a preemption of a run with --max-restarts)? Then wait for its next run and follow it.
   */
  private async followRequeued(followedAttempt: number): Promise<boolean> {
    const job = this.plan.scheduler!;
    // Slurm counts the requeue before it signals the job's steps; a still-finishing job gets a moment.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const end = await job.ended().catch(() => undefined);
      if (!end || this.stopRequested || this.finished) return false;
      if (end.restarts > followedAttempt && !slurmJobOver(end.state)) {
        const offsets = this.follows.map((f) => f.offset);
        for (const f of this.follows) {
          f.retired = true;
          f.cmd?.kill();
        }
        const reason = `Slurm requeued job ${end.jobId} (Restarts=${end.restarts}, JobState=${end.state}, Reason=${end.reason})`;
        this.emit(makeEvent({ type: 'log', level: 'warn', message: `restarting: ${reason}; the run resumes from its last checkpoint when the job runs again` }));
        for (const l of this.queueListeners) l({ jobId: end.jobId, reason: end.reason, restarting: reason });
        this.follows = [];
        this.dispatch({ t: 'job-requeued' });
        void this.followScheduled({}, { attempt: end.restarts, reason, offsets });
        return true;
      }
      if (!/^(COMPLETING|RUNNING)$/.test(end.state) || Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  private schedulerFailed(err: unknown): void {
    if (this.finished) return;
    if (!this.stopRequested) {
      const e = err as { code?: string; message: string; hint?: string };
      this.emitError({ rank: -1, host: this.plan.hosts[0]?.host ?? 'slurm', message: e.message, logTail: [], code: e.code ?? 'slurm-failed' });
    }
    this.dispatch({ t: 'job-failed' });
  }

  /**
   * `run-start` on every host, then attach. A host that refuses fails the run and stops the others.
   * Resolves true once every host's agent runs (detached: the run no longer needs this process),
   * false when the start failed (the run's result says why).
   */
  async start(): Promise<boolean> {
    this.dispatch({ t: 'start' });
    if (this.plan.scheduler) {
      if (!(await this.submitScheduled())) return false;
      void this.followScheduled();
      return true;
    }
    const started: HostLaunch[] = [];
    for (const h of this.plan.hosts) {
      if (!h.spec) throw new Error(`${h.host}: no launch spec; attach() follows a run started elsewhere`);
      let r;
      try {
        r = await runHostCommand(h.link, ['run-start'], { stdin: JSON.stringify(h.spec) + '\n', timeoutMs: 30_000 });
      } catch (err) {
        r = { code: null, stdout: '', stderr: (err as Error).message, errCode: (err as { code?: string }).code };
      }
      const reply = startReply(r.stdout);
      if (r.code !== 0 || !reply || reply.error) {
        const code = reply?.error?.code ?? ('errCode' in r && typeof r.errCode === 'string' ? r.errCode : 'run-start-failed');
        const message = reply?.error?.message ?? `run-start on ${h.host} failed (exit ${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`;
        this.emitError({ rank: -1, host: h.host, message, logTail: [], code });
        await Promise.all(started.map((s) => this.stopHost(s, 'a host of the run could not start', 5000)));
        this.dispatch({ t: 'host-refused' });
        return false;
      }
      started.push(h);
    }
    this.dispatch({ t: 'hosts-started' });
    this.attach();
    return true;
  }

  /** Follows every host's record from the start (or from given byte offsets). */
  attach(offsets: Record<string, number> = {}): void {
    this.dispatch({ t: 'attach' });
    if (this.plan.scheduler && this.plan.hosts.length === 0) {
      void this.followScheduled(offsets);
      return;
    }
    this.follows = this.plan.hosts.map((host) => ({ host, offset: offsets[host.host] ?? 0, ended: false, lastContact: Date.now() }));
    for (const f of this.follows) void this.follow(f);
  }

  /** Stops the run on every host (whoever started it). `force`: stop waiting at once. Idempotent. */
  cancel(reason = 'cancelled by the user', opts: { force?: boolean } = {}): void {
    // A scheduled run asks the scheduler first: a job that has already ended is not stopped, and
    // not called cancelled (issue 24 defect 2); the lifecycle's transition says so (ask-job).
    this.dispatch({ t: 'stop', reason, force: !!opts.force });
  }

  /** The stop-hosts effect: run-stop on the hosts (or scancel), then the end (stop-sent). */
  private sendStop(reason: string, force: boolean): void {
    if (force) {
      this.emit(makeEvent({ type: 'log', level: 'warn', message: `forcing: not waiting for the hosts to confirm the stop of ${this.plan.runId}` }));
      this.stopsInFlight = this.stopAll(reason, 2000);
      setTimeout(() => this.dispatch({ t: 'stop-sent' }), 2000);
      return;
    }
    this.emit(makeEvent({ type: 'log', level: 'warn', message: `stopping the run on ${this.plan.hosts.length} host(s): ${reason}` }));
    this.stopsInFlight = this.stopAll(reason, this.plan.stopWaitMs ?? 10_000);
    void this.stopsInFlight.then(() => {
      // Still queued: nothing to follow, the job is gone.
      if (this.plan.scheduler && this.follows.length === 0) return this.dispatch({ t: 'stop-sent' });
      // A host that could not be reached cannot confirm; do not wait for it beyond the stop.
      setTimeout(() => this.dispatch({ t: 'stop-sent' }), 3000).unref();
    });
  }

  /** Stops following (the run goes on on its hosts). */
  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    for (const f of this.follows) f.cmd?.kill();
    for (const h of this.plan.hosts) h.link.dispose?.();
  }

  /** run-stop on the leader (it stops its followers), then on each follower as a fallback. */
  private async stopAll(reason: string, waitMs: number): Promise<void> {
    if (this.plan.scheduler) {
      // The scheduler stops every node's agent (SIGTERM: each records the end), then nothing of the job is left.
      this.waitAbort.abort();
      try {
        await this.plan.scheduler.cancel();
      } catch (err) {
        this.emit(makeEvent({ type: 'log', level: 'warn', message: `could not cancel Slurm job ${this.plan.scheduler.id ?? ''}: ${(err as Error).message}` }));
      }
      return;
    }
    const [leader, ...followers] = this.plan.hosts;
    if (leader) await this.stopHost(leader, reason, waitMs);
    await Promise.all(followers.map((f) => this.stopHost(f, reason, Math.min(waitMs, 5000))));
  }

  private async stopHost(h: HostLaunch, reason: string, waitMs: number): Promise<RunStatusLine | undefined> {
    try {
      const r = await runHostCommand(h.link, ['run-stop', '--run', this.plan.runId, '--reason', reason, '--wait-ms', String(waitMs)], { timeoutMs: waitMs + 5000 });
      const line = parseLine(r.stdout);
      if (r.code === HOST_CMD_EXIT.noSuchRun) return undefined; // no record on that host: nothing to stop
      if (!line || !('runId' in line)) {
        this.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: `${h.host}: run-stop did not confirm (exit ${r.code}): ${(line ? JSON.stringify(line.error) : r.stderr.trim()).slice(0, 300)}` }));
        return undefined;
      }
      return { ...decodeRunState(line), agentAlive: (line as { agentAlive?: boolean }).agentAlive === true };
    } catch (err) {
      this.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: `${h.host}: could not ask it to stop: ${(err as Error).message}` }));
      return undefined;
    }
  }

  private gaveUp(): boolean {
    const p = this.state.phase;
    return this.finished || this.isDisposed || (p.k === 'stopping' && p.force);
  }

  private async follow(f: Follow): Promise<void> {
    const lostAfter = this.plan.lostAfterMs ?? DEFAULT_TIMINGS.lostAfterMs;
    const isLeader = f.host === this.plan.hosts[0];
    let attempt = 0;
    while (!this.gaveUp() && !f.retired) {
      let code: number | null = null;
      let stderr = '';
      let hostError: { code: string; message: string } | undefined;
      try {
        const cmd = await f.host.link.command(['run-follow', '--run', this.plan.runId, '--offset', String(f.offset)]);
        f.cmd = cmd;
        f.lastContact = Date.now();
        const decoder = new EventLineDecoder();
        let pending = 0;
        cmd.onStdout((chunk) => {
          f.lastContact = Date.now();
          // Count the bytes of whole lines only: that is the offset a re-follow starts from.
          const nl = chunk.lastIndexOf(0x0a);
          if (nl < 0) pending += chunk.length;
          else {
            f.offset += pending + nl + 1;
            pending = chunk.length - nl - 1;
          }
          for (const r of decoder.push(chunk.toString('utf8'))) {
            if (r.kind === 'event' && r.event.type === 'error' && !isLeader) this.followerErrors.push(r.event);
            else if (r.kind === 'event') this.handle(r.event);
            else if (r.kind === 'invalid' && hostCmdError(r.text)) hostError = hostCmdError(r.text); // the command's own failure line, told by its exit code
            else if (r.kind === 'invalid') this.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, message: `${f.host.host}: record line is not a valid event (${r.error})` }));
          }
        });
        const exit = await cmd.exit;
        code = exit.code;
        stderr = cmd.stderr();
        f.cmd = undefined;
        if (code === 0) attempt = 0;
      } catch (err) {
        stderr = (err as Error).message;
      }
      if (f.retired) return;
      // A lost host the run waits for: its old agent's record says dead until the relaunched one writes.
      const waited = this.waits(f.host.host);
      // The leader's agent died with its host up (or the host came back first): give the followers a
      // moment to say whether the run waits for it (restarts left) before calling the run over.
      const { agentLost, noSuchRun, recordDamaged } = HOST_CMD_EXIT;
      if (code === agentLost && isLeader && !waited && this.plan.hosts.length > 1 && !f.deadOnce) {
        f.deadOnce = true;
        await new Promise((r) => setTimeout(r, LEADER_DEAD_GRACE_MS));
        continue;
      }
      if (code === 0 || (code === agentLost && !waited) || code === noSuchRun || code === recordDamaged) {
        f.ended = true;
        // A damaged record is final (asking again reads the same bytes): said once, with the host's words.
        if (code === recordDamaged) {
          if (isLeader) this.leaderRecordGone = true;
          const message = hostError?.message ?? `the record of run ${this.plan.runId} on ${f.host.host} is damaged`;
          // Its events told the end already: a warning then, not the run's error.
          if (this.doneEvent) this.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, code: 'record-damaged', message: `${f.host.host}: ${message}` }));
          else this.emitError({ rank: -1, host: f.host.host, message, logTail: [], code: 'record-damaged', hint: `its events and logs are still on ${f.host.host}; \`cohort runs show ${this.plan.runId}\` has what this client recorded` });
        }
        if (code === agentLost) this.emitError({ rank: -1, host: f.host.host, message: `the agent of run ${this.plan.runId} on ${f.host.host} died without recording an end`, logTail: [], code: 'agent-lost' });
        if (code === noSuchRun && isLeader) {
          // Its record gone (or never there): the outcome is not known from here, as refresh() says too.
          this.leaderRecordGone = true;
          this.emitError({ rank: -1, host: f.host.host, message: `${f.host.host} has no record of run ${this.plan.runId}`, logTail: [], code: 'no-such-run' });
        }
        if (isLeader) await this.leaderEnded();
        return;
      }
      if (this.gaveUp()) return;
      if (Date.now() - f.lastContact > lostAfter && !waited) {
        const message = `unreachable for ${Math.round((Date.now() - f.lastContact) / 1000)} s (${stderr.trim().slice(0, 200)})`; // printers put the host first
        // The leader holds the run's outcome: without it the run is `lost`, and the error names it.
        if (isLeader) {
          this.emitError({ rank: -1, host: f.host.host, message: `${message}; it leads run ${this.plan.runId}, whose outcome it holds: the run is lost from here (cohort attach ${this.plan.runId} asks again once it answers)`, logTail: [], code: 'host-unreachable' });
          this.dispatch({ t: 'leader-unreachable' });
        } else this.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, message: `${f.host.host}: ${message}` }));
        return;
      }
      await new Promise((r) => setTimeout(r, BACKOFF_MS[Math.min(attempt++, BACKOFF_MS.length - 1)]));
    }
  }

  /** The leader's record is drained: read its state for the outcome, give followers a moment to drain. */
  private async leaderEnded(): Promise<void> {
    const leader = this.plan.hosts[0]!;
    let state: RunStatusLine | undefined;
    try {
      const r = await runHostCommand(leader.link, ['run-status', '--run', this.plan.runId], { timeoutMs: 15_000 });
      const line = parseLine(r.stdout);
      // A state record has runId (its `error` is the run's); a host command's failure has only `error`.
      if (line && 'runId' in line) state = { ...decodeRunState(line), agentAlive: (line as { agentAlive?: boolean }).agentAlive === true };
    } catch {
      // the outcome then comes from the events
    }
    const deadline = Date.now() + 3000;
    while (this.follows.some((f) => !f.ended) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const f of this.follows) f.cmd?.kill();
    let status: RunOutcome;
    if (state && isTerminalRunState(state.state)) status = state.state as RunStatus;
    else if (this.doneEvent) status = this.doneEvent.status;
    else status = this.firstError && !this.leaderRecordGone ? 'failed' : 'lost';
    if (this.plan.scheduler && status !== 'ok' && !this.stopRequested && (await this.followRequeued(state?.schedulerAttempt ?? 0))) return;
    if (this.plan.scheduler && status !== 'ok') status = await this.schedulerVerdict(status);
    if (state?.error && !this.firstError && status !== 'cancelled') this.emitError({ rank: state.error.rank, host: state.error.host, message: state.error.message, logTail: [], ...(state.error.code ? { code: state.error.code } : {}) });
    this.leaderState = state;
    this.dispatch({ t: 'leader-ended', status });
  }

  /**
   * A scheduled run that did not end ok: the scheduler's account wins where it says more. A job
   * the scheduler ended (time limit, node failure, preemption) is `failed` with its reason even
   * though its agents only saw a SIGTERM; a cancel we asked for stays `cancelled`.
   */
  private async schedulerVerdict(status: RunOutcome): Promise<RunOutcome> {
    const end = await this.plan.scheduler!.ended().catch(() => undefined);
    if (!end || this.stopRequested) return status;
    const why: Record<string, string> = { TIMEOUT: 'it reached its time limit', NODE_FAIL: `node ${end.nodes} failed`, PREEMPTED: 'it was preempted', OUT_OF_MEMORY: 'it ran out of memory', BOOT_FAIL: 'a node failed to boot', DEADLINE: 'it reached its deadline' };
    const said = why[end.state];
    if (!said) return status;
    const message = `Slurm ended job ${end.jobId}: ${said} (JobState=${end.state}, Reason=${end.reason})`;
    // A time limit is not a fault to restart from (the next run would hit it too): a longer limit is the fix.
    const hint = end.state === 'TIMEOUT' ? 'a time limit is not restarted, even with --max-restarts: ask for a longer limit (the profile\'s scheduler.timeLimit, sbatch --time) and resume with --resume from the run\'s checkpoints' : undefined;
    this.emitError({ rank: -1, host: end.state === 'NODE_FAIL' ? end.nodes : (this.plan.hosts[0]?.host ?? 'slurm'), message, logTail: [], code: `slurm-${end.state.toLowerCase().replace(/_/g, '-')}`, ...(hint ? { hint } : {}) });
    return 'failed';
  }

  private handle(e: CohortEvent): void {
    if (e.type === 'step') {
      this.lastStep = e.step;
      this.dispatch({ t: 'stepped' }); // the run steps again: every lost host is back
    }
    if (e.type === 'restart') {
      if (e.waitingFor?.length) {
        this.relaunchWaitMs = e.waitMs ?? HOST_WAIT_MS;
        if (e.excluded && e.replacement) this.replacing.set(e.replacement, e.excluded); // the relaunch of a spare is its start
        this.dispatch({ t: 'restart', waitingFor: e.waitingFor }); // relaunch: unless a stop was seen (defect 6)
      }
      if (e.attempt <= this.restartsTold) return; // told already, from another host's record
      this.restartsTold = e.attempt;
      this.emit(e);
      // The errors of the attempt that ended: a follower's copy the leader's record never got (lost
      // with it) is told now, after the restart that names their cause, and is never the root cause.
      return this.tellFollowerErrors({ consequences: true });
    }
    if (e.type === 'done') {
      this.doneEvent = e;
      this.dispatch({ t: 'record-done', status: e.status });
    }
    if (e.type === 'error') this.noteError(e);
    this.emit(e);
  }

  /** The leader waits for lost hosts: relaunch each one's agent once the host can be reached. */
  private relaunchLost(hosts: string[], waitMs: number): void {
    const deadline = Date.now() + waitMs;
    for (const name of hosts) {
      const h = this.plan.hosts.find((x) => x.host === name);
      const spare = this.plan.spares?.find((x) => x.host === name);
      const excluded = this.replacing.get(name);
      if (!h && spare && excluded) {
        void startSpare(this.spareShell(), spare, excluded, deadline);
        continue;
      }
      if (!h) {
        this.emit(makeEvent({ type: 'log', level: 'warn', message: `the run waits for ${name}, which this client has no link to: attach from a client that has the run's profile` }));
        continue;
      }
      void this.relaunchAgent(h, deadline);
    }
  }

  private async relaunchAgent(h: HostLaunch, deadline: number): Promise<void> {
    const still = () => this.waits(h.host) && !this.gaveUp() && !this.stopRequested && Date.now() < deadline;
    // a record being replayed (attach) may already show the run stepping again: give it a moment
    await new Promise((r) => setTimeout(r, 500));
    if (!still()) return;
    this.emit(makeEvent({ type: 'log', level: 'info', host: h.host, message: `${h.host} was lost: trying to reach it to relaunch its agent of run ${this.plan.runId} (for ${Math.round((deadline - Date.now()) / 1000)} s)` }));
    let attempt = 0;
    let told = ''; // the last failure told (each different one once, not every try)
    const tell = (message: string) => {
      if (message !== told) this.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: (told = message) }));
    };
    while (still()) {
      const tried = await rejoinOnce(h, this.plan.runId);
      if ('agentPid' in tried) {
        const redeployed = tried.redeployed ? `re-deployed the trainer bundle to ${h.host} (${tried.redeployed}); ` : '';
        this.emit(makeEvent({ type: 'log', level: 'info', host: h.host, message: `${h.host} is back: ${redeployed}its agent of run ${this.plan.runId} runs again (pid ${tried.agentPid}); the run restarts from its last checkpoint once it rejoins` }));
        return;
      }
      if (tried.failure) tell(`${h.host}: could not relaunch its agent of run ${this.plan.runId}: ${tried.failure}`);
      // The host answered and refused (the run ended, its record is gone, another bundle): trying again will not help.
      if (tried.final) return;
      await new Promise((res) => setTimeout(res, RELAUNCH_BACKOFF_MS[Math.min(attempt++, RELAUNCH_BACKOFF_MS.length - 1)]));
    }
    // The wait is over and the leader is not back: its follow stops waiting, and the run is lost (it holds the outcome).
    if (h === this.plan.hosts[0] && Date.now() >= deadline) this.dispatch({ t: 'wait-over', host: h.host });
  }

  private tellFollowerErrors(o: { consequences?: boolean } = {}): void {
    for (const e of this.followerErrors.splice(0)) {
      if (this.errorsTold.has(errorKey(e))) continue;
      if (o.consequences) this.errorsTold.add(errorKey(e));
      else this.noteError(e); // may be the root cause
      this.emit(e);
    }
  }

  private noteError(e: ErrorEvent): void {
    if (!this.firstError) this.firstError = e;
    this.errorsTold.add(errorKey(e));
  }

  private emitError(e: Omit<ErrorEvent, 'v' | 'time' | 'type'>): void {
    const err = makeEvent({ type: 'error', ...e });
    this.noteError(err);
    this.emit(err);
  }

  /** The finish effect (the lifecycle is `done` already): the end told to every consumer, once. */
  private finish(status: RunOutcome, state?: RunStatusLine): void {
    if (this.resolved) return;
    this.resolved = true;
    for (const f of this.follows) f.cmd?.kill();
    this.tellFollowerErrors();
    // Every consumer sees an end: a run that recorded no `done` gets one from the controller.
    if (!this.doneEvent || (status !== 'lost' && this.doneEvent.status !== status)) {
      const done = makeEvent({ type: 'done', status: status === 'lost' ? 'failed' : status, steps: this.lastStep, medianGlobalSamplesPerSec: this.doneEvent?.medianGlobalSamplesPerSec ?? null, paramChecksum: this.doneEvent?.paramChecksum ?? '', durationMs: Date.now() - this.startedAt });
      if (!this.doneEvent) this.emit(done);
      this.doneEvent = this.doneEvent ?? done;
    }
    const result = { status, ...(this.firstError ? { error: this.firstError } : {}), done: this.doneEvent, lastStep: this.lastStep, ...(state ? { state } : {}) };
    if (!this.stopsInFlight) return this.resolveResult(result);
    const bound = new Promise<void>((res) => setTimeout(res, 7000).unref());
    void Promise.race([this.stopsInFlight, bound]).then(() => this.resolveResult(result));
  }

  private emit(e: CohortEvent): void {
    this.events.fire(e);
  }
}
