// This host's ranks of one run: started each in its own process group with a lifeline (stdin, a
// pipe from the agent: when the agent dies, whatever kills it, the kernel closes the pipe and the
// rank exits), their output turned into events, stopped together. Used by the detached
// `agent-run` of durable runs (run-agent.ts).
// A hung agent (issue 24 item 4): the group beats on every rank's lifeline (lifelineBeatMs); a rank
// that hears nothing for the lifeline timeout (COHORT_LIFELINE_TIMEOUT_MS) reports `agent-silent`
// and stops itself (train/lifeline.ts; torch: cohort_torch/distributed.py). Before, ranks of a
// SIGSTOPped agent trained on for 120 s and more with nothing recorded.
// A rank whose stdout filled while its agent was stopped (fast steps with a step event each, ~5 s)
// cannot write that report there: it writes it to its last-words file first, which this group relays
// when the rank exits without a report on stdout (last-words.ts).
import { MAX_LOG_LINE_BYTES, boundedLines } from './bounded-lines';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CACHE_DIR_ENV,
  CONFIG_ENV,
  EventLineDecoder,
  HOST_ENV,
  RENDEZVOUS_ENV,
  RUN_DIR_ENV,
  DEFAULT_TIMINGS,
  makeEvent,
  type AgentRank,
  type CohortEvent,
  type EventPayload,
  type LaunchSpec,
} from '../protocol';
import { relaxedSimdNodeFlags } from '../util/wasm-asm';
import { LAST_WORDS_ENV, LIFELINE_BEATS, LIFELINE_ENV, LIFELINE_TIMEOUT_ENV, lifelineBeatMs } from '../train/lifeline';
import { clearLastWords, lastWordsPath, takeLastWords } from './last-words';
import { LogTail } from '../train/emit';
import type { EngineChoice } from './engine-choice';

export const KILL_GRACE_MS = 2000;
/**
 * A rank asked for its stack is killed once the stack is in its log (its stderr quiet for
 * STACK_QUIET_MS after the first frame line), STACK_WAIT_MS after the ask at the latest: the
 * halt's SIGTERM right after SIGUSR1 kills it before its handler runs (the kernel ends a process
 * on a fatal signal at once, whatever else is pending; seen here: 4 of 5 stacks lost).
 */
export const STACK_WAIT_MS = 3000;
const STACK_QUIET_MS = 200;
/** A rank's exit waits this long at most for its output pipes to close (a process it left may hold them). */
const OUTPUT_DRAIN_MS = 1000;

/** Where a rank's output goes: complete events (relayed ones keep their own time) and raw lines. */
export interface RankSink {
  event(e: CohortEvent): void;
  /** Every output line of a rank, for its log file (optional). */
  line?(rank: number, stream: 'stdout' | 'stderr', text: string): void;
}

export const emitTo =
  (sink: RankSink) =>
  (payload: EventPayload): void =>
    sink.event(makeEvent(payload) as CohortEvent);

export interface RankProc {
  spec: AgentRank;
  child: ChildProcess;
  tail: LogTail;
  /** The rank reported its own error event (the agent does not add a second one). */
  reportedError: boolean;
  exited: boolean;
  /** The code of the rank's own error event, if it sent one (peer-lost marks a consequence, not a cause). */
  errorCode?: string;
  /** The signals this agent sent the rank (kill()): an exit by one of them is ours, not a failure. */
  sent: Set<NodeJS.Signals>;
  /** The environment the rank was started with (the agent reports its switches: the `env` event). */
  env: NodeJS.ProcessEnv;
  /** The rank's last-words file (last-words.ts): its report when its stdout could not take it. */
  lastWords: string;
  /** Its stack was asked for (dumpStack): when, when its first line came, its stderr's last line. */
  stack?: { askedAt: number; seenAt?: number; lastLineAt: number };
}

export interface RankExit {
  proc: RankProc;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Starts `spec.ranks`; `onExit` runs for each rank's exit; `done` settles when all have exited. */
export class RankGroup {
  readonly procs: RankProc[];
  readonly done: Promise<void>;
  private hardKill: NodeJS.Timeout | undefined;
  private readonly beat: NodeJS.Timeout;
  private readonly torch: boolean;
  private readonly stackWaits = new Set<RankProc>();

