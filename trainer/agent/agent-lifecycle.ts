// The host agent's lifecycle as data (issue 24 item 1): one state value and one pure
// `transition(cfg, state, input) → { state, effects }` for leader and follower alike. Slurm, SSH and
// local differences enter as configuration (`AgentConfig`), never as flags; the shell (run-agent.ts)
// turns rank exits, control messages, timers, signals and claim results into inputs and runs the
// effects. No clock, no process, no socket here: every rule is tested in milliseconds
// (agent-lifecycle.test.ts walks every row of agent-table.ts, which ARCHITECTURE.md renders).
import type { DoneEvent, ErrorEvent, RunStateError } from '../protocol';
import type { ControlMsg } from './control';
import { LeaderRules } from './agent-leader';
import { CONNECT_TIMEOUT_MS, errorEvent, errorOf, isReplacingAttempt, type AgentConfig, type AgentInput, type AgentState, type EndStatus, type LinkHealth, type Phase, type Step, type TimerName } from './agent-state';

export * from './agent-state';
export type { Effect } from './agent-effects';

export function transition(cfg: AgentConfig, s0: AgentState, input: AgentInput): Step {
  const m = new Machine(cfg, structuredClone(s0));
  m.on(input);
  return { state: m.s, effects: m.fx };
}

/** Runs one input over a copy of the state; the rules are its methods (`fx` collects the effects). */
class Machine extends LeaderRules {
  /** A follower's connect window at the start (the leader waits twice it for its followers). */
  private get connectMs(): number {
    return this.c.connectMs ?? CONNECT_TIMEOUT_MS;
  }

  on(i: AgentInput): void {
    const p = this.s.phase;
    if (p.k === 'stopping' || p.k === 'done') return this.whileEnding(i);
    switch (i.t) {
      case 'begin':
        return this.begin(i);
      case 'prepared':
        if (p.k !== 'starting') return;
        if (this.c.followerRanks > 0 && this.leader && !this.c.controlled) return this.fail({ host: this.c.host, rank: -1, message: `the spec has ${this.c.followerRanks} rank(s) on other hosts but no control endpoint`, code: 'bad-spec' });
        if (!this.leader && !this.c.controlled) return this.fail({ host: this.c.host, rank: -1, message: "a follower needs the leader's control endpoint (spec.control)", code: 'bad-spec' });
        if (!this.leader) this.fx.push({ do: 'connect', withinMs: this.connectMs });
        else if (this.c.followerRanks > 0) this.fx.push({ do: 'listen' }); // a one-host run listens for nobody
        if (this.leader && this.c.followerRanks > 0) this.fx.push({ do: 'timer', name: 'followers-deadline', ms: this.connectMs * 2 });
        // hosts claim one after another in the global claim order, the leader asking (a follower claims at its `claim`)
        return this.claimInOrder();
      case 'refused':
        if (p.k !== 'starting') return;
        if (!this.leader && this.c.controlled) {
          // told to the leader once connected: the run ends now, not at the leader's connect timeout
          this.s.refusal = i.error;
          return void this.fx.push({ do: 'connect', withinMs: this.connectMs });
        }
        // a leader listens all the same: followers that say hello hear the end at once (the shell lingers for them, defect 10)
        if (this.leader && this.c.followerRanks > 0 && this.c.controlled) this.fx.push({ do: 'listen' });
        return this.fail(i.error);
      case 'fatal':
        return this.fail(i.error);
      case 'slots-busy':
        for (const w of i.warnings ?? []) this.log('warn', `${this.c.host}: ${w}`);
        return this.slotsBusy(i.slot, i.busyBy);
      case 'slots-held':
        for (const w of i.warnings ?? []) this.log('warn', `${this.c.host}: ${w}`);
        return this.slotsHeld();
      case 'rank-done':
        return this.rankDone(i.event);
      case 'rank-error':
        return this.rankError(i.event, i.fromExit);
      case 'ranks-exited':
        return this.ranksExited(i.attempt, i.ok, i.noDone);
      case 'hello':
        return this.hello(i);
      case 'follower-msg':
        return this.followerMsg(i.host, i.msg);
      case 'follower-lost':
        return this.followerLost(i.host, i.why);
      case 'leader-connected':
        return this.leaderConnected();
      case 'leader-msg':
        return this.leaderMsg(i.msg);
      case 'leader-lost':
        return this.leaderLost(i.why);
      case 'connect-failed':
        if (this.leader || this.s.connected) return;
        return this.fail(this.s.refusal ?? { host: this.c.host, rank: -1, message: `could not reach the leader's agent at ${i.addr}: ${i.message}`, code: 'leader-unreachable' });
      case 'timer':
        return this.timer(i.name, i.links ?? []);
      case 'signal':
        // Waiting for the scheduler over a lost node: its SIGTERM ends this run of the job; the lost node is the story.
        if (p.k === 'awaiting-scheduler') return this.end('failed', p.error);
        this.log('info', `agent on ${this.c.host}: stopping the run (${i.why})`);
        return this.end('cancelled', { host: this.c.host, rank: -1, message: i.why, code: 'cancelled' });
      case 'io-error':
        return this.ioError(i.what, i.message);
      case 'requeue-refused':
        return this.requeueRefused(i.why);
      default:
        return;
    }
  }

