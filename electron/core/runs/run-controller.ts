// Runs one training job across its hosts: hands each host agent its LaunchSpec, keeps the
// agents alive with heartbeats, merges their event streams, and decides the run's outcome.
//   - the first `error` from any host fails the run and cancels every other host at once
//   - cancel() asks every agent to stop, waits a grace period, then forces the channels closed;
//     cancel({force}) (a second Ctrl-C) forces at once. A channel that does not close within
//     abandonAfterMs of being forced (its host unreachable) is given up on, so a stop is bounded
//     by grace + abandon, not by TCP keepalive timeouts.
//   - an agent that exits without rank 0's `done` fails the run, naming the host
// The same controller serves `cohort run --local`, SSH clusters, `cohort serve` and Electron.
import {
  AGENT_CANCEL,
  AGENT_HEARTBEAT,
  EventLineDecoder,
  makeEvent,
  type AgentRank,
  type CohortEvent,
  type ErrorEvent,
  type LaunchSpec,
  type RunStatus,
  type TrainConfig,
} from '../../../trainer/protocol';
import type { AgentChannel } from './agent-channel';

export interface HostLaunch {
  host: string;
  ranks: AgentRank[];
  env: Record<string, string>;
  /** Opens the channel to this host's agent (spawns it locally or execs it over SSH). */
  open: () => Promise<AgentChannel>;
}

export interface RunPlan {
  runId: string;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  config: TrainConfig;
  hosts: HostLaunch[];
  heartbeatIntervalMs?: number;
  heartbeatTimeoutMs?: number;
  /** How long cancel waits for agents to stop their ranks before closing channels by force. */
  cancelGraceMs?: number;
  /** After forcing, how long to wait for a channel to confirm it closed before giving up on it. */
  abandonAfterMs?: number;
}

export interface RunResult {
  status: RunStatus;
  /** The first error (the root cause), if the run failed. */
  error?: ErrorEvent;
  done?: Extract<CohortEvent, { type: 'done' }>;
  lastStep: number;
}

export class RunController {
  private listeners = new Set<(e: CohortEvent) => void>();
  private channels: AgentChannel[] = [];
  private status: RunStatus | 'running' = 'running';
  private firstError: ErrorEvent | undefined;
  private doneEvent: Extract<CohortEvent, { type: 'done' }> | undefined;
  private lastStep = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private cancelTimer: NodeJS.Timeout | undefined;
  private forced = false;
  private abandon!: () => void;
  private readonly abandoned = new Promise<void>((res) => (this.abandon = res));
  private readonly startedAt = Date.now();
  readonly result: Promise<RunResult>;
  private resolveResult!: (r: RunResult) => void;

  constructor(private readonly plan: RunPlan) {
    this.result = new Promise((res) => (this.resolveResult = res));
  }

