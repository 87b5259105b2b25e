// The detached agent of a durable run (`agent-run --run ID`, started by run-start): one per host per
// run, alive exactly as long as the run on this host. A thin shell: every decision (rendezvous, go,
// blame, restart, waits for lost hosts, the end) is agent-lifecycle.ts's pure transition; this file
// turns rank exits, control messages, timers, signals, claim results and I/O errors into its inputs
// and runs the effects it returns (spawn, kill, write the record, send, listen, connect, exit).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_TIMINGS, DisposableStore, SLOW_RANK, SlowRankWatch, readTimings, decodeLaunchSpec, slowRankEvent, type CohortEvent, type LaunchSpec, type RunStateRecord } from '../protocol';
import { newestCheckpointStep } from '../train/checkpoint';
import { onProcessSignals } from '../util/node-lifecycle';
import { CONNECT_TIMEOUT_MS, followersTold, initialState, transition, type AgentConfig, type AgentInput, type AgentState, type Effect, type TimerName } from './agent-lifecycle';
import { FollowerLinks, connectLoop, listenForFollowers } from './agent-links';
import { cleanStaleTemps } from './stale-temps';
import type { ControlLink } from './control';
import type { EngineChoice } from './engine-choice';
import { prepareHost } from './agent-prepare';
import { claimLoop } from './agent-claim';
import { releaseSlots, slotsOf } from './leases';
import { RankGroup, emitTo, type RankExit } from './ranks';
import { AGENT_RUN_EXIT, agentConfigOf, askRequeueExcluding, beginInput, noMoreRequeues, relaunchedOver, type AgentRunOpts } from './agent-opts';
import { checkpointingOf, envPayload, noDoneError, rankExitError } from './rank-outcome';
import { RunRecordWriter, readState, recordPaths, runDirOf, stopMarkerPath } from './run-record';
import { SystemWindows, systemMetricsOn } from './system-windows';

export async function runDetachedAgent(opts: AgentRunOpts): Promise<number> {
  const dir = runDirOf(opts.workdir, opts.runId);
  const spec = decodeLaunchSpec(JSON.parse(readFileSync(recordPaths(dir).spec, 'utf8')));
  const relaunched = relaunchedOver(spec, opts, () => readState(dir));
  // The waits (trainer/protocol/timings.ts) from the host's env, the profile's host env winning.
  const { timings } = readTimings({ ...process.env, ...spec.env });
  return new HostAgent(spec, dir, { ...opts, hostWaitMs: opts.hostWaitMs ?? timings.hostWaitMs, timings }, relaunched).run();
}