  // ---- start ---------------------------------------------------------------------------

  protected begin(i: Extract<AgentInput, { t: 'begin' }>): void {
    if (i.stopMarker) {
      // a stop is final (issue 24 defect 6): a relaunch after `cohort stop` ends at once
      return this.end('cancelled', { host: this.c.host, rank: -1, message: `run ${this.c.runId} was stopped (stop marker on ${this.c.host})`, code: 'cancelled' });
    }
    const max = this.c.maxRestarts;
    if (i.requeued && this.leader) {
      this.s.restarts = i.requeued.restarts - 1;
      this.record({ restarts: this.s.restarts });
      // Requeued past --max-restarts (Slurm would not take Requeue=0, or a preemption): end with the last reason, train nothing.
      if (i.requeued.restarts > max) return this.fail({ host: i.requeued.host, rank: -1, message: `${i.requeued.reason}; no restarts left (--max-restarts ${max})`, code: 'slurm-requeued' });
      const { excluded, replacement } = i.requeued;
      this.s.overCause = { cause: errorEvent({ host: i.requeued.host, rank: i.requeued.rank ?? -1, message: i.requeued.reason, code: 'slurm-requeued' }), attempt: i.requeued.restarts, ...(excluded && replacement ? { swap: { excluded, replacement } } : {}) };
    }
    if (i.relaunched && this.leader) {
      this.s.relaunched = true;
      // Relaunched over the record of a leader agent that died with its host.
      const message = `host ${this.c.host} lost with the run's leader agent (state ${i.relaunched.state}, last step ${i.relaunched.lastStep})`;
      if (this.s.restarts >= max) return this.fail({ host: this.c.host, rank: -1, code: 'host-lost', message: `${message}; no restarts left (--max-restarts ${max})` });
      const cause = errorEvent({ host: this.c.host, rank: -1, message, code: 'host-lost' });
      this.s.overCause = { cause, attempt: this.s.restarts + 1 };
      this.record({ state: 'restarting', error: errorOf(cause) });
      this.log('info', `agent on ${this.c.host} (leader): relaunched after the host was lost; every rank restarts from the last checkpoint once ${this.c.followerRanks} rank(s) on other hosts are back`);
    }
  }

  protected slotsBusy(slot: number, busyBy: string): void {
    const p = this.s.phase;
    if (p.k !== 'starting' && p.k !== 'queued') return;
    if (!this.c.queue) return this.fail({ host: this.c.host, rank: -1, message: `slot ${slot} on ${this.c.host} is busy with run ${busyBy} (queue off)`, code: 'slots-busy' });
    if (p.k === 'queued' && p.behind === busyBy) return;
    this.s.queuedBehind = busyBy;
    this.to({ k: 'queued', behind: busyBy }, { queuedBehind: busyBy });
    this.log('info', `queued behind ${busyBy}: slot ${slot} on ${this.c.host} is busy`);
    if (this.leader) this.fx.push({ do: 'emit-queued', host: this.c.host, behind: busyBy });
    else if (this.s.connected) this.send('leader', { t: 'queued', behind: busyBy });
  }