  onEvent(listener: (e: CohortEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Opens every host's agent and starts the run. Resolves when all agents have their spec. */
  async start(): Promise<void> {
    const opened = await Promise.allSettled(this.plan.hosts.map((h) => h.open()));
    opened.forEach((r, i) => {
      if (r.status === 'fulfilled') this.channels.push(r.value);
      else {
        const h = this.plan.hosts[i]!;
        const err = r.reason as Error & { code?: string };
        this.fail({ rank: -1, host: h.host, message: err.message, logTail: [], code: err.code ?? 'connect-failed' });
      }
    });
    if (this.status !== 'running') {
      this.shutdown();
      void this.waitForExit();
      return;
    }
    for (const [i, ch] of this.channels.entries()) this.attach(ch, this.plan.hosts[i]!);
    const interval = this.plan.heartbeatIntervalMs ?? 2000;
    this.heartbeat = setInterval(() => this.channels.forEach((c) => c.write(AGENT_HEARTBEAT)), interval);
    this.heartbeat.unref();
    void this.waitForExit();
  }

  /** Stops the run on every host. Idempotent; `force` (e.g. a second Ctrl-C) skips the grace period. */
  cancel(reason = 'cancelled by the user', opts: { force?: boolean } = {}): void {
    if (this.status === 'running') {
      this.status = 'cancelled';
      this.emit(makeEvent({ type: 'log', level: 'warn', message: `stopping the run on ${this.channels.length} host(s): ${reason}` }));
      this.shutdown();
    }
    if (opts.force) this.force();
  }

  /** Closes every channel now, and gives up on those that do not confirm within abandonAfterMs. */
  private force(): void {
    if (this.forced) return;
    this.forced = true;
    if (this.cancelTimer) clearTimeout(this.cancelTimer);
    for (const c of this.channels) c.forceKill();
    setTimeout(() => this.abandon(), this.plan.abandonAfterMs ?? 2000);
  }

  private attach(ch: AgentChannel, h: HostLaunch): void {
    const spec: LaunchSpec = {
      runId: this.plan.runId,
      host: h.host,
      worldSize: this.plan.worldSize,
      masterAddr: this.plan.masterAddr,
      masterPort: this.plan.masterPort,
      ranks: h.ranks,
      config: this.plan.config,
      env: h.env,
      heartbeatTimeoutMs: this.plan.heartbeatTimeoutMs ?? 20_000,
    };
    ch.write(JSON.stringify(spec));
    const decoder = new EventLineDecoder();
    const stderrTail: string[] = [];
    ch.onStdout((chunk) => {
      for (const r of decoder.push(chunk)) {
        if (r.kind === 'event') this.handle(r.event);
        else if (r.kind === 'invalid') this.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: `agent output line ${r.line} is not a valid event (${r.error}): ${r.text.slice(0, 200)}` }));
      }
    });
    ch.onStderr((chunk) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        stderrTail.push(line);
        if (stderrTail.length > 30) stderrTail.shift();
        this.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, stream: 'stderr', message: line }));
      }
    });
    void ch.exited.then((exit) => {
      if (this.status === 'running' && !this.doneEvent) {
        const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
        this.fail({ rank: -1, host: h.host, message: `the agent on ${h.host} ${how} before the run finished`, logTail: [...stderrTail], code: 'agent-exited' });
      }
    });
  }

  private handle(e: CohortEvent): void {
    if (e.type === 'step') this.lastStep = e.step;
    if (e.type === 'done') this.doneEvent = e;
    if (e.type === 'error') {
      this.emit(e);
      this.fail(e);
      return;
    }
    this.emit(e);
  }

  private fail(e: Omit<ErrorEvent, 'v' | 'time' | 'type'>): void {
    const err = 'v' in e ? (e as ErrorEvent) : makeEvent({ type: 'error', ...e });
    if (!('v' in e)) this.emit(err);
    if (this.status !== 'running') return;
    this.firstError = err;
    this.status = 'failed';
    this.shutdown();
  }

  private shutdown(): void {
    for (const c of this.channels) {
      c.write(AGENT_CANCEL);
      c.end();
    }
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.cancelTimer || this.forced) return;
    this.cancelTimer = setTimeout(() => this.force(), this.plan.cancelGraceMs ?? 4000);
    this.cancelTimer.unref();
  }

  private async waitForExit(): Promise<void> {
    const gone = await Promise.all(this.channels.map((c) => Promise.race([c.exited.then(() => true), this.abandoned.then(() => false)])));
    gone.forEach((ok, i) => {
      if (!ok) this.emit(makeEvent({ type: 'log', level: 'warn', host: this.channels[i]!.host, message: `${this.channels[i]!.host} did not confirm the stop (unreachable?); its agent stops its ranks by itself when it misses heartbeats` }));
    });
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.cancelTimer) clearTimeout(this.cancelTimer);
    if (this.status === 'running') this.status = this.doneEvent?.status ?? 'failed';
    for (const c of this.channels) c.dispose();
    const status = this.status as RunStatus;
    // A run that did not finish still gets a `done` (from the controller) so every consumer sees an end.
    if (!this.doneEvent || status !== 'ok') {
      const done = makeEvent({ type: 'done', status, steps: this.lastStep, medianGlobalSamplesPerSec: this.doneEvent?.medianGlobalSamplesPerSec ?? null, paramChecksum: '', durationMs: Date.now() - this.startedAt });
      if (!this.doneEvent) this.emit(done);
      this.doneEvent = this.doneEvent ?? done;
    }
    this.resolveResult({ status, ...(this.firstError ? { error: this.firstError } : {}), done: this.doneEvent, lastStep: this.lastStep });
  }

  private emit(e: CohortEvent): void {
    for (const l of this.listeners) l(e);
  }
}
