// The leader's rules of the host agent lifecycle (rendezvous and go, failures and blame, lost
// follower hosts, restarts, the end of an attempt), as the base of agent-lifecycle.ts's Machine:
// each method reads and changes the state copy `s` and appends effects to `fx`. Pure.
import type { ErrorEvent, RunStateError } from '../protocol';
import type { ControlMsg } from './control';
import type { Effect, RecordPatch } from './agent-effects';
import { nextClaimer } from './agent-claim';
import { BLAME_GRACE_MS, CONSEQUENCE, DECIDE_MS, SILENT_FOLLOWER_MS, errorEvent, errorOf, recordStateOf, type AgentConfig, type AgentInput, type AgentState, type EndStatus, type FollowerView, type LinkHealth, type Phase } from './agent-state';

/** A host excluded from the run and the spare host that takes its ranks. */
interface Swap {
  excluded: string;
  replacement: string;
}

export abstract class LeaderRules {
  readonly fx: Effect[] = [];
  constructor(
    readonly c: AgentConfig,
    readonly s: AgentState,
  ) {}

  protected get leader(): boolean {
    return this.c.role === 'leader';
  }
  protected record(patch: RecordPatch): void {
    this.fx.push({ do: 'record', patch });
  }
  protected to(phase: Phase, patch: Omit<RecordPatch, 'state'> = {}): void {
    const before = recordStateOf(this.s.phase);
    this.s.phase = phase;
    const after = recordStateOf(phase);
    if (after !== before || Object.keys(patch).length > 0) this.record({ state: after, ...patch });
  }
  protected log(level: 'info' | 'warn', message: string): void {
    this.fx.push({ do: 'log', level, message });
  }
  protected send(to: string, msg: ControlMsg): void {
    this.fx.push({ do: 'send', to, msg });
  }
  protected sendAll(msg: ControlMsg, except?: string): void {
    for (const h of Object.keys(this.s.followers)) if (h !== except) this.send(h, msg);
  }
  protected get followers(): FollowerView[] {
    return Object.values(this.s.followers);
  }

  protected abstract end(status: EndStatus, error?: RunStateError): void;
  protected abstract fail(error: RunStateError & { logTail?: string[]; hint?: string }): void;

  // ---- leader: rendezvous and go ------------------------------------------------------