  protected slotsHeld(): void {
    const p = this.s.phase;
    this.s.claiming = false;
    if (p.k !== 'starting' && p.k !== 'queued') return;
    this.s.leases = true;
    // queued behind a follower's slots: still queued while that follower is, now holding this host's (the
    // next host's turn); a follower earlier in the claim order may have said ready before this claim ended
    if (p.k === 'queued' && p.by !== undefined && !this.s.followers[p.by]?.ready) {
      this.claimInOrder();
      return this.maybeGo();
    }
    const wasQueued = p.k === 'queued';
    this.s.phase = { k: 'rendezvous' };
    if (wasQueued) {
      this.s.queuedBehind = undefined;
      this.record({ state: 'starting', queuedBehind: undefined });
    }
    if (!this.leader) {
      if (this.s.connected) this.send('leader', { t: 'ready' });
    } else {
      this.claimInOrder();
      this.maybeGo();
    }
  }

  // ---- ranks -----------------------------------------------------------------------------

  protected rankError(e: ErrorEvent, fromExit: boolean): void {
    const p = this.s.phase;
    // Ranks stopped because the leader was lost: their errors are consequences of that loss, told in the restart event.
    if (!this.leader && p.k === 'awaiting-leader') return this.log('warn', `after the leader was lost: ${e.message}`);
    if (!this.leader) {
      if (fromExit) return;
      this.fx.push({ do: 'event', event: e });
      if (this.s.connected) this.send('leader', { t: 'error', event: e });
      return;
    }
    if (!fromExit) this.locateHang(e, this.c.host);
    this.failure(e, fromExit);
  }

  /**
   * Rank 0's `done`. The torch engine's rank 0 ends a failed attempt with `done failed` after its
   * error (events.py fail()); when that attempt is being replaced it is not the run's end: a record
   * (and a --json stream) with two `done`s reads as failed by the first (seen in fresh-clone CI:
   * leases-restarts' torch restart). The restart event tells the attempt's end; the line stays in rank 0's log.
   */
  protected rankDone(e: DoneEvent): void {
    if (e.status !== 'ok' && isReplacingAttempt(this.s)) return void this.fx.push({ do: 'rank-line', rank: 0, text: `(attempt ${this.s.attempt}'s done ${e.status} not recorded: the run restarts)` });
    this.holdOrRecordDone(e);
    this.s.doneAttempt = this.s.attempt;
  }

  /** Rank 0's `done`: recorded now when no rank of this host runs, else held until they have all exited (AgentState.heldDone). */
  protected holdOrRecordDone(e: DoneEvent): void {
    if (this.s.ranksUp) this.s.heldDone = e;
    else this.fx.push({ do: 'record-done', event: e });
  }

  /** The held `done`, recorded: the ranks have all exited (their output is in the record), or the agent is about to exit. */
  protected recordHeldDone(): void {
    if (!this.s.heldDone) return;
    this.fx.push({ do: 'record-done', event: this.s.heldDone });
    delete this.s.heldDone;
  }

  protected ranksExited(attempt: number, ok: boolean, noDone?: ErrorEvent): void {
    if (attempt !== this.s.attempt || !this.s.ranksUp) return;
    this.s.ranksUp = false;
    this.recordHeldDone();
    const failing = this.failing();
    if (ok && noDone && this.s.doneAttempt !== attempt && !failing) {
      // Exit 0 is not success by itself: rank 0 ends every run with a `done` event (both engines).
      return this.leader ? this.failure(noDone, true) : this.rankError(noDone, false);
    }
    if (!this.leader) {
      if (this.s.connected) this.send('leader', { t: 'exited', attempt, ok });
      if (!ok && !this.s.connected && this.s.phase.k !== 'awaiting-leader') this.end('failed', { host: this.c.host, rank: -1, message: 'ranks failed', code: 'rank-exited' });
      return;
    }
    if (ok && !failing) {
      this.s.ownOk = true;
      this.maybeOk();
    } else this.maybeRestart();
  }

  // ---- follower: the leader -----------------------------------------------------------