  /** `rankEnv`: per-rank GPU environment from gpu-assignment.ts (same order as spec.ranks); `lifelineMs`: the ranks' lifeline timeout. */
  constructor(spec: LaunchSpec, engine: EngineChoice, trainerEntry: string, runDir: string, sink: RankSink, onExit: (e: RankExit) => void, rankEnv: Record<string, string>[] = [], lifelineMs = DEFAULT_TIMINGS.lifelineTimeoutMs) {
    // gloo picks its interface from the host name, which often resolves to 127.0.x.1: point it at
    // the interface that actually reaches the master (users can still set GLOO_SOCKET_IFNAME in env).
    const torchEnv: Record<string, string> = {};
    if (engine.name === 'torch' && !spec.env.GLOO_SOCKET_IFNAME && !process.env.GLOO_SOCKET_IFNAME) {
      const dev = routeInterface(spec.masterAddr);
      if (dev) torchEnv.GLOO_SOCKET_IFNAME = dev;
    }
    const withEnv = { ...spec, env: { ...torchEnv, ...spec.env } };
    this.torch = engine.name === 'torch';
    const lifeline = { [LIFELINE_ENV]: LIFELINE_BEATS, [LIFELINE_TIMEOUT_ENV]: String(lifelineMs) };
    // A rank's `rank-hung` report about a rank of this host: hang.py has sent that one SIGUSR1; the halt it brings waits for the stack.
    const watched: RankSink = {
      event: (e) => {
        if (e.type === 'error' && e.code === 'rank-hung' && e.host === spec.host) this.stackComing(e.rank);
        sink.event(e);
      },
      ...(sink.line ? { line: sink.line.bind(sink) } : {}),
    };
    this.procs = spec.ranks.map((r, i) => startRank(r, { ...withEnv, env: { ...withEnv.env, ...rankEnv[i] } }, engine, trainerEntry, runDir, watched, lifeline));
    // The beat: one byte per rank from this (the agent's) event loop; a rank that reads none (stopped) is not written more than a few.
    this.beat = setInterval(() => {
      for (const p of this.procs) if (!p.exited && p.child.stdin!.writable && p.child.stdin!.writableLength < 64) p.child.stdin!.write('\n');
    }, lifelineBeatMs(lifelineMs));
    this.beat.unref();
    let resolve: () => void = () => {};
    this.done = new Promise<void>((res) => (resolve = res));
    if (this.procs.length === 0) {
      clearInterval(this.beat);
      resolve();
    }
    for (const p of this.procs) {
      // The exit once the rank's output is read ('close'; at most OUTPUT_DRAIN_MS after 'exit'): its own
      // last report comes first, also when both wait at once (this agent was stopped, issue 24 item 4).
      const exited = (code: number | null, signal: NodeJS.Signals | null) => {
        if (p.exited) return;
        p.exited = true;
        relayLastWords(p, spec.host, sink);
        onExit({ proc: p, code, signal });
        if (this.procs.every((q) => q.exited)) {
          if (this.hardKill) clearTimeout(this.hardKill);
          clearInterval(this.beat);
          resolve();
        }
      };
      p.child.on('close', exited);
      p.child.on('exit', (code, signal) => void setTimeout(() => exited(code, signal), OUTPUT_DRAIN_MS));
    }
  }

  get running(): boolean {
    return this.procs.some((p) => !p.exited);
  }

  /**
   * A hung rank's stack into its own log (issue 21 item 4): torch ranks write every thread's Python
   * stack on SIGUSR1 (faulthandler, hang.py), asked here for a rank a peer on another host named
   * (a reporter on this host sends it itself). tfjs ranks: nothing (SIGUSR1 would open Node's inspector).
   */
  dumpStack(rank: number, say: (message: string) => void): void {
    const p = this.procs.find((q) => q.spec.rank === rank && !q.exited);
    if (!this.torch || p?.child.pid === undefined) return;
    try {
      process.kill(p.child.pid, 'SIGUSR1');
      const continued = this.stackComing(rank);
      say(`rank ${rank} (pid ${p.child.pid}) hung, a peer on another host says: asked it for its Python stack (SIGUSR1${continued ? '; it was stopped, so continued it (SIGCONT) to let it write' : ''}), which goes to its log`);
    } catch {
      // gone meanwhile
    }
  }

