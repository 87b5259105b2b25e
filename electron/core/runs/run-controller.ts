// One training run across its hosts, as a reader and commander of the hosts' record (issue 12). The
// lifecycle is controller-lifecycle.ts's transition; this shell feeds it inputs and runs its effects:
//   - start(): `run-start` on every host (the leader, host of rank 0, first; each agent runs detached
//     from us), then their records are followed as attach() does
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
// Dropping the controller (dispose, or the client dying) never stops the run: that is cancel(). It serves
// every client (CLI, serve, Electron), SSH and `local`; a command reaches a host by a HostLink (host-link.ts).
import {
  DEFAULT_TIMINGS,
  DisposableBase,
  Emitter,
  HOST_WAIT_MS,
  decodeRunState,
  errorKey,
  makeEvent,
  type CohortEvent,
  type ErrorEvent,
  type RunStatus,
  type RunStatusLine,
} from '../../../trainer/protocol';
import { initialControllerState, isOver, recordOutcome, stopAsked, transition, waitsFor, type ControllerEffect, type ControllerInput, type ControllerState, type RunOutcome } from './controller-lifecycle';
import { startAll } from './controller-start';
import { HostQueries } from './controller-queries';
import { parseLine } from './host-replies';
import { relaunchUntil } from './run-rejoin';
import { followOnce, followReader, retireFollows, tellFollowEnd, tellSilent, type Follow, type FollowContext } from './controller-follow';
import { ScheduledSide } from './controller-scheduled';
import { stopAll, stopHost, stoppedElsewhere, type StopContext } from './controller-stop';
import { noteReplacement, startSpareFor, takePlace } from './run-spare';
import type { HostLaunch, RunPlan, RunResult, ScheduledJob, SchedulerQueueState, SlurmJobEnd } from './run-plan';

