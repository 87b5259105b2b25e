// The host agent's lifecycle as data (issue 24 item 1): one state value and one pure
// `transition(cfg, state, input) → { state, effects }` for leader and follower alike. Slurm, SSH and
// local differences enter as configuration (`AgentConfig`), never as flags; the shell (run-agent.ts)
// turns rank exits, control messages, timers, signals and claim results into inputs and runs the
// effects. No clock, no process, no socket here: every rule is tested in milliseconds
// (agent-lifecycle.test.ts walks every row of agent-table.ts, which ARCHITECTURE.md renders).
import type { ErrorEvent, HostRunState, RunStateError } from '../protocol';
import type { ControlMsg } from './control';
import type { Effect, RecordPatch } from './agent-effects';

export type { Effect } from './agent-effects';

/** Static per run and host: what differs between leader and follower, SSH/local and Slurm. */
export interface AgentConfig {
  role: 'leader' | 'follower';
  host: string;
  runId: string;
  maxRestarts: number;
  /** Leader: ranks on other hosts (0: a one-host run, no control channel). */
  followerRanks: number;
  /** false: busy slots fail the start (--no-queue). */
  queue: boolean;
  /** Under a scheduler that may run the job again (Slurm). */
  scheduler?: { requeueable: boolean };
  /** Follower on SSH hosts: the leader's host, waited for when it is lost (undefined: not waited for). */
  leaderHost?: string;
  hostWaitMs: number;
}

export interface Failure {
  error: ErrorEvent;
  consequence: boolean;
}

export type Phase =
  | { k: 'starting' }
  | { k: 'queued'; behind: string }
  /** Slots held: the leader waits for every follower to be ready; a follower for the leader's go. */
  | { k: 'rendezvous' }
  | { k: 'running' }
  /** Leader: a failure came; the ranks are being stopped and the blame grace runs before deciding. */
  | { k: 'halting'; failures: Failure[] }
  /** Leader: restart decided; waits for every rank of the attempt to exit and for lost hosts to come back. */
  | { k: 'restarting'; cause: ErrorEvent; waitingFor: string[]; told: boolean }
  /** Leader under a requeueing scheduler: a node is lost, Slurm ends this run of the job. */
  | { k: 'awaiting-scheduler'; error: RunStateError }
  /** Follower: halted by the leader, waits for its next go. */
  | { k: 'halted' }
  /** Follower: the leader's agent is gone; waits for its relaunch (run-rejoin by a client). */
  | { k: 'awaiting-leader'; leader: string }
  /** Ending: ranks killed, links flushed; then `stopped`. */
  | { k: 'stopping'; status: EndStatus; error?: RunStateError }
  | { k: 'done'; status: EndStatus };
export type PhaseName = Phase['k'];
export type EndStatus = 'ok' | 'failed' | 'cancelled';

export interface FollowerView {
  ranks: number;
  ready: boolean;
  /** The last attempt all of its ranks exited from (-1: none). */
  exited: number;
}

export interface AgentState {
  phase: Phase;
  attempt: number;
  restarts: number;
  /** The host's ranks run (spawned and not all exited). */
  ranksUp: boolean;
  leases: boolean;
  /** The attempt in which rank 0 reported `done` (-1: none yet). */
  doneAttempt: number;
  /** Leader: this host's ranks of the attempt all ended ok. */
  ownOk: boolean;
  followers: Record<string, FollowerView>;
  /** Leader: a restart of an attempt no rank runs any more (requeued job, relaunched leader), done at go. */
  overCause?: { cause: ErrorEvent; attempt: number };
  spentSaid: boolean;
  /** Follower: a pre-launch refusal told to the leader once connected. */
  refusal?: RunStateError & { hint?: string };
  connected: boolean;
  queuedBehind?: string;
  lastCheckpointStep: number;
  ioWarned: boolean;
}

/** Link health at the blame grace's end (the shell measures the sockets). */
export interface LinkHealth {
  host: string;
  closed: boolean;
  silentMs: number;
}