  protected maybeGo(): void {
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
      this.s.phase = { k: 'restarting', cause: over.cause, waitingFor: [], told: false, ...(over.swap ? { swap: over.swap } : {}) };
      return this.maybeRestart();
    }
    this.sendAll({ t: 'go', attempt: 1, resume: false });
    this.spawn(1, false);
    this.maybeSpent();
  }

  protected spawn(attempt: number, resume: boolean): void {
    this.s.attempt = attempt;
    this.s.ranksUp = true;
    this.s.ownOk = false;
    this.fx.push({ do: 'spawn', attempt, resume });
    this.to({ k: 'running' });
  }

  /** Restarts spent under a requeueing scheduler: tell it not to run the job again (said once). */
  protected maybeSpent(): void {
    if (!this.c.scheduler?.requeueable || this.s.spentSaid || !this.leader || this.s.restarts < this.c.maxRestarts) return;
    this.s.spentSaid = true;
    this.fx.push({ do: 'no-more-requeues', restarts: this.s.restarts });
  }

  protected maybeOk(): void {
    if (!this.s.ownOk || this.s.phase.k !== 'running') return;
    if (this.followers.every((f) => f.exited === this.s.attempt)) this.end('ok');
  }

  protected failing(): boolean {
    const k = this.s.phase.k;
    return k === 'halting' || k === 'restarting' || k === 'awaiting-scheduler';
  }

  // ---- leader: failures, blame, restart -------------------------------------------------

  /** A rank or host failed: collect it, and after the blame grace decide (restart or fail). */
  /**
   * Hang location across hosts (issue 21 item 4): a `rank-hung` report from a host other than the
   * hung rank's: that rank's host asks it for its stack, once, before the halt stops it (a reporter
   * on the hung rank's own host signals it itself, hang.py).
   */
  protected locateHang(e: ErrorEvent, from: string): void {
    if (e.code !== 'rank-hung' || e.rank < 0 || e.host === from || this.s.phase.k !== 'running') return;
    if (e.host === this.c.host) this.fx.push({ do: 'dump-stack', rank: e.rank });
    else if (this.s.followers[e.host]) this.send(e.host, { t: 'stack', rank: e.rank });
  }

  protected failure(e: ErrorEvent, fromExit = false, lostHost?: string): void {
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

  protected decide(links: LinkHealth[]): void {
    const p = this.s.phase;
    if (p.k !== 'halting') return;
    const isLost = (l: LinkHealth) => l.closed || l.silentMs > (this.c.silentFollowerMs ?? SILENT_FOLLOWER_MS);
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
    root ??= p.failures.find((f) => f.error.code === 'rank-hung') ?? p.failures[0]!;
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
    if (lost.length === 0 && this.c.scheduler?.requeueable) {
      // Bad node out (issue 21 item 5): a rank failed or hung on a node that stays up. Slurm runs the
      // job again without that node when the partition has an idle one (the shell asks it); else the
      // restart stays inside the allocation (requeue-refused).
      this.to({ k: 'awaiting-scheduler', error, excluding: root.error }, { error });
      this.fx.push({ do: 'requeue-excluding', node: root.error.host, cause: root.error });
      return this.log('warn', `${root.error.message}: asking Slurm to run the job again without node ${root.error.host} if the partition has an idle node (restart ${this.s.restarts + 1} of ${this.c.maxRestarts})`);
    }
    this.to({ k: 'restarting', cause: root.error, waitingFor: [], told: false }, { error });
    if (lost.length > 0) this.awaitHosts(lost, root.error);
    else if (root.error.code === 'rank-hung') this.excludeHung(root.error);
    this.maybeRestart();
  }

  /** The profile's first spare host that is neither in the run nor excluded nor taken already. */
  private freeSpare(taken: string[] = []): string | undefined {
    return (this.c.spares ?? []).find((x) => !this.s.followers[x] && !this.s.excluded.includes(x) && !taken.includes(x));
  }

  /**
   * Bad node out for a hung rank (issue 21 item 5): the rank-hung root names a follower host whose
   * agent is alive; with a spare left, that host is excluded as a lost one is: its agent is told to
   * end (its ranks are halted already), and `excludeForSpare` does the rest. The leader's own host is
   * never excluded (rank 0 and its checkpoints live there); no spare: the restart stays on the same
   * hosts, as before. (A row of the agent table: leader+spare, halting with a rank-hung root, timer:blame.)
   */
  private excludeHung(e: ErrorEvent): void {
    const spare = this.freeSpare();
    if (this.s.phase.k !== 'restarting' || e.host === this.c.host || !this.s.followers[e.host] || !spare) return;
    this.send(e.host, { t: 'end', state: 'failed', reason: `rank ${e.rank} on ${e.host} hung: ${e.host} is excluded from run ${this.c.runId}, its ranks move to the spare host ${spare}` });
    this.excludeForSpare(e, [spare], [{ excluded: e.host, replacement: spare }], ` (rank ${e.rank} hung there)`);
  }

  /** Slurm would not run the job again without the failed node: restart inside the allocation, as without spares. */
  protected requeueRefused(why: string): void {
    const p = this.s.phase;
    if (p.k !== 'awaiting-scheduler' || !p.excluding) return;
    this.log('info', `restarting inside the allocation, on ${p.excluding.host} again: ${why}`);
    this.to({ k: 'restarting', cause: p.excluding, waitingFor: [], told: false });
    this.maybeRestart();
  }

  /** Lost hosts' agents died with them: the ranks are stopped, the slots kept, and the restart event names the hosts a client relaunches. */
  protected awaitHosts(hosts: string[], root: ErrorEvent): void {
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
    // Bad node out (issue 21 item 5): a lost host's ranks go to a spare host of the profile when one
    // is left; the lost host is excluded from the run (a hello from it is refused), the spare waited for.
    // The profile's `spare: true` hosts (planRun); a client following the run starts the spare's agent (electron/core/runs/run-spare.ts).
    const moved: Swap[] = [];
    const waiting = hosts.map((h) => {
      const spare = this.freeSpare(moved.map((m) => m.replacement));
      if (!spare) return h;
      moved.push({ excluded: h, replacement: spare });
      return spare;
    });
    this.excludeForSpare(cause, waiting, moved, '', 'host-lost');
  }

  /**
   * The restart waits for hosts: each `moved` host leaves the run for good (its ranks go to its
   * replacement, a spare; a hello from it is refused) and `waiting` (spares and lost hosts that may
   * come back) is waited for; the restart event names them and the first swap; who moved and who is
   * awaited is logged; host-wait bounds the wait. The one place a lost host and a hung one are excluded.
   */
  private excludeForSpare(cause: ErrorEvent, waiting: string[], moved: Swap[], why: string, code?: string): void {
    const p = this.s.phase;
    if (p.k !== 'restarting') return;
    for (const m of moved) {
      this.s.excluded.push(m.excluded);
      delete this.s.followers[m.excluded];
    }
    p.waitingFor = waiting;
    const waitMs = this.c.hostWaitMs;
    this.tellRestart(cause, { ...(code ? { code } : {}), waitingFor: waiting, waitMs, ...(moved[0] ?? {}) });
    for (const m of moved) this.log('warn', `${m.excluded} is excluded from the next attempt${why}: its ranks move to the spare host ${m.replacement} (a client following the run starts its agent)`);
    const back = waiting.filter((h) => !moved.some((m) => m.replacement === h));
    if (back.length) this.log('warn', `waiting up to ${Math.round(waitMs / 1000)} s for ${back.join(', ')} to come back: a client attached to this run (cohort attach ${this.c.runId}) relaunches its agent`);
    this.fx.push({ do: 'timer', name: 'host-wait', ms: waitMs });
  }

  protected tellRestart(cause: ErrorEvent, extra: { code?: string; waitingFor?: string[]; waitMs?: number; excluded?: string; replacement?: string } = {}): void {
    this.s.restarts += 1;
    this.record({ restarts: this.s.restarts });
    const code = extra.code ?? cause.code;
    this.fx.push({ do: 'emit-restart', attempt: this.s.restarts, host: cause.host, rank: cause.rank, reason: cause.message, ...(code ? { code } : {}), ...(extra.waitingFor ? { waitingFor: extra.waitingFor } : {}), ...(extra.waitMs !== undefined ? { waitMs: extra.waitMs } : {}), ...(extra.excluded && extra.replacement ? { excluded: extra.excluded, replacement: extra.replacement } : {}) });
    if (this.s.phase.k === 'restarting') this.s.phase.told = true;
  }

  /** Restart once this host's ranks and every follower's have exited and no lost host is awaited. */
  protected maybeRestart(): void {
    const p = this.s.phase;
    if (p.k !== 'restarting' || this.s.ranksUp || p.waitingFor.length > 0) return;
    if (!this.followers.every((f) => f.exited === this.s.attempt)) return;
    if (!p.told) this.tellRestart(p.cause, p.swap ?? {});
    const attempt = this.s.attempt + 1;
    this.sendAll({ t: 'go', attempt, resume: true });
    this.spawn(attempt, true);
    this.maybeSpent();
  }

  // ---- slots: the global claim order (agent-claim.ts) -----------------------------------

  /**
   * Leader: once every follower has said hello, ask the next host in the claim order to claim (itself
   * at its own turn). Only while hosts gather: the first start, and a restart waiting for lost hosts.
   */
  protected claimInOrder(): void {
    const k = this.s.phase.k;
    if (!this.leader || (k !== 'starting' && k !== 'queued' && k !== 'rendezvous' && k !== 'restarting')) return;
    const next = nextClaimer(this.c, this.s);
    if (!next) return;
    if ('self' in next) return this.claimNow();
    this.s.followers[next.follower]!.asked = true;
    this.send(next.follower, { t: 'claim' });
  }

  /** This host's turn: claim its slots once. Held already (asked again by a relaunched leader): a follower says ready at once. */
  protected claimNow(): void {
    if (this.s.leases) return this.leader ? undefined : this.send('leader', { t: 'ready' });
    if (this.s.claiming) return;
    this.s.claiming = true;
    this.fx.push({ do: 'claim' });
  }

  // ---- leader: followers ---------------------------------------------------------------

  protected hello(i: Extract<AgentInput, { t: 'hello' }>): void {
    if (!this.leader) return;
    const prior = this.s.followers[i.host];
    const p = this.s.phase;
    // A host already joined is refused, unless it is a lost one coming back (its old link is closed).
    const rejoin = prior !== undefined && p.k === 'restarting' && p.waitingFor.includes(i.host) && i.priorClosed;
    // A spare host taking a lost host's ranks joins the same way; an excluded host (lost, replaced) never again.
    const replacing = prior === undefined && p.k === 'restarting' && p.waitingFor.includes(i.host);
    if (!i.tokenOk || !i.host || (prior && !rejoin) || this.s.excluded.includes(i.host)) return void this.fx.push({ do: 'refuse-link', host: i.host });
    // A rejoined agent runs no ranks of the stopped attempt: it counts as exited from it.
    this.s.followers[i.host] = { ranks: i.ranks, ready: false, exited: rejoin || replacing ? this.s.attempt : -1, key: i.key ?? i.host, asked: false };
    this.fx.push({ do: 'accept-link', host: i.host });
    if (rejoin) this.log('info', `${i.host}'s agent rejoined run ${this.c.runId}`);
    if (replacing) this.log('info', `the spare host ${i.host}'s agent joined run ${this.c.runId} in place of ${this.s.excluded.join(', ')}`);
    this.claimInOrder();
  }

  protected followerMsg(host: string, m: ControlMsg): void {
    const f = this.s.followers[host];
    if (!f || !this.leader) return;
    switch (m.t) {
      case 'queued':
        if (this.s.phase.k === 'rendezvous' || this.s.phase.k === 'starting') {
          this.s.phase = { k: 'queued', behind: m.behind, by: host };
          this.s.queuedBehind = m.behind;
          this.record({ state: 'queued', queuedBehind: m.behind });
        }
        this.log('info', `queued behind ${m.behind} on ${host}`);
        return void this.fx.push({ do: 'emit-queued', host, behind: m.behind });
      case 'ready': {
        f.ready = true;
        this.claimInOrder();
        const p = this.s.phase;
        if (p.k === 'restarting' && p.waitingFor.includes(host)) {
          // a lost host is back and holds its slots again: restart once every lost host is
          p.waitingFor = p.waitingFor.filter((h) => h !== host);
          if (p.waitingFor.length === 0) this.fx.push({ do: 'clear-timer', name: 'host-wait' });
          return this.maybeRestart();
        }
        // the leader's own queue word ends once its slots are held (a follower's queued kept it)
        if (p.k === 'queued' && p.by !== undefined && this.s.leases) this.s.phase = { k: 'rendezvous' };
        return this.maybeGo();
      }
      case 'error':
        this.locateHang(m.event, host);
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

  protected followerLost(host: string, why: string): void {
    const f = this.s.followers[host];
    if (!f) return;
    // A follower whose ranks all finished ok and said so may hang up; anything else is a lost host.
    if (f.exited === this.s.attempt && this.s.ownOk) return;
    const message = why === 'connection closed' ? `connection to ${host}'s agent closed` : `${host}: ${why}`;
    this.failure(errorEvent({ host, rank: -1, message, code: 'host-lost' }), false, host);
  }

}