class HostAgent {
  private readonly cfg: AgentConfig;
  private state: AgentState = initialState();
  private readonly record: RunRecordWriter;
  private readonly emit: ReturnType<typeof emitTo>;
  private readonly timers = new Map<TimerName, NodeJS.Timeout>();
  private readonly slowRanks: SlowRankWatch;
  private engine: EngineChoice | undefined;
  private rankEnv: Record<string, string>[] = [];
  private group: RankGroup | undefined;
  private links: FollowerLinks | undefined;
  private leaderLink: ControlLink | undefined;
  private envTold = false;
  /** The system metrics on rank 0's steps (system-windows.ts); undefined when switched off. */
  private readonly sys: SystemWindows | undefined;
  private readonly timeoutMs: number;
  private readonly checkpointDir: string;
  private finish: (code: number) => void = () => {};
  /** A scheduler request under way (requeue-excluding): the agent exits only once it is done. */
  private schedulerOp: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly spec: LaunchSpec,
    private readonly dir: string,
    private readonly opts: AgentRunOpts,
    private readonly relaunched?: RunStateRecord,
  ) {
    const role = spec.role ?? 'leader';
    this.cfg = agentConfigOf(spec, opts);
    this.record = new RunRecordWriter(dir, { runId: spec.runId, host: spec.host, role, state: 'starting', agentPid: process.pid, ...(opts.agentNode ? { agentNode: opts.agentNode } : {}), ...(opts.scheduler ? { schedulerAttempt: opts.scheduler.attempt } : {}) }, relaunched);
    this.state.restarts = this.record.current.restarts;
    this.slowRanks = new SlowRankWatch({ ...SLOW_RANK, windows: (opts.timings ?? DEFAULT_TIMINGS).slowRankWindows });
    this.timeoutMs = spec.heartbeatTimeoutMs > 0 ? spec.heartbeatTimeoutMs : (opts.timings ?? DEFAULT_TIMINGS).heartbeatTimeoutMs;
    this.checkpointDir = spec.config.checkpointDir || join(dir, 'checkpoints');
    this.emit = emitTo({ event: (e) => this.record.event(e) });
    const rankPids = () => (this.group?.procs ?? []).flatMap((p) => (p.child.pid === undefined || p.exited ? [] : [p.child.pid]));
    this.sys = systemMetricsOn({ ...process.env, ...spec.env }) ? new SystemWindows(spec.host, rankPids) : undefined;
  }

  async run(): Promise<number> {
    const finished = new Promise<number>((res) => (this.finish = res));
    const life = new DisposableStore();
    // The 2-s liveness beat: a full disk must not kill the agent from a timer (issue 24 defect 3).
    const beat = setInterval(() => this.guard('state.json', () => this.record.touch()), 2000);
    life.addFn(() => clearInterval(beat));
    process.stderr.on('error', () => {}); // agent.log on a full disk: lose the line, not the run
    life.add(onProcessSignals(['SIGTERM', 'SIGINT', 'SIGHUP'], (sig) => this.input({ t: 'signal', why: `agent received ${sig}` })));
    this.input(beginInput(this.cfg, this.opts, this.relaunched, existsSync(stopMarkerPath(this.dir))));
    if (this.state.phase.k === 'starting') await this.prepare();
    const code = await finished;
    // Also when this agent never got to claim: run-start may have claimed for it (only files naming this run and pid go).
    releaseSlots(this.opts.workdir, this.spec.runId, slotsOf(this.spec));
    this.links?.close();
    this.record.close();
    life.dispose();
    return code;
  }

  /** Engine choice and GPU preflight (agent-prepare.ts), then `prepared` or `refused`. */
  private async prepare(): Promise<void> {
    const r = await prepareHost(this.spec, this.cfg.role, this.opts);
    for (const n of r.notes) this.log('info', n);
    if (!r.ok) return this.input({ t: 'refused', error: r.error });
    this.engine = r.engine;
    this.rankEnv = r.rankEnv;
    this.input({ t: 'prepared' });
  }

  private log(level: 'info' | 'warn', message: string): void {
    this.emit({ type: 'log', level, host: this.spec.host, message });
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.input({ t: 'io-error', what, message: (err as Error).message });
    }
  }

  /** One input through the transition, then its effects in order. */
  private input(i: AgentInput): void {
    const { state, effects } = transition(this.cfg, this.state, i);
    this.state = state;
    for (const fx of effects) this.run1(fx);
  }

  private run1(fx: Effect): void {
    const c = this.spec.control;
    switch (fx.do) {
      case 'record': {
        const { ended, ...patch } = fx.patch;
        return this.guard('state.json', () => this.record.update({ ...patch, ...(ended ? { endedAt: Date.now() } : {}) }));
      }
      case 'event':
        return this.record.event({ ...fx.event, time: fx.event.time || Date.now() });
      case 'record-done':
        return this.record.event(fx.event);
      case 'rank-line':
        return this.record.rankLine(fx.rank, fx.text);
      case 'log':
        return this.log(fx.level, fx.message);
      case 'stderr':
        return void process.stderr.write(`${fx.message}\n`);
      case 'emit-queued':
        return this.emit({ type: 'queued', host: fx.host, behind: fx.behind });
      case 'emit-restart': {
        const { do: _d, ...e } = fx;
        return this.emit({ type: 'restart', ...e, resumeStep: e.resumeStep ?? newestCheckpointStep(this.checkpointDir) });
      }
      case 'listen': // (the transition asks only with followers and a control endpoint: cfg.controlled)
        return void (this.links = listenForFollowers(c!.token, this.timeoutMs, c!.addr, c!.port, this.spec.host, (i) => this.input(i)));
      case 'connect':
        if (!c) return;
        return connectLoop(c.addr, c.port, fx.withinMs, this.timeoutMs, () => this.state.phase.k !== 'stopping' && this.state.phase.k !== 'done', (link) => this.onLeaderLink(link), (message) => this.input({ t: 'connect-failed', message, addr: `${c.addr}:${c.port}` }));
      case 'say-hello':
        return this.leaderLink?.send({ t: 'hello', token: c!.token, host: this.spec.host, ranks: this.spec.ranks.length, key: this.cfg.claimKey });
      case 'claim':
        return void claimLoop(this.opts.workdir, this.spec, () => this.state.phase.k === 'starting' || this.state.phase.k === 'queued', (i) => this.input(i), (this.opts.timings ?? DEFAULT_TIMINGS).queuePollMs);
      case 'send':
        return fx.to === 'leader' ? this.leaderLink?.send(fx.msg) : this.links?.send(fx.to, fx.msg);
      case 'accept-link':
        return this.links?.accept(fx.host);
      case 'refuse-link':
        return this.links?.refuse(fx.host);
      case 'close-link':
        return this.links?.byHost.get(fx.host)?.close(fx.why);
      case 'spawn':
        return this.spawn(fx.attempt, fx.resume);
      case 'kill-ranks':
        return this.group?.kill();
      case 'dump-stack':
        return this.group?.dumpStack(fx.rank, (m) => this.log('info', m));
      case 'timer':
        clearTimeout(this.timers.get(fx.name));
        return void this.timers.set(fx.name, setTimeout(() => this.input({ t: 'timer', name: fx.name, ...(fx.name === 'blame' ? { links: this.links?.health() ?? [] } : {}) }), fx.ms));
      case 'clear-timer':
        return clearTimeout(this.timers.get(fx.name));
      case 'clear-timers':
        return this.timers.forEach((t) => clearTimeout(t));
      case 'requeue-excluding': // the exit waits for it: Slurm's SIGTERM for the requeue comes while it is under way
        return void (this.schedulerOp = askRequeueExcluding(this.opts, fx.node, fx.cause).then((why) => why && this.input({ t: 'requeue-refused', why })));
      case 'no-more-requeues':
        return void noMoreRequeues(this.opts, fx.restarts, this.cfg.maxRestarts).then(([level, message]) => this.log(level, message));
      case 'stop':
        return void this.stop();
      case 'exit':
        return void this.exit(fx.status, !!fx.linger);
    }
  }

  /** The ranks exit and the last messages leave the sockets; then `stopped` writes the end. */
  private async stop(): Promise<void> {
    this.group?.kill();
    await (this.group?.done ?? Promise.resolve());
    await Promise.all([this.links?.flushed(), this.leaderLink?.flushed()]);
    this.leaderLink?.close('run ended');
    this.input({ t: 'stopped' });
  }

  /** `linger` (the transition's, defect 10): keep listening until every follower rank heard the end, up to a follower's own connect window, the slots already released. */
  private async exit(status: 'ok' | 'failed' | 'cancelled', linger: boolean): Promise<void> {
    releaseSlots(this.opts.workdir, this.spec.runId, slotsOf(this.spec));
    const until = Date.now() + (this.cfg.connectMs ?? CONNECT_TIMEOUT_MS);
    while (this.links && linger && !followersTold(this.cfg, this.state) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await this.links?.flushed();
    await this.schedulerOp;
    this.finish(AGENT_RUN_EXIT[status]);
  }

  private onLeaderLink(link: ControlLink): void {
    this.leaderLink = link;
    link.beatCounters = () => this.sys?.counters();
    link.on((m) => this.input({ t: 'leader-msg', msg: m }), (why) => this.leaderLink === link && this.input({ t: 'leader-lost', why }));
    this.input({ t: 'leader-connected' });
  }

  private onEvent(e: CohortEvent): void {
    if (e.type === 'step') {
      const followers = [...(this.links?.byHost.values() ?? [])].map((l) => (l.isClosed ? undefined : l.peerCounters));
      this.record.event(this.sys ? this.sys.attach(e, followers) : e);
      // Rank 0's step carries every rank's compute time: a persistently slow one is named once.
      for (const r of this.slowRanks.observe(e)) this.emit(slowRankEvent(r));
      return;
    }
    if (e.type === 'error') return this.input({ t: 'rank-error', event: e, fromExit: false });
    if (e.type === 'done') return this.input({ t: 'rank-done', event: e }); // recorded or not: the transition's rankDone
    this.record.event(e);
    if (e.type === 'checkpoint' && e.action === 'saved' && this.links) for (const h of this.links.byHost.keys()) this.links.send(h, { t: 'checkpoint', step: e.step });
  }

  private spawn(attempt: number, resume: boolean): void {
    // A kill during a checkpoint write left its temp file: gone before the ranks (re)start (issue 24 defect 12).
    if (this.spec.ranks.some((r) => r.rank === 0)) for (const f of cleanStaleTemps(this.checkpointDir)) this.log('info', `removed ${f}, a checkpoint write cut short`);
    const every = checkpointingOf(this.spec);
    if (every && attempt <= 1 && this.cfg.role === 'leader') this.log('info', `restarts are on and no --checkpoint-every was given: checkpointing every ${every.checkpointEvery} steps`);
    const config = { ...this.spec.config, ...(resume ? { resume: true } : {}), ...every };
    const sink = { event: (e: CohortEvent) => this.onEvent(e), line: (rank: number, _s: 'stdout' | 'stderr', text: string) => this.record.rankLine(rank, text) };
    const group = new RankGroup({ ...this.spec, config }, this.engine!, this.opts.trainerEntry, this.dir, sink, (x) => this.onRankExit(group, x), this.rankEnv, (this.opts.timings ?? DEFAULT_TIMINGS).lifelineTimeoutMs);
    this.group = group;
    this.sys?.prime();
    if (!this.envTold) this.emit(envPayload(this.spec.host, group));
    this.envTold = true;
    void group.done.then(() => {
      const noDone = noDoneError(this.spec.host, group);
      this.input({ t: 'ranks-exited', attempt, ok: group.procs.every((p) => p.child.exitCode === 0), ...(noDone ? { noDone } : {}) });
    });
  }

  /** A rank's exit as an input: its own code or signal and log tail (a signal this agent sent is no failure). */
  private onRankExit(group: RankGroup, x: RankExit): void {
    if (group !== this.group) return;
    const failed = rankExitError(this.spec.host, this.cfg.role, x);
    if (failed) this.input({ t: 'rank-error', ...failed });
    if (x.code !== 0) group.kill(); // one failing rank stops this host's others (peers elsewhere see their sockets close)
  }
}