export type AgentInput =
  | { t: 'begin'; requeued?: { restarts: number; host: string; reason: string }; relaunched?: { state: HostRunState; lastStep: number }; stopMarker?: boolean }
  | { t: 'prepared' }
  | { t: 'refused'; error: RunStateError & { hint?: string } }
  /** The agent cannot go on (a bad spec, the control port taken): the run fails with it. */
  | { t: 'fatal'; error: RunStateError }
  | { t: 'slots-held' }
  | { t: 'slots-busy'; slot: number; busyBy: string }
  | { t: 'rank-done' }
  | { t: 'rank-error'; event: ErrorEvent; fromExit: boolean }
  | { t: 'ranks-exited'; attempt: number; ok: boolean; noDone?: ErrorEvent }
  | { t: 'hello'; host: string; ranks: number; tokenOk: boolean; priorClosed: boolean }
  | { t: 'follower-msg'; host: string; msg: ControlMsg }
  | { t: 'follower-lost'; host: string; why: string }
  | { t: 'leader-connected' }
  | { t: 'leader-msg'; msg: ControlMsg }
  | { t: 'leader-lost'; why: string }
  | { t: 'connect-failed'; message: string; addr: string }
  | { t: 'timer'; name: TimerName; links?: LinkHealth[] }
  | { t: 'signal'; why: string }
  | { t: 'io-error'; what: string; message: string }
  | { t: 'stopped' };
export type InputName = AgentInput['t'];
export type TimerName = 'blame' | 'host-wait' | 'leader-wait' | 'followers-deadline';

export interface Step {
  state: AgentState;
  effects: Effect[];
}

export const BLAME_GRACE_MS = 1500;
export const DECIDE_MS = 200;
/** A follower agent silent this long (it beats every second) is taken for lost when a peer-lost needs a cause. */
export const SILENT_FOLLOWER_MS = 5000;
export const CONNECT_TIMEOUT_MS = 30_000;
const CONSEQUENCE = new Set(['peer-lost']);

export function initialState(): AgentState {
  return { phase: { k: 'starting' }, attempt: 0, restarts: 0, ranksUp: false, leases: false, doneAttempt: -1, ownOk: false, followers: {}, spentSaid: false, connected: false, lastCheckpointStep: 0, ioWarned: false };
}

export const isEnding = (s: AgentState): boolean => s.phase.k === 'stopping' || s.phase.k === 'done';
/** The record's state word for a phase. */
export function recordStateOf(p: Phase): HostRunState {
  switch (p.k) {
    case 'queued':
      return 'queued';
    case 'running':
    case 'halting':
      return 'running';
    case 'restarting':
    case 'awaiting-scheduler':
    case 'halted':
    case 'awaiting-leader':
      return 'restarting';
    case 'done':
      return p.status;
    default:
      return 'starting';
  }
}

export const errorOf = (e: ErrorEvent): RunStateError => ({ host: e.host, rank: e.rank, message: e.message, ...(e.code ? { code: e.code } : {}) });
export const errorEvent = (e: RunStateError & { hint?: string; logTail?: string[] }, time = 0): ErrorEvent => ({
  v: 1,
  time,
  type: 'error',
  rank: e.rank,
  host: e.host,
  message: e.message,
  logTail: e.logTail ?? [],
  ...(e.code ? { code: e.code } : {}),
  ...(e.hint ? { hint: e.hint } : {}),
});

export function transition(cfg: AgentConfig, s0: AgentState, input: AgentInput): Step {
  const m = new Machine(cfg, structuredClone(s0));
  m.on(input);
  return { state: m.s, effects: m.fx };
}

/** Runs one input over a copy of the state; the rules are its methods (`fx` collects the effects). */
class Machine {
  readonly fx: Effect[] = [];
  constructor(
    readonly c: AgentConfig,
    readonly s: AgentState,
  ) {}

