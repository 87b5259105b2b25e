// The detached agent of a durable run (`agent-run --run ID`, started by run-start): one per host per
// run, alive exactly as long as the run on this host. It reads the spec from the run dir, writes
// the host record (events.jsonl, state.json, logs), claims the slots, and on the leader (the host
// of rank 0) owns the run: it waits for every follower agent to hold its slots, says go, detects a
// failing rank or a lost host with no client attached, blames the root cause (a rank's own exit,
// not a peer that lost it), and restarts from the last checkpoint while restarts are left.
import { readFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { DisposableStore, HOST_WAIT_MS, SlowRankWatch, decodeLaunchSpec, isTerminalRunState, runSwitches, slowRankEvent, type CohortEvent, type ErrorEvent, type HostRunState, type LaunchSpec, type RunStateError, type RunStateRecord } from '../protocol';
import { newestCheckpointStep } from '../train/checkpoint';
import { readGpuRows } from '../util/nvidia-smi';
import { chooseEngine, type EngineChoice } from './engine-choice';
import { gpuPreflight } from './gpu-preflight';
import { ControlLink, tokenMatches, type ControlMsg } from './control';
import { claimSlots, releaseSlots, slotsOf } from './leases';
import { claimKey, nextToClaim } from './claim-order';
import { RankGroup, emitTo, type RankExit, type RankSink } from './ranks';
import { RunRecordWriter, readState, recordPaths, runDirOf } from './run-record';
import { onProcessSignals } from '../util/node-lifecycle';

export const AGENT_RUN_EXIT = { ok: 0, failed: 1, cancelled: 130 } as const;
/** How long the leader waits after a consequence-type failure (a peer lost) for the root cause to arrive. */
const BLAME_GRACE_MS = 1500;
const QUEUE_POLL_MS = 500;
/** A follower agent silent this long (it beats every second) is taken for lost when a peer-lost needs a cause. */
const SILENT_FOLLOWER_MS = 5000;
const CONNECT_TIMEOUT_MS = 30_000;
/** Between a follower's tries to reach its leader's control port (a SYN to a host that is down would otherwise hang ~2 min). */
const CONNECT_TRY_MS = 3000;
/** Codes that describe a consequence of another rank's failure, never the cause. */
const CONSEQUENCE = new Set(['peer-lost']);

interface Failure {
  error: ErrorEvent;
  consequence: boolean;
}

export interface AgentRunOpts {
  trainerEntry: string;
  enginesDir: string;
  workdir: string;
  runId: string;
  /** Set when this agent runs on a node other than the one that serves its record (a Slurm node). */
  agentNode?: string;
  /** Leader: how long to wait for a lost follower host's agent to rejoin (default HOST_WAIT_MS). */
  hostWaitMs?: number;
  /** Set under a scheduler that may run the job again (Slurm, agent-slurm in slurm.ts). */
  scheduler?: {
    /** The scheduler's restart count of this job (SLURM_RESTART_COUNT). */
    attempt: number;
    /** The job was submitted requeueable: a lost node is left to the scheduler while restarts are left. */
    requeueable: boolean;
    /** The leader of a job the scheduler ran again: why, and the run's restart count with this one. */
    requeued?: SchedulerRestart;
    /** Restarts spent: asks the scheduler not to run the job again; resolves to its refusal, if any. */
    noMoreRequeues: () => Promise<string | undefined>;
  };
}

/** COHORT_HOST_WAIT_MS from the host's env (the profile's host env wins): a whole number of ms, else the default. */
export function hostWaitMsOf(env: Record<string, string | undefined>): number {
  const v = env.COHORT_HOST_WAIT_MS;
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : HOST_WAIT_MS;
}

/** A restart the scheduler made (a requeued job): the node it names and its reason. */
export interface SchedulerRestart {
  restarts: number;
  host: string;
  reason: string;
}

export async function runDetachedAgent(opts: AgentRunOpts): Promise<number> {
  const dir = runDirOf(opts.workdir, opts.runId);
  const spec = decodeLaunchSpec(JSON.parse(readFileSync(recordPaths(dir).spec, 'utf8')));
  // A leader's record already there, not ended: run-rejoin relaunched this agent after the leader host
  // was lost (its agent died with it). The run goes on from that record. (A Slurm job's next run has
  // its own account of a requeue: scheduler.requeued.)
  const prior = !opts.scheduler && (spec.role ?? 'leader') === 'leader' ? readState(dir) : undefined;
  const relaunched = prior && !isTerminalRunState(prior.state) ? prior : undefined;
  const agent = new HostAgent(spec, dir, { ...opts, hostWaitMs: opts.hostWaitMs ?? hostWaitMsOf({ ...process.env, ...spec.env }) }, relaunched);
  return agent.run();
}

class HostAgent {
  private readonly role: 'leader' | 'follower';
  private readonly record: RunRecordWriter;
  private readonly emit: ReturnType<typeof emitTo>;
  private readonly sink: RankSink;
  private readonly slots: number[];
  private readonly timeoutMs: number;
  private engine: EngineChoice | undefined;
  /** Per-rank GPU environment decided before launch (gpu-preflight.ts). */
  private rankEnv: Record<string, string>[] = [];
  /** A follower's pre-launch refusal, told to the leader as soon as it is connected (the run ends now, not at the leader's connect timeout). */
  private refusal: (RunStateError & { hint?: string }) | undefined;
  private group: RankGroup | undefined;
  private attempt = 0;
  private leasesHeld = false;
  /** This host's claim is under way (asked for in the claim order; queued while the slots are busy). */
  private claiming = false;
  private ended = false;
  private finish: (code: number) => void = () => {};
  private readonly finished: Promise<number>;
  // leader
  private server: Server | undefined;
  private readonly followers = new Map<string, { link: ControlLink; ranks: number; ready: boolean; exited: number; key: string; asked: boolean }>();
  private failures: Failure[] = [];
  private failing = false;
  private ownRanksOk = false;
  /** Lost follower hosts whose agent has not rejoined yet (the restart waits for them). */
  private readonly awaiting = new Set<string>();
  private waitTimer: NodeJS.Timeout | undefined;
  /** The pending restart's event was already told (host-lost: at detection, not at resume). */
  private restartTold = false;
  /** The failure a restart answers, until every rank of the failed attempt has exited. */
  private pendingRestart: ErrorEvent | undefined;
  /** The attempt in which rank 0 reported its `done` (-1: none yet). */
  private doneAttempt = -1;
  /** The `env` event (the switches each rank runs with) is told once, when the ranks first start. */
  private envTold = false;
  /** The restarts are spent and the scheduler was told not to requeue the job (said once). */
  private spentSaid = false;
  /** A lost node under a requeueing scheduler with restarts left: the error, while we wait for Slurm to end this run of the job. */
  private awaitingScheduler: RunStateError | undefined;
  /** A relaunched leader's restart: the loss of its predecessor (told once the followers rejoin). */
  private lostLeader: ErrorEvent | undefined;
  // follower
  private leader: ControlLink | undefined;
  /** The newest checkpoint rank 0 saved (the leader relays it): where the run resumes if the leader is lost. */
  private lastCheckpointStep = 0;
  /** Set while this follower waits for its lost leader's host to come back (its agent relaunched by a client). */
  private leaderWait: NodeJS.Timeout | undefined;
  private readonly slowRanks = new SlowRankWatch();

  constructor(
    private readonly spec: LaunchSpec,
    private readonly dir: string,
    private readonly opts: AgentRunOpts,
    /** The record of the leader agent this one replaces (run-rejoin after the leader host was lost). */
    private readonly relaunched?: RunStateRecord,
  ) {
    this.role = spec.role ?? 'leader';
    this.record = new RunRecordWriter(dir, { runId: spec.runId, host: spec.host, role: this.role, state: 'starting', agentPid: process.pid, ...(opts.agentNode ? { agentNode: opts.agentNode } : {}), ...(opts.scheduler ? { schedulerAttempt: opts.scheduler.attempt } : {}) }, relaunched);
    this.sink = {
      event: (e) => this.onEvent(e),
      line: (rank, _stream, text) => this.record.rankLine(rank, text),
    };
    this.emit = emitTo({ event: (e) => this.record.event(e) });
    this.slots = slotsOf(spec);
    this.timeoutMs = spec.heartbeatTimeoutMs > 0 ? spec.heartbeatTimeoutMs : 20_000;
    this.finished = new Promise((res) => (this.finish = res));
  }

  async run(): Promise<number> {
    const life = new DisposableStore();
    const beat = setInterval(() => this.record.touch(), 2000);
    life.addFn(() => clearInterval(beat));
    life.add(onProcessSignals(['SIGTERM', 'SIGINT', 'SIGHUP'], (sig) => this.cancel(`agent received ${sig}`)));
    const requeued = this.role === 'leader' ? this.opts.scheduler?.requeued : undefined;
    if (requeued) {
      this.record.update({ restarts: requeued.restarts - 1 });
      if (requeued.restarts > (this.spec.maxRestarts ?? 0)) {
        // Requeued past --max-restarts (Slurm would not take Requeue=0, or a preemption): end with the last reason, train nothing.
        this.fail({ host: requeued.host, rank: -1, message: `${requeued.reason}; no restarts left (--max-restarts ${this.spec.maxRestarts ?? 0})`, code: 'slurm-requeued' });
      }
    }
    if (this.relaunched) this.replaceLostLeader(this.relaunched);
    try {
      // The profile host's env (its python: COHORT_PYTHON) and the workdir's venvs count in the choice.
      this.engine = await chooseEngine(this.spec.config.engine, { enginesDir: this.opts.enginesDir, workdir: this.opts.workdir, env: { ...process.env, ...this.spec.env } });
    } catch (err) {
      this.fail({ host: this.spec.host, rank: -1, message: (err as Error).message, code: 'engine-unavailable' });
    }
    if (!this.ended) {
      this.log('info', `agent on ${this.spec.host} (${this.role}): ${this.spec.ranks.length} rank(s), engine ${this.engine!.name} (${this.engine!.reason})`);
      const pre = gpuPreflight({ host: this.spec.host, engine: this.engine!, config: this.spec.config, ranks: this.spec.ranks, smi: await readGpuRows(), inherited: { ...process.env, ...this.spec.env } });
      if (pre.ok) {
        this.rankEnv = pre.env;
        for (const n of pre.notes) this.log('info', `agent on ${this.spec.host}: ${n}`);
      } else {
        const refusal = { host: this.spec.host, rank: -1, message: pre.message, code: pre.code, hint: pre.hint };
        if (this.role === 'follower' && this.spec.control) this.refusal = refusal;
        else this.fail(refusal);
      }
    }
    if (!this.ended) {
      if (this.role === 'follower') this.connectToLeader();
      else this.listen();
      if (!this.refusal && this.role === 'leader') this.claimInOrder(); // a follower claims when the leader asks
    }
    const code = await this.finished;
    // Also when this agent never got to claim: run-start may have claimed for it (only files naming this run and pid go).
    releaseSlots(this.opts.workdir, this.spec.runId, this.slots);
    this.server?.close();
    this.record.close();
    life.dispose(); // the beat and the signal handlers, once the record is closed
    return code;
  }

  // ---- record ----------------------------------------------------------------------------

  private log(level: 'info' | 'warn', message: string): void {
    this.emit({ type: 'log', level, host: this.spec.host, message });
  }

  private onEvent(e: CohortEvent): void {
    if (e.type === 'step') {
      this.record.event(e);
      // Rank 0's step carries every rank's compute time: a persistently slow one is named once.
      for (const r of this.slowRanks.observe(e)) this.emit(slowRankEvent(r));
      return;
    }
    if (e.type === 'done') this.doneAttempt = this.attempt;
    if (e.type === 'checkpoint' && e.action === 'saved' && this.role === 'leader') for (const f of this.followers.values()) f.link.send({ t: 'checkpoint', step: e.step });
    if (e.type !== 'error') return this.record.event(e);
    // Ranks stopped because the leader was lost: their errors are consequences of that loss, told in the restart event.
    if (this.role === 'follower' && this.leaderWait) return this.log('warn', `after the leader was lost: ${e.message}`);
    // A rank's error: the leader decides the root cause before writing (failure()); a follower relays it.
    if (this.role === 'follower') {
      this.record.event(e);
      this.leader?.send({ t: 'error', event: e });
    } else this.failure(e);
  }

  private setState(state: HostRunState, patch: { error?: RunStateError; queuedBehind?: string } = {}): void {
    const terminal = state === 'ok' || state === 'failed' || state === 'cancelled';
    this.record.update({ state, ...patch, ...(terminal ? { endedAt: Date.now() } : {}) });
  }

  private end(state: 'ok' | 'failed' | 'cancelled', error?: RunStateError): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.waitTimer);
    clearTimeout(this.leaderWait);
    const done = () => {
      this.setState(state, error ? { error } : {});
      this.finish(state === 'ok' ? AGENT_RUN_EXIT.ok : state === 'failed' ? AGENT_RUN_EXIT.failed : AGENT_RUN_EXIT.cancelled);
    };
    for (const f of this.followers.values()) f.link.send({ t: 'end', state, reason: error?.message ?? state });
    this.group?.kill();
    const links = [...(this.leader ? [this.leader] : []), ...[...this.followers.values()].map((f) => f.link)];
    void (this.group?.done ?? Promise.resolve()).then(() => Promise.all(links.map((l) => l.flushed()))).then(() => {
      // the last messages (the leader's `end`, a follower's error) have left the socket before the process exits
      for (const f of this.followers.values()) f.link.close('run ended');
      this.leader?.close('run ended');
      done();
    });
  }

  private fail(error: RunStateError & { logTail?: string[]; hint?: string }): void {
    this.record.event({ v: 1, time: Date.now(), type: 'error', rank: error.rank, host: error.host, message: error.message, logTail: error.logTail ?? [], ...(error.code ? { code: error.code } : {}), ...(error.hint ? { hint: error.hint } : {}) });
    const { logTail: _t, hint: _h, ...e } = error;
    if (this.role === 'follower') this.leader?.send({ t: 'error', event: { v: 1, time: Date.now(), type: 'error', rank: e.rank, host: e.host, message: e.message, logTail: [], ...(e.code ? { code: e.code } : {}) } });
    this.end('failed', e);
  }

  cancel(why: string): void {
    if (this.ended) return;
    // Waiting for the scheduler over a lost node: its SIGTERM ends this run of the job (requeued or not), the lost node is the story.
    if (this.awaitingScheduler) return this.end('failed', this.awaitingScheduler);
    this.log('info', `agent on ${this.spec.host}: stopping the run (${why})`);
    this.end('cancelled', { host: this.spec.host, rank: -1, message: why, code: 'cancelled' });
  }

  // ---- slots -----------------------------------------------------------------------------

  private async claim(): Promise<void> {
    if (this.leasesHeld) return this.leader?.send({ t: 'ready' }); // asked again (by a relaunched leader): still held
    if (this.claiming) return;
    this.claiming = true;
    let said = '';
    for (;;) {
      if (this.ended) return;
      const r = claimSlots(this.opts.workdir, this.spec.runId, this.slots);
      for (const w of r.warnings) this.log('warn', `${this.spec.host}: ${w}`);
      if (r.ok) break;
      if (this.spec.queue === false) {
        return this.fail({ host: this.spec.host, rank: -1, message: `slot ${r.slot} on ${this.spec.host} is busy with run ${r.busyBy} (queue off)`, code: 'slots-busy' });
      }
      if (said !== r.busyBy) {
        said = r.busyBy;
        this.setState('queued', { queuedBehind: r.busyBy });
        this.log('info', `queued behind ${r.busyBy}: slot ${r.slot} on ${this.spec.host} is busy`);
        if (this.role === 'leader') this.emit({ type: 'queued', host: this.spec.host, behind: r.busyBy });
        this.leader?.send({ t: 'queued', behind: r.busyBy });
      }
      await new Promise((res) => setTimeout(res, QUEUE_POLL_MS));
    }
    this.leasesHeld = true;
    this.claiming = false;
    if (said) this.record.update({ state: 'starting', queuedBehind: undefined });
    if (this.role === 'follower') this.leader?.send({ t: 'ready' });
    else {
      this.claimInOrder();
      this.maybeGo();
    }
  }

  /** Leader: once every follower has said hello, ask the next host in the global claim order to claim (claim-order.ts). */
  private claimInOrder(): void {
    if (this.ended) return;
    const fs = [...this.followers.entries()];
    if (fs.reduce((n, [, f]) => n + f.ranks, 0) < this.expectedFollowerRanks) return;
    const self = { host: this.spec.host, key: claimKey(this.opts.workdir), held: this.leasesHeld, asked: this.claiming };
    const next = nextToClaim([self, ...fs.map(([host, f]) => ({ host, key: f.key, held: f.ready, asked: f.asked }))]);
    if (next === self) return void this.claim();
    const f = next && this.followers.get(next.host);
    if (!f) return;
    f.asked = true;
    f.link.send({ t: 'claim' });
  }

  // ---- ranks -----------------------------------------------------------------------------

  private startRanks(attempt: number, resume: boolean): void {
    this.attempt = attempt;
    const config = { ...this.spec.config, ...(resume ? { resume: true } : {}), ...this.checkpointing() };
    const group = new RankGroup({ ...this.spec, config }, this.engine!, this.opts.trainerEntry, this.dir, this.sink, (x) => this.onRankExit(group, x), this.rankEnv);
    this.group = group;
    if (!this.envTold) {
      this.envTold = true;
      this.emit({ type: 'env', host: this.spec.host, ranks: group.procs.map((p) => ({ rank: p.spec.rank, switches: runSwitches(p.env) })) });
    }
    this.setState('running');
    void group.done.then(() => this.onRanksDone(group, attempt));
  }

  /** With restarts on and no interval asked for, checkpoint every ~10% of the run (said once). */
  private checkpointing(): { checkpointEvery?: number } {
    if ((this.spec.maxRestarts ?? 0) === 0 || this.spec.config.checkpointEvery > 0) return {};
    const every = Math.max(1, Math.round((this.spec.config.steps > 0 ? this.spec.config.steps : 1000) / 10));
    if (this.attempt <= 1 && this.role === 'leader') this.log('info', `restarts are on and no --checkpoint-every was given: checkpointing every ${every} steps`);
    return { checkpointEvery: every };
  }

  private onRankExit(group: RankGroup, { proc: p, code, signal }: RankExit): void {
    if (code === 0 || group !== this.group || this.ended) return;
    // A rank killed by the signal this agent sent it (another rank failed, or a halt) is a consequence:
    // the failure that made us stop it is the story. A SIGKILL we did not send is a failure.
    if (signal && p.sent.has(signal) && !p.reportedError) return;
    if (!p.reportedError || this.role === 'leader') {
      // The rank's own exit is the truth about it (issue 14 item 6): its code or signal and its log tail.
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const error: ErrorEvent = {
        v: 1,
        time: Date.now(),
        type: 'error',
        rank: p.spec.rank,
        host: this.spec.host,
        message: `rank ${p.spec.rank} on ${this.spec.host} ${how}`,
        logTail: p.tail.get(),
        code: p.reportedError && p.errorCode ? p.errorCode : 'rank-exited',
      };
      if (!p.reportedError) this.onEvent(error);
      else if (this.role === 'leader') this.failure(error, true);
    }
    group.kill(); // one failing rank stops this host's others (peers elsewhere see their sockets close)
  }

  private onRanksDone(group: RankGroup, attempt: number): void {
    if (group !== this.group || this.ended) return;
    const ok = group.procs.every((p) => p.child.exitCode === 0);
    const rank0 = group.procs.find((p) => p.spec.rank === 0);
    if (ok && rank0 && this.doneAttempt !== attempt && !this.failing) {
      // Exit 0 is not success by itself: rank 0 ends every run with a `done` event (both engines).
      // Without it the engine stopped early (a wrong interpreter, a script that returned): say so.
      this.failure({ v: 1, time: Date.now(), type: 'error', rank: 0, host: this.spec.host, message: `rank 0 on ${this.spec.host} exited with code 0 without reporting the end of training (no done event)`, logTail: rank0.tail.get(), code: 'no-done', hint: `check rank 0's log on ${this.spec.host}` }, true);
      return; // failure() decides after its grace (restart or fail), as for any rank failure
    }
    if (this.role === 'follower') {
      this.leader?.send({ t: 'exited', attempt, ok });
      if (!ok && !this.leader && !this.leaderWait) this.end('failed', { host: this.spec.host, rank: -1, message: 'ranks failed', code: 'rank-exited' });
      return;
    }
    if (ok && !this.failing) {
      this.ownRanksOk = true;
      this.maybeOk();
    } else this.maybeRestart();
  }

  // ---- leader ----------------------------------------------------------------------------

  private get expectedFollowerRanks(): number {
    return this.spec.worldSize - this.spec.ranks.length;
  }

  private listen(): void {
    if (this.expectedFollowerRanks === 0) return;
    const c = this.spec.control;
    if (!c) return this.fail({ host: this.spec.host, rank: -1, message: `the spec has ${this.expectedFollowerRanks} rank(s) on other hosts but no control endpoint`, code: 'bad-spec' });
    this.server = createServer((sock) => this.onFollower(sock));
    this.server.on('error', (err) => this.fail({ host: this.spec.host, rank: -1, message: `control channel on ${c.addr}:${c.port}: ${err.message}`, code: 'control-listen' }));
    this.server.listen(c.port, c.addr);
    const deadline = setTimeout(() => {
      const have = [...this.followers.values()].reduce((n, f) => n + f.ranks, 0);
      if (have < this.expectedFollowerRanks && !this.ended) {
        this.fail({ host: this.spec.host, rank: -1, message: `only ${have} of ${this.expectedFollowerRanks} rank(s) on other hosts connected within ${CONNECT_TIMEOUT_MS / 1000} s`, code: 'followers-missing' });
      }
    }, CONNECT_TIMEOUT_MS * 2);
    deadline.unref();
  }

  private onFollower(sock: Socket): void {
    const link = new ControlLink(sock, this.timeoutMs);
    let host = '';
    link.on(
      (m) => {
        if (!host) {
          if (m.t !== 'hello') return link.close('refused');
          const prior = this.followers.get(m.host);
          // A host already joined is refused, unless it is a lost one coming back (its old link is closed).
          const rejoin = prior !== undefined && this.awaiting.has(m.host) && prior.link.isClosed;
          if (!tokenMatches(m.token, this.spec.control!.token) || !m.host || (prior && !rejoin)) return link.close('refused');
          host = m.host;
          // A rejoined agent runs no ranks of the stopped attempt: it counts as exited from it.
          this.followers.set(host, { link, ranks: m.ranks, ready: false, exited: rejoin ? this.attempt : -1, key: m.key ?? host, asked: false });
          if (rejoin) this.log('info', `${host}'s agent rejoined run ${this.spec.runId}`);
          return this.claimInOrder();
        }
        this.onFollowerMsg(host, m);
      },
      (why) => {
        const f = this.followers.get(host);
        if (!host || !f || f.link !== link || this.ended) return;
        // A follower whose ranks all finished ok and said so may hang up; anything else is a lost host.
        if (f.exited === this.attempt && this.ownRanksOk) return;
        const message = why === 'connection closed' ? `connection to ${host}'s agent closed` : `${host}: ${why}`;
        this.failure({ v: 1, time: Date.now(), type: 'error', rank: -1, host, message, logTail: [], code: 'host-lost' }, false, true);
      },
    );
  }

  private onFollowerMsg(host: string, m: ControlMsg): void {
    const f = this.followers.get(host)!;
    switch (m.t) {
      case 'queued':
        if (this.record.current.state !== 'queued') this.setState('queued', { queuedBehind: m.behind });
        this.log('info', `queued behind ${m.behind} on ${host}`);
        this.emit({ type: 'queued', host, behind: m.behind });
        return;
      case 'ready':
        f.ready = true;
        this.claimInOrder();
        if (this.awaiting.delete(host)) {
          // a lost host is back and holds its slots again: restart once every lost host is
          if (this.awaiting.size === 0) clearTimeout(this.waitTimer);
          return this.maybeRestart();
        }
        return this.maybeGo();
      case 'error':
        return this.failure(m.event);
      case 'exited':
        f.exited = m.attempt;
        if (m.attempt === this.attempt) {
          if (m.ok) this.maybeOk();
          else this.maybeRestart();
        }
        return;
      default:
        return;
    }
  }

  private maybeGo(): void {
    if (this.ended || !this.leasesHeld || this.attempt > 0) return;
    const fs = [...this.followers.values()];
    if (fs.reduce((n, f) => n + f.ranks, 0) < this.expectedFollowerRanks || !fs.every((f) => f.ready)) return;
    if (this.record.current.queuedBehind) this.record.update({ queuedBehind: undefined });
    const requeued = this.opts.scheduler?.requeued;
    if (requeued) {
      // The scheduler ran the job again: every rank resumes from the newest checkpoint (node 0's record, on the shared workdir).
      return this.restartOver({ v: 1, time: Date.now(), type: 'error', rank: -1, host: requeued.host, message: requeued.reason, logTail: [], code: 'slurm-requeued' }, requeued.restarts);
    }
    if (this.lostLeader) {
      // This agent replaces a leader lost with its host: every follower rejoined, so every rank resumes
      // from the newest checkpoint, counted as a restart (the attempt that was running is over).
      const cause = this.lostLeader;
      this.lostLeader = undefined;
      return this.restartOver(cause, this.record.current.restarts + 1);
    }
    for (const f of fs) f.link.send({ t: 'go', attempt: 1, resume: false });
    this.startRanks(1, false);
    this.maybeSpent();
  }

  /** An attempt no rank of which runs here any more (a requeued job, a replaced leader): restart every rank from the checkpoint. */
  private restartOver(cause: ErrorEvent, attempt: number): void {
    this.pendingRestart = cause;
    this.attempt = attempt;
    for (const f of this.followers.values()) f.exited = attempt;
    this.ownRanksOk = false;
    this.maybeRestart();
  }

  /**
   * Relaunched over the record of a leader agent that died with its host: with restarts left, wait
   * for the followers (each waits for this host to come back and connects again), then restart every
   * rank from the last checkpoint. With none left, the run ends `host-lost`, its last error.
   */
  private replaceLostLeader(prior: RunStateRecord): void {
    const message = `host ${this.spec.host} lost with the run's leader agent (state ${prior.state}, last step ${prior.lastStep ?? 0})`;
    if (this.record.current.restarts >= (this.spec.maxRestarts ?? 0)) {
      return this.fail({ host: this.spec.host, rank: -1, code: 'host-lost', message: `${message}; no restarts left (--max-restarts ${this.spec.maxRestarts ?? 0})` });
    }
    this.lostLeader = { v: 1, time: Date.now(), type: 'error', rank: -1, host: this.spec.host, message, logTail: [], code: 'host-lost' };
    this.setState('restarting', { error: { host: this.spec.host, rank: -1, message, code: 'host-lost' } });
    this.log('info', `agent on ${this.spec.host} (leader): relaunched after the host was lost; every rank restarts from the last checkpoint once ${this.expectedFollowerRanks} rank(s) on other hosts are back`);
  }

  /** Restarts spent under a requeueing scheduler: tell it not to run the job again (said once). */
  private maybeSpent(): void {
    const s = this.opts.scheduler;
    if (!s?.requeueable || this.spentSaid || this.role !== 'leader' || this.record.current.restarts < (this.spec.maxRestarts ?? 0)) return;
    this.spentSaid = true;
    void s.noMoreRequeues().then((refused) => {
      if (refused) this.log('warn', `restarts spent, but Slurm would not make the job non-requeueable (${refused}); a requeue will end the run without training`);
      else this.log('info', `restarts spent (${this.record.current.restarts} of ${this.spec.maxRestarts ?? 0}): Slurm will not requeue the job again`);
    });
  }

  private maybeOk(): void {
    if (!this.ownRanksOk || this.failing) return;
    if ([...this.followers.values()].every((f) => f.exited === this.attempt)) this.end('ok');
  }

  /** A rank or host failed: collect it, and after the blame grace decide (restart or fail). */
  private failure(e: ErrorEvent, fromExit = false, hostLost = false): void {
    if (this.ended) return;
    const consequence = CONSEQUENCE.has(e.code ?? '');
    if (!fromExit || !this.failures.some((f) => f.error.host === e.host && f.error.rank === e.rank)) {
      // a rank that reported its own error and then exited: keep the report, not a second line
      this.failures.push({ error: e, consequence });
    }
    if (this.failing) return;
    this.failing = true;
    this.group?.kill();
    for (const f of this.followers.values()) if (!hostLost || f !== this.followers.get(e.host)) f.link.send({ t: 'halt', attempt: this.attempt });
    setTimeout(() => this.decide(), consequence ? BLAME_GRACE_MS : 200);
  }

  private decide(): void {
    if (this.ended) return;
    const root = this.failures.find((f) => !f.consequence) ?? this.silentFollower() ?? this.failures[0]!;
    // The record gets the root cause first, then what followed from it.
    for (const f of [root, ...this.failures.filter((x) => x !== root)]) this.record.event(f.error);
    const error: RunStateError = { host: root.error.host, rank: root.error.rank, message: root.error.message, ...(root.error.code ? { code: root.error.code } : {}) };
    const lost = this.lostFollowers(root.error);
    if (this.record.current.restarts >= (this.spec.maxRestarts ?? 0)) return this.end('failed', error);
    if (lost.length > 0 && this.opts.scheduler) {
      if (!this.opts.scheduler.requeueable) return this.end('failed', error);
      // A lost node is Slurm's to see (SlurmdTimeout): it kills this run of the job and requeues it,
      // and the next run resumes from the checkpoint. Until then the ranks here are stopped. (No
      // client relaunch as for SSH hosts: a node outside the job's allocation is not ours to use.)
      this.setState('restarting', { error });
      this.awaitingScheduler = error;
      this.log('warn', `${root.error.message}: waiting for Slurm to requeue job (restart ${this.record.current.restarts + 1} of ${this.spec.maxRestarts ?? 0})`);
      return;
    }
    this.setState('restarting', { error });
    this.pendingRestart = root.error;
    if (lost.length > 0) this.awaitHosts(lost, root.error);
    this.maybeRestart();
  }

  /** Followers whose host is gone: named by a host-lost cause, or their control link closed or silent. */
  private lostFollowers(cause: ErrorEvent): string[] {
    return [...this.followers.entries()].filter(([host, f]) => (cause.code === 'host-lost' && cause.host === host) || f.link.isClosed || f.link.silentForMs > SILENT_FOLLOWER_MS).map(([host]) => host);
  }

  /**
   * A lost host's agent died with it, and no agent can start another on a host (no daemon, no keys
   * on the hosts). The ranks are stopped and the slots kept; the restart event says which hosts the
   * run waits for, so a client following the run relaunches their agents (`run-rejoin`). A host not
   * back within hostWaitMs fails the run with `host-lost`, the last error.
   */
  private awaitHosts(hosts: string[], root: ErrorEvent): void {
    // the story is the lost host, also when a peer's error came first and the host's silence decided it
    const cause: ErrorEvent = root.code === 'host-lost' ? root : { ...root, host: hosts[0]!, rank: -1, code: 'host-lost', message: `host ${hosts[0]} lost: its agent's control connection closed (${root.message})` };
    for (const h of hosts) {
      const f = this.followers.get(h)!;
      this.awaiting.add(h);
      f.exited = this.attempt; // its ranks died with the host
      f.ready = false;
      f.link.close('host lost'); // a late beat from a half-dead host must not count as back
    }
    const waitMs = this.opts.hostWaitMs ?? HOST_WAIT_MS;
    const names = hosts.join(', ');
    this.tellRestart(cause, { code: 'host-lost', waitingFor: hosts, waitMs });
    this.log('warn', `waiting up to ${Math.round(waitMs / 1000)} s for ${names} to come back: a client attached to this run (cohort attach ${this.spec.runId}) relaunches its agent`);
    clearTimeout(this.waitTimer);
    this.waitTimer = setTimeout(() => {
      if (this.ended || this.awaiting.size === 0) return;
      const missing = [...this.awaiting];
      this.fail({
        host: missing[0]!,
        rank: -1,
        code: 'host-lost',
        message: `host ${missing.join(', ')} lost and not back within ${Math.round(waitMs / 1000)} s (${cause.message})`,
        hint: this.bringBackHint(missing.join(', ')),
      });
    }, waitMs);
  }

  /** What to do about lost hosts the run waited for in vain (a follower's wait for its leader, the leader's for followers). */
  private bringBackHint(hosts: string): string {
    return `bring ${hosts} back (sshd reachable, workdir kept) and keep a client attached while the run waits (cohort attach ${this.spec.runId}); the host env COHORT_HOST_WAIT_MS sets the wait`;
  }

  /** The `restart` event (the restart is counted when it is told). */
  private tellRestart(cause: ErrorEvent, extra: { code?: string; waitingFor?: string[]; waitMs?: number } = {}): void {
    const restarts = this.record.current.restarts + 1;
    const ckptDir = this.spec.config.checkpointDir || join(this.dir, 'checkpoints');
    const resumeStep = newestCheckpointStep(ckptDir); // either engine's files
    this.record.update({ restarts });
    const code = extra.code ?? cause.code;
    this.emit({ type: 'restart', attempt: restarts, host: cause.host, rank: cause.rank, reason: cause.message, resumeStep, ...(code ? { code } : {}), ...(extra.waitingFor ? { waitingFor: extra.waitingFor } : {}), ...(extra.waitMs !== undefined ? { waitMs: extra.waitMs } : {}) });
    this.restartTold = true;
  }

  /**
   * Only consequences (a rank saw a peer vanish) and no root cause: a follower whose agent has gone
   * silent is it. A dead host (power, kernel, cable) sends nothing, not even the FIN that makes its
   * control link close, and its ring sockets time out before the control link's own timeout does.
   */
  private silentFollower(): Failure | undefined {
    const silent = [...this.followers.entries()].find(([, f]) => f.link.isClosed || f.link.silentForMs > SILENT_FOLLOWER_MS);
    if (!silent) return undefined;
    const [host, f] = silent;
    const why = f.link.isClosed ? 'its control connection closed' : `its agent has sent nothing for ${Math.round(f.link.silentForMs / 1000)} s`;
    const root: Failure = { error: { v: 1, time: Date.now(), type: 'error', rank: -1, host, message: `host ${host} lost: ${why} (host down or unreachable); its ranks' peers lost them`, logTail: [], code: 'host-lost' }, consequence: false };
    this.failures.unshift(root);
    return root;
  }

  /** Restart once this host's ranks and every follower's have exited. */
  private maybeRestart(): void {
    const cause = this.pendingRestart;
    if (!cause || this.ended || this.group?.running || this.awaiting.size > 0) return;
    if (![...this.followers.values()].every((f) => f.exited === this.attempt)) return;
    this.pendingRestart = undefined;
    if (!this.restartTold) this.tellRestart(cause);
    this.restartTold = false;
    this.failures = [];
    this.failing = false;
    this.ownRanksOk = false;
    const attempt = this.attempt + 1;
    for (const f of this.followers.values()) f.link.send({ t: 'go', attempt, resume: true });
    this.startRanks(attempt, true);
    this.maybeSpent();
  }

  // ---- follower --------------------------------------------------------------------------

  /** `withinMs`: how long to keep trying (a lost leader's host is waited for longer than a first connect). */
  private connectToLeader(withinMs = CONNECT_TIMEOUT_MS): void {
    const c = this.spec.control;
    if (!c) return this.fail({ host: this.spec.host, rank: -1, message: 'a follower needs the leader\'s control endpoint (spec.control)', code: 'bad-spec' });
    const started = Date.now();
    const attempt = () => {
      if (this.ended) return;
      const sock = createConnection({ host: c.addr, port: c.port });
      sock.setTimeout(CONNECT_TRY_MS, () => sock.destroy(new Error(`no answer within ${CONNECT_TRY_MS / 1000} s`)));
      sock.once('error', (err) => {
        if (this.leader) return;
        if (Date.now() - started > withinMs) {
          return this.fail(this.refusal ?? { host: this.spec.host, rank: -1, message: `could not reach the leader's agent at ${c.addr}:${c.port}: ${err.message}`, code: 'leader-unreachable' });
        }
        setTimeout(attempt, 250);
      });
      sock.once('connect', () => {
        sock.setTimeout(0); // from here the control link's own beat judges the leader
        const link = new ControlLink(sock, this.timeoutMs);
        this.leader = link;
        if (this.leaderWait) {
          clearTimeout(this.leaderWait);
          this.leaderWait = undefined;
          this.log('info', `${this.spec.host}: reached the leader's relaunched agent on ${this.spec.leader ?? c.addr}; the run restarts from its last checkpoint`);
        }
        link.on(
          (m) => this.onLeaderMsg(m),
          (why) => {
            if (this.ended || this.leader !== link) return;
            if (this.canAwaitLeader()) return this.awaitLeader(why);
            this.fail({ host: this.spec.host, rank: -1, message: `lost the leader's agent (${why}); stopping this host's ranks`, code: 'leader-lost' });
          },
        );
        link.send({ t: 'hello', token: c.token, host: this.spec.host, ranks: this.spec.ranks.length, key: claimKey(this.opts.workdir) });
        if (this.refusal) return this.fail(this.refusal);
        if (this.leasesHeld) link.send({ t: 'ready' });
        else if (this.record.current.queuedBehind) link.send({ t: 'queued', behind: this.record.current.queuedBehind });
      });
    };
    attempt();
  }

  /** A lost leader is waited for only in a started run with restarts left, on SSH hosts (Slurm requeues a lost node's job itself). */
  private canAwaitLeader(): boolean {
    return !this.opts.scheduler && this.spec.leader !== undefined && this.attempt > 0 && this.record.current.restarts < (this.spec.maxRestarts ?? 0);
  }

  /**
   * The leader's agent is gone (its host lost) and restarts are left: stop this host's ranks, keep the
   * slots, and say so in a `restart` event naming the leader in waitingFor, so that a client following
   * the run relaunches the leader's agent (`run-rejoin`; the hosts cannot, there is no daemon). Meanwhile
   * keep trying the leader's control port; the relaunched leader restarts every rank from the last
   * checkpoint once its followers are back. Not back within the wait: the run fails `host-lost`.
   */
  private awaitLeader(why: string): void {
    const leader = this.spec.leader!;
    const waitMs = this.opts.hostWaitMs ?? HOST_WAIT_MS;
    this.leader = undefined;
    const message = `host ${leader} lost: the leader's agent is gone (${why})`;
    this.leaderWait = setTimeout(() => {
      if (this.ended || this.leader) return;
      this.fail({ host: leader, rank: -1, code: 'host-lost', message: `host ${leader} (the run's leader) lost and not back within ${Math.round(waitMs / 1000)} s (${why})`, hint: this.bringBackHint(leader) });
    }, waitMs);
    if (this.group?.running) this.group.kill();
    this.setState('restarting', { error: { host: leader, rank: -1, message, code: 'host-lost' } });
    this.emit({ type: 'restart', attempt: this.record.current.restarts + 1, host: leader, rank: -1, reason: message, resumeStep: this.lastCheckpointStep, code: 'host-lost', waitingFor: [leader], waitMs });
    this.log('warn', `${this.spec.host}: waiting up to ${Math.round(waitMs / 1000)} s for ${leader} (the leader) to come back: a client attached to this run (cohort attach ${this.spec.runId}) relaunches its agent; this host's ranks are stopped, its slots kept`);
    this.connectToLeader(waitMs + 5000);
  }

  private onLeaderMsg(m: ControlMsg): void {
    switch (m.t) {
      case 'checkpoint':
        this.lastCheckpointStep = Math.max(this.lastCheckpointStep, m.step);
        return;
      case 'claim':
        return void this.claim();
      case 'go':
        if (m.attempt > 1) this.record.update({ restarts: m.attempt - 1 });
        return this.startRanks(m.attempt, m.resume);
      case 'halt':
        if (m.attempt !== this.attempt) return;
        this.setState('restarting');
        if (this.group?.running) this.group.kill();
        else this.leader?.send({ t: 'exited', attempt: this.attempt, ok: false });
        return;
      case 'end':
        if (m.state === 'ok') return this.end('ok');
        return this.end(m.state, { host: this.spec.host, rank: -1, message: `the leader ended the run: ${m.reason}`, code: m.state });
      default:
        return;
    }
  }
}