  /**
   * Rank `rank` was sent SIGUSR1: kill() waits for its stack (STACK_WAIT_MS). A stopped rank (state
   * T: SIGSTOP, Ctrl-Z) runs no handler until it is continued, and the halt would end it with the
   * signal pending, so it is continued (true): its stack then shows where it stood.
   */
  private stackComing(rank: number): boolean {
    const p = this.procs.find((q) => q.spec.rank === rank && !q.exited);
    if (!this.torch || p?.child.pid === undefined) return false;
    p.stack ??= { askedAt: Date.now(), lastLineAt: Date.now() };
    if (processState(p.child.pid) !== 'T') return false;
    try {
      process.kill(p.child.pid, 'SIGCONT');
      return true;
    } catch {
      return false; // gone meanwhile
    }
  }

  /** SIGTERM to every live rank's group (a rank whose stack was asked: once it is written), SIGKILL after the grace period. Idempotent. */
  kill(): void {
    for (const p of this.procs) if (!p.exited && !p.stack) signalGroup(p, 'SIGTERM');
    const waiting = this.procs.filter((p) => !p.exited && p.stack);
    for (const p of waiting) this.termAfterStack(p);
    if (this.hardKill || !this.running) return;
    this.hardKill = setTimeout(() => {
      for (const p of this.procs) if (!p.exited) signalGroup(p, 'SIGKILL');
    }, KILL_GRACE_MS + (waiting.length ? STACK_WAIT_MS : 0));
    this.hardKill.unref();
  }