  protected leaderConnected(): void {
    if (this.leader) return;
    this.s.connected = true;
    if (this.s.phase.k === 'awaiting-leader') {
      this.fx.push({ do: 'clear-timer', name: 'leader-wait' });
      this.log('info', `${this.c.host}: reached the leader's relaunched agent on ${this.c.leaderHost}; the run restarts from its last checkpoint`);
      this.s.phase = { k: 'halted' };
    }
    this.fx.push({ do: 'say-hello' });
    if (this.s.refusal) return this.fail(this.s.refusal);
    if (this.s.leases) this.send('leader', { t: 'ready' });
    else if (this.s.queuedBehind) this.send('leader', { t: 'queued', behind: this.s.queuedBehind });
  }

  protected leaderLost(why: string): void {
    if (this.leader || !this.s.connected) return;
    this.s.connected = false;
    // A lost leader is waited for only in a started run with restarts left, on SSH hosts (Slurm requeues a lost node's job itself).
    const leader = this.c.leaderHost;
    if (this.c.scheduler || leader === undefined || this.s.attempt === 0 || this.s.restarts >= this.c.maxRestarts) {
      return this.fail({ host: this.c.host, rank: -1, message: `lost the leader's agent (${why}); stopping this host's ranks`, code: 'leader-lost' });
    }
    const waitMs = this.c.hostWaitMs;
    const message = `host ${leader} lost: the leader's agent is gone (${why})`;
    this.fx.push({ do: 'timer', name: 'leader-wait', ms: waitMs });
    if (this.s.ranksUp) this.fx.push({ do: 'kill-ranks' });
    this.to({ k: 'awaiting-leader', leader }, { error: { host: leader, rank: -1, message, code: 'host-lost' } });
    this.fx.push({ do: 'emit-restart', attempt: this.s.restarts + 1, host: leader, rank: -1, reason: message, resumeStep: this.s.lastCheckpointStep, code: 'host-lost', waitingFor: [leader], waitMs });
    this.log('warn', `${this.c.host}: waiting up to ${Math.round(waitMs / 1000)} s for ${leader} (the leader) to come back: a client attached to this run (cohort attach ${this.c.runId}) relaunches its agent; this host's ranks are stopped, its slots kept`);
    this.fx.push({ do: 'connect', withinMs: waitMs + 5000 });
  }

  protected leaderMsg(m: ControlMsg): void {
    if (this.leader) return;
    switch (m.t) {
      case 'checkpoint':
        this.s.lastCheckpointStep = Math.max(this.s.lastCheckpointStep, m.step);
        return;
      case 'claim':
        return this.claimNow();
      case 'go':
        if (m.attempt > 1) {
          this.s.restarts = m.attempt - 1;
          this.record({ restarts: this.s.restarts });
        }
        return this.spawn(m.attempt, m.resume);
      case 'stack':
        if (this.s.ranksUp) this.fx.push({ do: 'dump-stack', rank: m.rank });
        return;
      case 'halt':
        if (m.attempt !== this.s.attempt) return;
        this.to({ k: 'halted' });
        if (this.s.ranksUp) this.fx.push({ do: 'kill-ranks' });
        else this.send('leader', { t: 'exited', attempt: this.s.attempt, ok: false });
        return;
      case 'end':
        if (m.state === 'ok') return this.end('ok');
        return this.end(m.state, { host: this.c.host, rank: -1, message: `the leader ended the run: ${m.reason}`, code: m.state });
      default:
        return;
    }
  }

  // ---- timers, I/O, end ----------------------------------------------------------------