  private get leader(): boolean {
    return this.c.role === 'leader';
  }
  private record(patch: RecordPatch): void {
    this.fx.push({ do: 'record', patch });
  }
  private to(phase: Phase, patch: Omit<RecordPatch, 'state'> = {}): void {
    const before = recordStateOf(this.s.phase);
    this.s.phase = phase;
    const after = recordStateOf(phase);
    if (after !== before || Object.keys(patch).length > 0) this.record({ state: after, ...patch });
  }
  private log(level: 'info' | 'warn', message: string): void {
    this.fx.push({ do: 'log', level, message });
  }
  private send(to: string, msg: ControlMsg): void {
    this.fx.push({ do: 'send', to, msg });
  }
  private sendAll(msg: ControlMsg, except?: string): void {
    for (const h of Object.keys(this.s.followers)) if (h !== except) this.send(h, msg);
  }
  private get followers(): FollowerView[] {
    return Object.values(this.s.followers);
  }

  on(i: AgentInput): void {
    const p = this.s.phase;
    if (p.k === 'done') return;
    if (p.k === 'stopping') return this.whileStopping(i);
    switch (i.t) {
      case 'begin':
        return this.begin(i);
      case 'prepared':
        if (p.k !== 'starting') return;
        this.fx.push(this.leader ? { do: 'listen' } : { do: 'connect', withinMs: CONNECT_TIMEOUT_MS });
        if (this.leader && this.c.followerRanks > 0) this.fx.push({ do: 'timer', name: 'followers-deadline', ms: CONNECT_TIMEOUT_MS * 2 });
        return void this.fx.push({ do: 'claim' });
      case 'refused':
        if (p.k !== 'starting') return;
        if (!this.leader && this.c.leaderHost !== undefined) {
          // told to the leader once connected: the run ends now, not at the leader's connect timeout
          this.s.refusal = i.error;
          return void this.fx.push({ do: 'connect', withinMs: CONNECT_TIMEOUT_MS });
        }
        return this.fail(i.error);
      case 'fatal':
        return this.fail(i.error);
      case 'slots-busy':
        return this.slotsBusy(i.slot, i.busyBy);
      case 'slots-held':
        return this.slotsHeld();
      case 'rank-done':
        this.s.doneAttempt = this.s.attempt;
        return;
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
      default:
        return;
    }
  }

  // ---- start ---------------------------------------------------------------------------