  /** SIGTERM to `p` once its stack is written (or STACK_WAIT_MS after the ask, or never if it ends first). */
  private termAfterStack(p: RankProc): void {
    if (this.stackWaits.has(p)) return;
    const written = () => p.stack!.seenAt !== undefined && Date.now() - p.stack!.lastLineAt >= STACK_QUIET_MS;
    const t = setInterval(() => {
      if (!p.exited && !written() && Date.now() - p.stack!.askedAt < STACK_WAIT_MS) return;
      clearInterval(t);
      if (!p.exited) signalGroup(p, 'SIGTERM');
    }, 50);
    t.unref();
    this.stackWaits.add(p);
  }
}

/** A rank that exited without a report on its stdout may have written one to its last-words file: relayed as its own. */
function relayLastWords(p: RankProc, host: string, sink: RankSink): void {
  if (p.reportedError) return clearLastWords(p.lastWords);
  const warn = (message: string) => emitTo(sink)({ type: 'log', level: 'warn', rank: p.spec.rank, host, stream: 'stderr', message });
  const e = takeLastWords(p.lastWords, warn);
  if (!e) return;
  p.reportedError = true;
  if (e.code) p.errorCode = e.code;
  sink.event({ ...e, logTail: e.logTail.length ? e.logTail : p.tail.get() });
}

function startRank(r: AgentRank, spec: LaunchSpec, engine: EngineChoice, trainerEntry: string, runDir: string, sink: RankSink, lifeline: Record<string, string>): RankProc {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...spec.env,
    [RENDEZVOUS_ENV.masterAddr]: spec.masterAddr,
    [RENDEZVOUS_ENV.masterPort]: String(spec.masterPort),
    [RENDEZVOUS_ENV.rank]: String(r.rank),
    [RENDEZVOUS_ENV.worldSize]: String(spec.worldSize),
    [RENDEZVOUS_ENV.localRank]: String(r.localRank),
    [CONFIG_ENV]: JSON.stringify(spec.config),
    [HOST_ENV]: spec.host,
    [RUN_DIR_ENV]: runDir,
    [LAST_WORDS_ENV]: lastWordsPath(runDir, r.rank),
    [CACHE_DIR_ENV]: join(runDir, '..', '..', 'cache'),
    ...lifeline,
    COHORT_ENGINE_REASON: engine.reason,
    // No COHORT_THREADS of the agent's own: the profile's host env or the host's (a local run: the user's)
    // come in above, else the torch engine takes its fair share itself, the cores this rank may use ÷ the
    // job's ranks on this machine, which it knows once every rank has joined (hosts with one kernel boot id,
    // such as containers or network namespaces of one box, share the cores: distributed.py).
  };
  // The run id in every rank's arguments lets `cohort` find leftovers of a run with ps (python: -X accepts any key).
  // tfjs ranks get relaxed SIMD (FMA in the wasm GEMM kernels) where this Node has it behind a flag (Node 20).
  const [cmd, ...args] =
    engine.name === 'torch' ? [engine.python!, '-X', `cohort_run=${spec.runId}`, engine.script!] : [process.execPath, ...relaxedSimdNodeFlags(), trainerEntry, 'rank', '--run', spec.runId];
  // detached: the rank leads its own process group, so killing the group also ends anything it spawned.
  // stdin is the lifeline: the agent writes only its beats and never closes it; its death closes it.
  clearLastWords(env[LAST_WORDS_ENV]!);
  const child = spawn(cmd!, args, { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  child.stdin!.on('error', () => {}); // EPIPE once the rank is gone: nothing to do
  const p: RankProc = { spec: r, child, tail: new LogTail(), reportedError: false, exited: false, sent: new Set(), env, lastWords: env[LAST_WORDS_ENV]! };
  const decoder = new EventLineDecoder();
  const host = spec.host;
  const emit = emitTo(sink);
  // Event lines can be large (a done event); plain log lines are cut at MAX_LOG_LINE_BYTES, and a
  // newline-free stream never grows the agent (bounded-lines.ts; readline buffers without bound).
  boundedLines(child.stdout!, MAX_EVENT_LINE_BYTES, (raw) => {
    const res = decoder.decodeLine(raw);
    const line = capLogLine(raw);
    sink.line?.(r.rank, 'stdout', line);
    if (res?.kind === 'event') {
      const e = res.event;
      if (e.type === 'error') {
        p.reportedError = true;
        if (e.code) p.errorCode = e.code;
        sink.event({ ...e, logTail: e.logTail.length ? e.logTail : p.tail.get() });
      } else if (r.rank === 0 || e.type === 'log') sink.event(e);
      return;
    }
    if (res === undefined) return;
    p.tail.add(line);
    emit({ type: 'log', level: 'info', rank: r.rank, host, stream: 'stdout', message: line });
  });
  boundedLines(child.stderr!, MAX_LOG_LINE_BYTES, (line) => {
    if (p.stack) {
      p.stack.lastLineAt = Date.now();
      if (p.stack.seenAt === undefined && /most recent call first/.test(line)) p.stack.seenAt = p.stack.lastLineAt;
    }
    sink.line?.(r.rank, 'stderr', line);
    p.tail.add(line);
    emit({ type: 'log', level: 'info', rank: r.rank, host, stream: 'stderr', message: line });
  });
  child.on('error', (err) => {
    p.tail.add(String(err));
    emit({ type: 'error', rank: r.rank, host, message: `could not start rank ${r.rank} on ${host}: ${err.message}`, logTail: [], code: 'spawn-failed' });
    p.reportedError = true;
  });
  return p;
}

/** The process's state letter from /proc/PID/stat (R, S, D, T = stopped, t = traced, Z...), if readable (Linux). */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2]; // the command in parentheses may hold anything
  } catch {
    return undefined;
  }
}

/** The network interface the kernel would use to reach `addr` (Linux `ip route get`), if known. */
function routeInterface(addr: string): string | undefined {
  try {
    const out = execFileSync('ip', ['-o', 'route', 'get', addr], { encoding: 'utf8', timeout: 3000, stdio: ['ignore', 'pipe', 'ignore'] });
    return /\bdev (\S+)/.exec(out)?.[1];
  } catch {
    return undefined;
  }
}

function signalGroup(p: RankProc, sig: NodeJS.Signals): void {
  const child = p.child;
  if (child.pid === undefined) return;
  p.sent.add(sig);
  try {
    process.kill(-child.pid, sig);
  } catch {
    try {
      child.kill(sig);
    } catch {
      // already gone
    }
  }
}

/** A rank's event lines may be this long (a `done` or `plan` event); log lines are cut sooner. */
const MAX_EVENT_LINE_BYTES = 4 * 1024 * 1024;

function capLogLine(line: string): string {
  return line.length <= MAX_LOG_LINE_BYTES ? line : `${line.slice(0, MAX_LOG_LINE_BYTES)}… [${line.length - MAX_LOG_LINE_BYTES} characters cut]`;
}