  protected timer(name: TimerName, links: LinkHealth[]): void {
    const p = this.s.phase;
    if (name === 'blame') return this.decide(links);
    if (name === 'host-wait' && p.k === 'restarting' && p.waitingFor.length > 0) {
      const missing = p.waitingFor.join(', ');
      const waitMs = this.c.hostWaitMs;
      const spares = p.waitingFor.filter((h) => this.c.spares?.includes(h));
      if (spares.length) return this.fail({ host: spares[0]!, rank: -1, code: 'spare-missing', message: `the spare host ${spares.join(', ')} did not join within ${Math.round(waitMs / 1000)} s to take the ranks of ${this.s.excluded.join(', ')} (${p.cause.message})`, hint: `keep a client following the run (cohort attach ${this.c.runId}): it starts the spare's agent; check that ${spares.join(', ')} is reachable (cohort probe)` });
      return this.fail({ host: p.waitingFor[0]!, rank: -1, code: 'host-lost', message: `host ${missing} lost and not back within ${Math.round(waitMs / 1000)} s (${p.cause.message})`, hint: this.bringBackHint(missing) });
    }
    if (name === 'leader-wait' && p.k === 'awaiting-leader' && !this.s.connected) {
      const waitMs = this.c.hostWaitMs;
      return this.fail({ host: p.leader, rank: -1, code: 'host-lost', message: `host ${p.leader} (the run's leader) lost and not back within ${Math.round(waitMs / 1000)} s`, hint: this.bringBackHint(p.leader) });
    }
    if (name === 'followers-deadline' && this.s.attempt === 0) {
      const have = this.followers.reduce((n, f) => n + f.ranks, 0);
      if (have < this.c.followerRanks) this.fail({ host: this.c.host, rank: -1, message: `only ${have} of ${this.c.followerRanks} rank(s) on other hosts connected within ${(this.connectMs * 2) / 1000} s`, code: 'followers-missing' });
    }
  }

  protected bringBackHint(hosts: string): string {
    return `bring ${hosts} back (sshd reachable, workdir kept) and keep a client attached while the run waits (cohort attach ${this.c.runId}); the host env COHORT_HOST_WAIT_MS sets the wait`;
  }

  /** The record could not be written (a full disk): training goes on; said once, to agent.log. */
  protected ioError(what: string, message: string): void {
    if (this.s.ioWarned) return;
    this.s.ioWarned = true;
    this.fx.push({ do: 'stderr', message: `agent on ${this.c.host}: could not write ${what} (${message}); the run goes on, its record lags until there is room` });
  }

  fail(error: RunStateError & { logTail?: string[] }): void {
    const event = errorEvent(error);
    this.fx.push({ do: 'event', event });
    if (!this.leader && this.s.connected) this.send('leader', { t: 'error', event: { ...event, logTail: [] } });
    const { logTail: _t, ...e } = error; // the record keeps the hint: the one error shape (issue 24 item 5)
    this.end('failed', e);
  }

  protected end(status: EndStatus, error?: RunStateError): void {
    this.fx.push({ do: 'clear-timers' });
    this.sendAll({ t: 'end', state: status, reason: error?.message ?? status });
    if (this.s.ranksUp) this.fx.push({ do: 'kill-ranks' });
    this.s.phase = { k: 'stopping', status, ...(error ? { error } : {}) };
    this.fx.push({ do: 'stop' });
  }

  protected whileEnding(i: AgentInput): void {
    const p = this.s.phase as Extract<Phase, { k: 'stopping' | 'done' }>;
    if (i.t === 'stopped' && p.k === 'stopping') {
      this.recordHeldDone(); // before the terminal state: a follower of the record stops once the state is terminal and the file drained
      this.s.phase = { k: 'done', status: p.status, ...(p.error ? { error: p.error } : {}) };
      this.record({ state: p.status, ...(p.error ? { error: p.error } : {}), ended: true });
      // A leader whose first start failed lingers for the followers still to say hello (defect 10); a relaunched one does not.
      const linger = this.leader && this.c.followerRanks > 0 && p.status === 'failed' && this.s.attempt === 0 && !this.s.relaunched;
      return void this.fx.push({ do: 'exit', status: p.status, ...(linger ? { linger } : {}) });
    }
    if (i.t === 'ranks-exited' && i.attempt === this.s.attempt) {
      this.s.ranksUp = false;
      this.recordHeldDone();
    }
    // A `done` while ending (the ranks finishing as they are stopped) is the run's record all the same.
    if (i.t === 'rank-done') this.holdOrRecordDone(i.event);
    // A follower that says hello after the run ended (a start the leader refused; the shell lingers for
    // them): told at once, so it releases its slots now, not at its connect timeout (issue 24 defect 10).
    if (i.t === 'hello' && this.leader && i.tokenOk && i.host && !this.s.followers[i.host]) {
      this.s.followers[i.host] = { ranks: i.ranks, ready: false, exited: -1, key: i.key ?? i.host, asked: false };
      this.fx.push({ do: 'accept-link', host: i.host });
      this.send(i.host, { t: 'end', state: p.status, reason: p.error?.message ?? p.status });
    }
  }
}