  private begin(i: Extract<AgentInput, { t: 'begin' }>): void {
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
      this.s.overCause = { cause: errorEvent({ host: i.requeued.host, rank: -1, message: i.requeued.reason, code: 'slurm-requeued' }), attempt: i.requeued.restarts };
    }
    if (i.relaunched && this.leader) {
      // Relaunched over the record of a leader agent that died with its host.
      const message = `host ${this.c.host} lost with the run's leader agent (state ${i.relaunched.state}, last step ${i.relaunched.lastStep})`;
      if (this.s.restarts >= max) return this.fail({ host: this.c.host, rank: -1, code: 'host-lost', message: `${message}; no restarts left (--max-restarts ${max})` });
      const cause = errorEvent({ host: this.c.host, rank: -1, message, code: 'host-lost' });
      this.s.overCause = { cause, attempt: this.s.restarts + 1 };
      this.record({ state: 'restarting', error: errorOf(cause) });
      this.log('info', `agent on ${this.c.host} (leader): relaunched after the host was lost; every rank restarts from the last checkpoint once ${this.c.followerRanks} rank(s) on other hosts are back`);
    }
  }

  private slotsBusy(slot: number, busyBy: string): void {
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

  private slotsHeld(): void {
    const p = this.s.phase;
    if (p.k !== 'starting' && p.k !== 'queued') return;
    this.s.leases = true;
    const wasQueued = p.k === 'queued';
    this.s.phase = { k: 'rendezvous' };
    if (wasQueued) {
      this.s.queuedBehind = undefined;
      this.record({ state: 'starting', queuedBehind: undefined });
    }
    if (!this.leader) {
      if (this.s.connected) this.send('leader', { t: 'ready' });
    } else this.maybeGo();
  }

  // ---- leader: rendezvous and go ------------------------------------------------------

  private maybeGo(): void {
    if (!this.leader || this.s.phase.k !== 'rendezvous' || !this.s.leases || this.s.attempt > 0) return;
    const fs = this.followers;
    if (fs.reduce((n, f) => n + f.ranks, 0) < this.c.followerRanks || !fs.every((f) => f.ready)) return;
    if (this.s.queuedBehind) {
      this.s.queuedBehind = undefined;
      this.record({ queuedBehind: undefined });
    }
    const over = this.s.overCause;
    if (over) {
      // An attempt no rank runs any more (the scheduler ran the job again; this agent replaces a lost
      // leader): every rank resumes from the newest checkpoint, counted as a restart.
      this.s.overCause = undefined;
      this.s.attempt = over.attempt;
      for (const f of fs) f.exited = over.attempt;
      this.s.ownOk = false;
      this.s.phase = { k: 'restarting', cause: over.cause, waitingFor: [], told: false };
      return this.maybeRestart();
    }
    this.sendAll({ t: 'go', attempt: 1, resume: false });
    this.spawn(1, false);
    this.maybeSpent();
  }

  private spawn(attempt: number, resume: boolean): void {
    this.s.attempt = attempt;
    this.s.ranksUp = true;
    this.s.ownOk = false;
    this.fx.push({ do: 'spawn', attempt, resume });
    this.to({ k: 'running' });
  }

  /** Restarts spent under a requeueing scheduler: tell it not to run the job again (said once). */
  private maybeSpent(): void {
    if (!this.c.scheduler?.requeueable || this.s.spentSaid || !this.leader || this.s.restarts < this.c.maxRestarts) return;
    this.s.spentSaid = true;
    this.fx.push({ do: 'no-more-requeues', restarts: this.s.restarts });
  }

  private maybeOk(): void {
    if (!this.s.ownOk || this.s.phase.k !== 'running') return;
    if (this.followers.every((f) => f.exited === this.s.attempt)) this.end('ok');
  }

  // ---- ranks -----------------------------------------------------------------------------

  private rankError(e: ErrorEvent, fromExit: boolean): void {
    const p = this.s.phase;
    // Ranks stopped because the leader was lost: their errors are consequences of that loss, told in the restart event.
    if (!this.leader && p.k === 'awaiting-leader') return this.log('warn', `after the leader was lost: ${e.message}`);
    if (!this.leader) {
      if (fromExit) return;
      this.fx.push({ do: 'event', event: e });
      if (this.s.connected) this.send('leader', { t: 'error', event: e });
      return;
    }
    this.failure(e, fromExit);
  }

  private ranksExited(attempt: number, ok: boolean, noDone?: ErrorEvent): void {
    if (attempt !== this.s.attempt || !this.s.ranksUp) return;
    this.s.ranksUp = false;
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

  private failing(): boolean {
    const k = this.s.phase.k;
    return k === 'halting' || k === 'restarting' || k === 'awaiting-scheduler';
  }

  // ---- leader: failures, blame, restart -------------------------------------------------

  /** A rank or host failed: collect it, and after the blame grace decide (restart or fail). */
  private failure(e: ErrorEvent, fromExit = false, lostHost?: string): void {
    const p = this.s.phase;
    if (p.k === 'restarting' || p.k === 'awaiting-scheduler') return; // decided already: later failures follow from it
    if (p.k === 'halting') {
      // a rank that reported its own error and then exited: keep the report, not a second line
      if (!fromExit || !p.failures.some((f) => f.error.host === e.host && f.error.rank === e.rank)) p.failures.push({ error: e, consequence: CONSEQUENCE.has(e.code ?? '') });
      return;
    }
    const consequence = CONSEQUENCE.has(e.code ?? '');
    this.s.phase = { k: 'halting', failures: [{ error: e, consequence }] };
    if (this.s.ranksUp) this.fx.push({ do: 'kill-ranks' });
    this.sendAll({ t: 'halt', attempt: this.s.attempt }, lostHost);
    this.fx.push({ do: 'timer', name: 'blame', ms: consequence ? BLAME_GRACE_MS : DECIDE_MS });
  }

  private decide(links: LinkHealth[]): void {
    const p = this.s.phase;
    if (p.k !== 'halting') return;
    const isLost = (l: LinkHealth) => l.closed || l.silentMs > SILENT_FOLLOWER_MS;
    let root = p.failures.find((f) => !f.consequence);
    if (!root) {
      // Only consequences (a rank saw a peer vanish): a follower whose agent has gone silent is the cause
      // (a dead host sends nothing, not even the FIN that closes its control link).
      const silent = links.find(isLost);
      if (silent) {
        const why = silent.closed ? 'its control connection closed' : `its agent has sent nothing for ${Math.round(silent.silentMs / 1000)} s`;
        root = { error: errorEvent({ host: silent.host, rank: -1, message: `host ${silent.host} lost: ${why} (host down or unreachable); its ranks' peers lost them`, code: 'host-lost' }), consequence: false };
        p.failures.unshift(root);
      }
    }
    root ??= p.failures[0]!;
    // The record gets the root cause first, then what followed from it.
    for (const f of [root, ...p.failures.filter((x) => x !== root)]) this.fx.push({ do: 'event', event: f.error });
    const error = errorOf(root.error);
    const lost = links.filter((l) => (root.error.code === 'host-lost' && root.error.host === l.host) || isLost(l)).map((l) => l.host);
    if (this.s.restarts >= this.c.maxRestarts) return this.end('failed', error);
    if (lost.length > 0 && this.c.scheduler) {
      if (!this.c.scheduler.requeueable) return this.end('failed', error);
      // A lost node is Slurm's to see: it kills this run of the job and requeues it; the next run resumes from the checkpoint.
      this.to({ k: 'awaiting-scheduler', error }, { error });
      return this.log('warn', `${root.error.message}: waiting for Slurm to requeue job (restart ${this.s.restarts + 1} of ${this.c.maxRestarts})`);
    }
    this.to({ k: 'restarting', cause: root.error, waitingFor: [], told: false }, { error });
    if (lost.length > 0) this.awaitHosts(lost, root.error);
    this.maybeRestart();
  }

  /** Lost hosts' agents died with them: the ranks are stopped, the slots kept, and the restart event names the hosts a client relaunches. */
  private awaitHosts(hosts: string[], root: ErrorEvent): void {
    const p = this.s.phase;
    if (p.k !== 'restarting') return;
    // the story is the lost host, also when a peer's error came first and the host's silence decided it
    const cause = root.code === 'host-lost' ? root : { ...root, host: hosts[0]!, rank: -1, code: 'host-lost', message: `host ${hosts[0]} lost: its agent's control connection closed (${root.message})` };
    for (const h of hosts) {
      const f = this.s.followers[h];
      if (!f) continue;
      f.exited = this.s.attempt; // its ranks died with the host
      f.ready = false;
      this.fx.push({ do: 'close-link', host: h, why: 'host lost' }); // a late beat from a half-dead host must not count as back
    }
    p.waitingFor = hosts;
    const waitMs = this.c.hostWaitMs;
    this.tellRestart(cause, { code: 'host-lost', waitingFor: hosts, waitMs });
    this.log('warn', `waiting up to ${Math.round(waitMs / 1000)} s for ${hosts.join(', ')} to come back: a client attached to this run (cohort attach ${this.c.runId}) relaunches its agent`);
    this.fx.push({ do: 'timer', name: 'host-wait', ms: waitMs });
  }

  private tellRestart(cause: ErrorEvent, extra: { code?: string; waitingFor?: string[]; waitMs?: number } = {}): void {
    this.s.restarts += 1;
    this.record({ restarts: this.s.restarts });
    const code = extra.code ?? cause.code;
    this.fx.push({ do: 'emit-restart', attempt: this.s.restarts, host: cause.host, rank: cause.rank, reason: cause.message, ...(code ? { code } : {}), ...(extra.waitingFor ? { waitingFor: extra.waitingFor } : {}), ...(extra.waitMs !== undefined ? { waitMs: extra.waitMs } : {}) });
    if (this.s.phase.k === 'restarting') this.s.phase.told = true;
  }

  /** Restart once this host's ranks and every follower's have exited and no lost host is awaited. */
  private maybeRestart(): void {
    const p = this.s.phase;
    if (p.k !== 'restarting' || this.s.ranksUp || p.waitingFor.length > 0) return;
    if (!this.followers.every((f) => f.exited === this.s.attempt)) return;
    if (!p.told) this.tellRestart(p.cause);
    const attempt = this.s.attempt + 1;
    this.sendAll({ t: 'go', attempt, resume: true });
    this.spawn(attempt, true);
    this.maybeSpent();
  }

  // ---- leader: followers ---------------------------------------------------------------

  private hello(i: Extract<AgentInput, { t: 'hello' }>): void {
    if (!this.leader) return;
    const prior = this.s.followers[i.host];
    const p = this.s.phase;
    // A host already joined is refused, unless it is a lost one coming back (its old link is closed).
    const rejoin = prior !== undefined && p.k === 'restarting' && p.waitingFor.includes(i.host) && i.priorClosed;
    if (!i.tokenOk || !i.host || (prior && !rejoin)) return void this.fx.push({ do: 'refuse-link', host: i.host });
    // A rejoined agent runs no ranks of the stopped attempt: it counts as exited from it.
    this.s.followers[i.host] = { ranks: i.ranks, ready: false, exited: rejoin ? this.s.attempt : -1 };
    this.fx.push({ do: 'accept-link', host: i.host });
    if (rejoin) this.log('info', `${i.host}'s agent rejoined run ${this.c.runId}`);
  }

  private followerMsg(host: string, m: ControlMsg): void {
    const f = this.s.followers[host];
    if (!f || !this.leader) return;
    switch (m.t) {
      case 'queued':
        if (this.s.phase.k === 'rendezvous' || this.s.phase.k === 'starting') {
          this.s.phase = { k: 'queued', behind: m.behind };
          this.s.queuedBehind = m.behind;
          this.record({ state: 'queued', queuedBehind: m.behind });
        }
        this.log('info', `queued behind ${m.behind} on ${host}`);
        return void this.fx.push({ do: 'emit-queued', host, behind: m.behind });
      case 'ready': {
        f.ready = true;
        const p = this.s.phase;
        if (p.k === 'restarting' && p.waitingFor.includes(host)) {
          // a lost host is back and holds its slots again: restart once every lost host is
          p.waitingFor = p.waitingFor.filter((h) => h !== host);
          if (p.waitingFor.length === 0) this.fx.push({ do: 'clear-timer', name: 'host-wait' });
          return this.maybeRestart();
        }
        // the leader's own queue word ends once its slots are held (a follower's queued kept it)
        if (p.k === 'queued' && this.s.leases) this.s.phase = { k: 'rendezvous' };
        return this.maybeGo();
      }
      case 'error':
        return this.failure(m.event);
      case 'exited':
        f.exited = m.attempt;
        if (m.attempt === this.s.attempt) {
          if (m.ok) this.maybeOk();
          else this.maybeRestart();
        }
        return;
      default:
        return;
    }
  }

  private followerLost(host: string, why: string): void {
    const f = this.s.followers[host];
    if (!f) return;
    // A follower whose ranks all finished ok and said so may hang up; anything else is a lost host.
    if (f.exited === this.s.attempt && this.s.ownOk) return;
    const message = why === 'connection closed' ? `connection to ${host}'s agent closed` : `${host}: ${why}`;
    this.failure(errorEvent({ host, rank: -1, message, code: 'host-lost' }), false, host);
  }

  // ---- follower: the leader -----------------------------------------------------------

  private leaderConnected(): void {
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

  private leaderLost(why: string): void {
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

  private leaderMsg(m: ControlMsg): void {
    if (this.leader) return;
    switch (m.t) {
      case 'checkpoint':
        this.s.lastCheckpointStep = Math.max(this.s.lastCheckpointStep, m.step);
        return;
      case 'go':
        if (m.attempt > 1) {
          this.s.restarts = m.attempt - 1;
          this.record({ restarts: this.s.restarts });
        }
        return this.spawn(m.attempt, m.resume);
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

  private timer(name: TimerName, links: LinkHealth[]): void {
    const p = this.s.phase;
    if (name === 'blame') return this.decide(links);
    if (name === 'host-wait' && p.k === 'restarting' && p.waitingFor.length > 0) {
      const missing = p.waitingFor.join(', ');
      const waitMs = this.c.hostWaitMs;
      return this.fail({ host: p.waitingFor[0]!, rank: -1, code: 'host-lost', message: `host ${missing} lost and not back within ${Math.round(waitMs / 1000)} s (${p.cause.message})`, hint: this.bringBackHint(missing) });
    }
    if (name === 'leader-wait' && p.k === 'awaiting-leader' && !this.s.connected) {
      const waitMs = this.c.hostWaitMs;
      return this.fail({ host: p.leader, rank: -1, code: 'host-lost', message: `host ${p.leader} (the run's leader) lost and not back within ${Math.round(waitMs / 1000)} s`, hint: this.bringBackHint(p.leader) });
    }
    if (name === 'followers-deadline' && this.s.attempt === 0) {
      const have = this.followers.reduce((n, f) => n + f.ranks, 0);
      if (have < this.c.followerRanks) this.fail({ host: this.c.host, rank: -1, message: `only ${have} of ${this.c.followerRanks} rank(s) on other hosts connected within ${CONNECT_TIMEOUT_MS / 1000} s`, code: 'followers-missing' });
    }
  }

  private bringBackHint(hosts: string): string {
    return `bring ${hosts} back (sshd reachable, workdir kept) and keep a client attached while the run waits (cohort attach ${this.c.runId}); the host env COHORT_HOST_WAIT_MS sets the wait`;
  }

  /** The record could not be written (a full disk): training goes on; said once, to agent.log. */
  private ioError(what: string, message: string): void {
    if (this.s.ioWarned) return;
    this.s.ioWarned = true;
    this.fx.push({ do: 'stderr', message: `agent on ${this.c.host}: could not write ${what} (${message}); the run goes on, its record lags until there is room` });
  }

  fail(error: RunStateError & { logTail?: string[]; hint?: string }): void {
    const event = errorEvent(error);
    this.fx.push({ do: 'event', event });
    if (!this.leader && this.s.connected) this.send('leader', { t: 'error', event: { ...event, logTail: [] } });
    const { logTail: _t, hint: _h, ...e } = error;
    this.end('failed', e);
  }

  private end(status: EndStatus, error?: RunStateError): void {
    this.fx.push({ do: 'clear-timers' });
    this.sendAll({ t: 'end', state: status, reason: error?.message ?? status });
    if (this.s.ranksUp) this.fx.push({ do: 'kill-ranks' });
    this.s.phase = { k: 'stopping', status, ...(error ? { error } : {}) };
    this.fx.push({ do: 'stop' });
  }

  private whileStopping(i: AgentInput): void {
    const p = this.s.phase as Extract<Phase, { k: 'stopping' }>;
    if (i.t === 'stopped') {
      this.s.phase = { k: 'done', status: p.status };
      this.record({ state: p.status, ...(p.error ? { error: p.error } : {}), ended: true });
      return void this.fx.push({ do: 'exit', status: p.status });
    }
    if (i.t === 'ranks-exited' && i.attempt === this.s.attempt) this.s.ranksUp = false;
    // A follower that says hello after the run ended (a start the leader refused): told at once, so it
    // releases its slots now instead of at its connect timeout (issue 24 defect 10).
    if (i.t === 'hello' && this.leader && i.tokenOk && i.host && !this.s.followers[i.host]) {
      this.s.followers[i.host] = { ranks: i.ranks, ready: false, exited: -1 };
      this.fx.push({ do: 'accept-link', host: i.host });
      this.send(i.host, { t: 'end', state: p.status, reason: p.error?.message ?? p.status });
    }
  }
}