export type { HostLaunch, RunPlan, RunResult, ScheduledJob, SchedulerQueueState, SlurmJobEnd };

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
  /** The stop commands in flight: the result waits for them (bounded): no leftover `run-stop` on a follower. */
  private stopsInFlight: Promise<void> | undefined;
  /** Hosts a run-stop was sent to that have not confirmed it (down then): RunResult.stopOwed. */
  private readonly stopOwed = new Set<string>();
  private readonly queries = new HostQueries(); // its run-status queries: the result waits for them too
  /** The leader's state record read at its end (finish's second argument). */
  private leaderState: RunStatusLine | undefined;
  private resolved = false;
  /** The start-hosts or submit effect in flight: whether the run started (start() returns it). */
  private starting: Promise<boolean> | undefined;
  /** The leader answered that it has no record of the run (run-follow exit 5). */
  private leaderRecordGone = false;
  /** The highest restart told: a lost leader's restart is in every follower's record and then the leader's. */
  private restartsTold = 0;
  private readonly startedAt = Date.now();
  readonly result: Promise<RunResult>;
  private resolveResult!: (r: RunResult) => void;

  constructor(private readonly plan: RunPlan) {
    super();
    this.state = initialControllerState(!!plan.scheduler, plan.retryMaxMs ?? DEFAULT_TIMINGS.retryMaxMs);
    this.result = new Promise((res) => (this.resolveResult = res));
    this.sched = new ScheduledSide({
      plan: this.plan,
      emit: (e) => this.emit(e),
      emitError: (e) => this.emitError(e),
      dispatch: (i) => this.dispatch(i),
      queued: (q) => {
        for (const l of this.queueListeners) l(q);
      },
      signal: this.waitAbort.signal,
      over: () => this.finished,
      stopRequested: () => this.stopRequested,
      stopping: () => this.state.phase.k === 'stopping',
    });
  }

  private get finished(): boolean {
    return isOver(this.state);
  }

  /** A stop was asked (or is being checked with the scheduler). */
  private get stopRequested(): boolean {
    return stopAsked(this.state);
  }
  private readonly waits = (host: string): boolean => waitsFor(this.state, host);

  /** One input through the lifecycle's transition; its effects run here (the shell). */
  private dispatch(input: ControllerInput): void {
    const { state, effects } = transition(this.state, input);
    this.state = state;
    for (const fx of effects) this.run(fx);
  }

  private run(fx: ControllerEffect): void {
    switch (fx.e) {
      case 'finish':
        return this.finish(fx.status, fx.tellsDone, this.leaderState);
      case 'relaunch':
        return this.relaunchLost(fx.hosts, this.relaunchWaitMs);
      case 'ask-job':
        return this.sched.askJob();
      case 'ask-end':
        return void setTimeout(() => void this.sched.ended().then((end) => this.dispatch({ t: 'job-end', ...(end ? { end } : {}), offsets: this.follows.map((f) => f.offset) })), fx.afterMs);
      case 'requeued':
        retireFollows(this.follows.splice(0)); // wait-job follows the job's next run from their offsets
        this.leaderState = undefined;
        for (const l of this.queueListeners) l({ jobId: fx.jobId, reason: fx.reason, restarting: fx.restarting });
        return;
      case 'error':
        return this.emitError({ rank: -1, host: fx.host, message: fx.message, logTail: [], code: fx.code, ...(fx.hint ? { hint: fx.hint } : {}) });
      case 'stop-hosts':
        return this.sendStop(fx.reason, fx.force, fx.settleMs ?? 0);
      case 'mark-stopped':
        this.stopsInFlight = stopAll(this.stopCtx, 'stopped (another client stopped the run)', 1000);
        return;
      case 'stop-following':
        for (const f of this.follows) f.cmd?.kill();
        return;
      case 'follow-hosts':
        this.follows = this.plan.hosts.map((host) => ({ host, offset: fx.offsets[host.host] ?? 0, ended: false, lastContact: Date.now() }));
        for (const f of this.follows) this.follow(f);
        return;
      case 'refollow':
        return void this.followOf(fx.host, (f) => setTimeout(() => this.follow(f), fx.afterMs));
      case 'follow-ended':
        return this.followOf(fx.host, (f) => tellFollowEnd(f, fx.end, fx.leader, this.followCtx));
      case 'host-silent':
        return this.followOf(fx.host, (f) => tellSilent(f, fx.leader, this.followCtx));
      case 'tell':
        return this.emit(makeEvent({ type: 'log', level: fx.level, message: fx.message }));
      case 'submit':
        this.starting = this.sched.submit(); // submitted (then wait-job) or job-failed
        return;
      case 'wait-job':
        return void this.sched.follow(fx.requeue); // job-running or job-failed
      case 'start-hosts':
        this.starting = this.startHosts(); // hosts-started or host-refused
        return;
    }
  }

  private relaunchWaitMs = HOST_WAIT_MS;
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
  /** A scheduled run's side of the shell (controller-scheduled.ts). */
  private readonly sched: ScheduledSide;
  private get stopCtx(): StopContext {
    return { plan: this.plan, emit: (e) => this.emit(e), abortWait: () => this.waitAbort.abort(), stopAnswer: (h, reached) => void (reached ? this.stopOwed.delete(h) : this.stopOwed.add(h)) };
  }

  /**
   * Starts the run (the lifecycle's first input: the start-hosts effect, or submit for a scheduled
   * run). Resolves true once every host's agent runs (detached: the run no longer needs this
   * process) or the job is submitted, false when the start failed (the run's result says why).
   */
  async start(): Promise<boolean> {
    this.dispatch({ t: 'start' });
    return (await this.starting) ?? false;
  }

  /** The start-hosts effect: `run-start` on every host, leader first. A host that refuses fails the run and stops the others. */
  private async startHosts(): Promise<boolean> {
    const refused = await startAll(this.plan.hosts, (s) => stopHost(this.stopCtx, s, 'a host of the run could not start', 5000));
    if (refused) this.emitError({ rank: -1, host: refused.host, message: refused.message, logTail: [], code: refused.code });
    this.dispatch(refused ? { t: 'host-refused' } : { t: 'hosts-started', hosts: this.plan.hosts.map((h) => h.host) }); // follow-hosts (a stop asked meanwhile: stop-hosts)
    return !refused;
  }

  /** Follows every host's record from the start (a scheduled run's once its job runs: wait-job). */
  attach(): void {
    this.dispatch({ t: 'attach', hosts: this.plan.hosts.map((h) => h.host) });
  }

  /** Stops the run on every host (whoever started it). `force`: stop waiting at once. Idempotent. */
  cancel(reason = 'cancelled by the user', opts: { force?: boolean } = {}): void {
    // A scheduled run asks the scheduler first: a job that has already ended is not stopped, and
    // not called cancelled (issue 24 defect 2); the lifecycle's transition says so (ask-job).
    this.dispatch({ t: 'stop', reason, force: !!opts.force });
  }

  /** The stop-hosts effect: run-stop on the hosts (or scancel), then the end (stop-sent). */
  private sendStop(reason: string, force: boolean, settleMs: number): void {
    if (force) {
      this.emit(makeEvent({ type: 'log', level: 'warn', message: `forcing: not waiting for the hosts to confirm the stop of ${this.plan.runId}` }));
      this.stopsInFlight = stopAll(this.stopCtx, reason, 2000);
      setTimeout(() => this.dispatch({ t: 'stop-sent' }), 2000);
      return;
    }
    this.emit(makeEvent({ type: 'log', level: 'warn', message: `stopping the run on ${this.plan.hosts.length} host(s): ${reason}` }));
    this.stopsInFlight = stopAll(this.stopCtx, reason, this.plan.stopWaitMs ?? 10_000);
    // settleMs (the transition's): a host that could not be reached cannot confirm; a job still queued is gone at once
    void this.stopsInFlight.then(() => (settleMs ? void setTimeout(() => this.dispatch({ t: 'stop-sent' }), settleMs).unref() : this.dispatch({ t: 'stop-sent' })));
  }

  /** Stops following (the run goes on on its hosts). */
  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    for (const f of this.follows) f.cmd?.kill();
    for (const h of this.plan.hosts) h.link.dispose?.();
  }

  private gaveUp(): boolean {
    const p = this.state.phase;
    return this.finished || this.isDisposed || (p.k === 'stopping' && p.force);
  }

  /** One `run-follow` of f's host, its events read here (a follower's errors kept aside); its exit is the lifecycle's follow-exit input. */
  private follow(f: Follow): void {
    if (this.gaveUp() || f.retired) return;
    const leader = f.host === this.plan.hosts[0];
    const read = followReader(f);
    const onStdout = (chunk: Buffer) => read(chunk).forEach((e) => (e.type === 'error' && !leader ? this.followerErrors.push(e) : this.handle(e)));
    void followOnce(f, this.plan.runId, onStdout).then((code) => {
      if (f.retired || this.isDisposed) return;
      this.dispatch({ t: 'follow-exit', host: f.host.host, leader, code, silent: Date.now() - f.lastContact > (this.plan.lostAfterMs ?? DEFAULT_TIMINGS.lostAfterMs) });
    });
  }

  private followOf(host: string, fn: (f: Follow) => void): void {
    const f = this.follows.find((x) => x.host.host === host && !x.retired);
    if (f) fn(f);
  }

  private get followCtx(): FollowContext {
    return {
      runId: this.plan.runId,
      emit: (e) => this.emit(e),
      emitError: (e) => this.emitError(e),
      doneSeen: () => !!this.doneEvent,
      leaderRecordGone: () => void (this.leaderRecordGone = true),
      leaderEnded: () => this.leaderEnded(),
      followerEnded: (f) => void this.followerEnded(f.host),
    };
  }

  /** A follower's record ended: a follower records no `done`, its state says whether a stop ended it
   *  (another client's `cohort stop`: then no lost host is relaunched, issue 24 defect 6). */
  private async followerEnded(h: HostLaunch): Promise<void> {
    const r = await this.queries.run(h.link, ['run-status', '--run', this.plan.runId]).catch(() => undefined);
    const line = r && parseLine(r.stdout);
    if (line && 'runId' in line && decodeRunState(line).state === 'cancelled') this.dispatch({ t: 'record-done', status: 'cancelled' });
  }

  /** The leader's record is drained: read its state for the outcome, give followers a moment to drain. */
  private async leaderEnded(): Promise<void> {
    const leader = this.plan.hosts[0]!;
    let state: RunStatusLine | undefined;
    try {
      const r = await this.queries.run(leader.link, ['run-status', '--run', this.plan.runId]);
      const line = parseLine(r.stdout);
      // A state record has runId (its `error` is the run's); a host command's failure has only `error`.
      if (line && 'runId' in line) state = { ...decodeRunState(line), agentAlive: (line as { agentAlive?: boolean }).agentAlive === true };
    } catch {
      // the outcome then comes from the events
    }
    const deadline = Date.now() + 3000;
    while (this.follows.some((f) => !f.ended) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const f of this.follows) f.cmd?.kill();
    const status = recordOutcome(this.state, { ...(state ? { record: state.state } : {}), errored: !!this.firstError, recordGone: this.leaderRecordGone });
    this.leaderState = state; // its error is told at the finish, after the scheduler's account (a scheduled run's job-ending)
    this.dispatch({ t: 'leader-ended', status, ...(state?.schedulerAttempt !== undefined ? { attempt: state.schedulerAttempt } : {}) });
  }

  private handle(e: CohortEvent): void {
    if (e.type === 'step') {
      this.lastStep = e.step;
      this.dispatch({ t: 'stepped' }); // the run steps again: every lost host is back
    }
    if (e.type === 'restart') {
      if (e.waitingFor?.length) {
        this.relaunchWaitMs = e.waitMs ?? HOST_WAIT_MS;
        noteReplacement(this.plan.spares, e); // a spare named: its relaunch is its start (run-spare.ts)
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
      this.dispatch({ t: 'record-done', status: e.status, event: true });
    }
    if (e.type === 'error') this.noteError(e);
    this.emit(e);
  }

  /** The leader waits for lost hosts: relaunch each one's agent once the host can be reached. */
  private relaunchLost(hosts: string[], waitMs: number): void {
    const deadline = Date.now() + waitMs;
    for (const name of hosts) {
      const h = this.plan.hosts.find((x) => x.host === name);
      if (!h && startSpareFor(name, this.plan.spares, deadline, { runId: this.plan.runId, hosts: this.plan.hosts, ranks: this.plan.hostRanks, still: (host, dl) => this.waits(host) && !this.gaveUp() && !this.stopRequested && Date.now() < dl, stopped: (skip) => this.askStop(undefined, skip), tell: (level, host, message) => this.emit(makeEvent({ type: 'log', level, host, message })), follow: (sh, excluded) => this.follow(takePlace(this.plan.hosts, this.follows, sh, excluded)) })) continue;
      if (!h) {
        this.emit(makeEvent({ type: 'log', level: 'warn', message: `the run waits for ${name}, which this client has no link to: attach from a client that has the run's profile` }));
        continue;
      }
      void this.relaunchAgent(h, deadline);
    }
  }

  private async relaunchAgent(h: HostLaunch, deadline: number): Promise<void> {
    const still = () => this.waits(h.host) && !this.gaveUp() && !this.stopRequested && Date.now() < deadline;
    // A stop that reached the other hosts while h was down is seen here too: no relaunch, h gets its marker.
    await relaunchUntil(h, this.plan.runId, deadline, { still, emit: (e) => this.emit(e), stopped: () => this.askStop(h, h.host), retryMaxMs: this.plan.retryMaxMs ?? DEFAULT_TIMINGS.retryMaxMs });
    // The wait is over and the leader is not back: its follow stops waiting, and the run is lost (it holds the outcome).
    if (h === this.plan.hosts[0] && Date.now() >= deadline) this.dispatch({ t: 'wait-over', host: h.host });
  }

  /** The stop question before a lost host's agent (h: it gets the marker) or a spare's starts: did a stop reach the run's hosts but `skip`? */
  private async askStop(h: HostLaunch | undefined, skip: string): Promise<boolean> {
    const yes = await stoppedElsewhere(this.stopCtx, h, this.plan.hosts.filter((x) => x.host !== skip && !this.waits(x.host)), this.queries);
    if (yes) this.dispatch({ t: 'record-done', status: 'cancelled' });
    return yes;
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

  /** The finish effect (the lifecycle is `done` already): the end told to every consumer, once; `tellsDone`: the record had no `done`, the transition's `endRun` says which to tell. */
  private finish(status: RunOutcome, tellsDone: RunStatus | undefined, state?: RunStatusLine): void {
    if (this.resolved) return;
    this.resolved = true;
    for (const f of this.follows) f.cmd?.kill();
    if (state?.error && !this.firstError && status !== 'cancelled') this.emitError({ rank: state.error.rank, host: state.error.host, message: state.error.message, logTail: [], ...(state.error.code ? { code: state.error.code } : {}) });
    this.tellFollowerErrors();
    if (tellsDone) this.emit((this.doneEvent = makeEvent({ type: 'done', status: tellsDone, steps: this.lastStep, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: Date.now() - this.startedAt })));
    const result = { status, ...(this.firstError ? { error: this.firstError } : {}), done: this.doneEvent, lastStep: this.lastStep, ...(state ? { state } : {}) };
    // Its host commands end before its result (a CLI exits on it): stops bounded, queries by their timeout.
    const stops = this.stopsInFlight && Promise.race([this.stopsInFlight, new Promise<void>((res) => setTimeout(res, 7000).unref())]);
    void Promise.all([stops, this.queries.drained()]).then(() => this.resolveResult({ ...result, ...(this.stopOwed.size ? { stopOwed: [...this.stopOwed] } : {}) }));
  }

  private emit(e: CohortEvent): void {
    this.events.fire(e);
  }
}
