// The host agent: one per host per run, started by core over an SSH exec channel (or as a local
// child process for `--local`). It reads a LaunchSpec line on stdin, starts this host's ranks —
// each in its own process group — and relays their output as protocol events on stdout.
//
// Lifetime rule (no orphans): the agent kills every rank it started when its stdin ends (the SSH
// channel or the parent process is gone), when heartbeats stop, on a `cancel` line, or when any
// of its ranks fails. It never outlives its channel.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  AGENT_CANCEL,
  AGENT_HEARTBEAT,
  CACHE_DIR_ENV,
  CONFIG_ENV,
  EventLineDecoder,
  HOST_ENV,
  RENDEZVOUS_ENV,
  RUN_DIR_ENV,
  decodeLaunchSpec,
  type AgentRank,
  type LaunchSpec,
} from '../protocol';
import { relaxedSimdNodeFlags } from '../util/wasm-asm';
import { visibleGpus } from './gpu-env';
import { LogTail, stdoutEmitter, writeEvent, type Emit } from '../train/emit';
import { chooseEngine, type EngineChoice } from './engine-choice';
import { MAX_LOG_LINE_BYTES, boundedLines } from './bounded-lines';

/** Exit codes of the agent (core maps them onto run status). */
export const AGENT_EXIT = { ok: 0, failed: 1, badSpec: 2, cancelled: 130 } as const;
const KILL_GRACE_MS = 2000;

interface RankProc {
  spec: AgentRank;
  child: ChildProcess;
  tail: LogTail;
  reportedError: boolean;
  exited: boolean;
}

export async function runAgent(opts: { trainerEntry: string; enginesDir: string; workdir: string }): Promise<number> {
  const emit = stdoutEmitter();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const it = lines[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return AGENT_EXIT.badSpec;
  let spec: LaunchSpec;
  try {
    spec = decodeLaunchSpec(JSON.parse(first.value));
  } catch (err) {
    emit({ type: 'error', rank: -1, host: 'agent', message: `agent: bad launch spec: ${(err as Error).message}`, logTail: [], code: 'bad-spec' });
    return AGENT_EXIT.badSpec;
  }
  const runDir = join(opts.workdir, 'runs', spec.runId);
  mkdirSync(runDir, { recursive: true });

  let engine: EngineChoice;
  try {
    engine = await chooseEngine(spec.config.engine, { enginesDir: opts.enginesDir });
  } catch (err) {
    emit({ type: 'error', rank: -1, host: spec.host, message: (err as Error).message, logTail: [], code: 'engine-unavailable' });
    return AGENT_EXIT.failed;
  }
  emit({ type: 'log', level: 'info', host: spec.host, message: `agent on ${spec.host}: starting ${spec.ranks.length} rank(s) with engine ${engine.name} (${engine.reason})` });

  // gloo picks its interface from the host name, which often resolves to 127.0.x.1: point it at
  // the interface that actually reaches the master (users can still set GLOO_SOCKET_IFNAME in env).
  const torchEnv: Record<string, string> = {};
  if (engine.name === 'torch' && !spec.env.GLOO_SOCKET_IFNAME && !process.env.GLOO_SOCKET_IFNAME) {
    const dev = routeInterface(spec.masterAddr);
    if (dev) torchEnv.GLOO_SOCKET_IFNAME = dev;
  }
  const procs = spec.ranks.map((r) => startRank(r, { ...spec, env: { ...torchEnv, ...spec.env } }, engine, opts.trainerEntry, runDir, emit));
  const run = { outcome: 'running' as 'running' | 'failed' | 'cancelled' };
  let resolveDone: () => void = () => {};
  const allExited = new Promise<void>((res) => (resolveDone = res));

  const killAll = (why: string) => {
    for (const p of procs) if (!p.exited) signalGroup(p.child, 'SIGTERM');
    const hard = setTimeout(() => {
      for (const p of procs) if (!p.exited) signalGroup(p.child, 'SIGKILL');
    }, KILL_GRACE_MS);
    hard.unref();
    emit({ type: 'log', level: run.outcome === 'cancelled' ? 'info' : 'warn', host: spec.host, message: `agent on ${spec.host}: stopping ranks (${why})` });
  };
  let finished = false;
  const cancel = (why: string) => {
    if (finished || run.outcome !== 'running') return;
    run.outcome = 'cancelled';
    killAll(why);
  };

  for (const p of procs) {
    p.child.on('exit', (code, signal) => {
      p.exited = true;
      const ok = code === 0;
      if (!ok && run.outcome === 'running') {
        run.outcome = 'failed';
        if (!p.reportedError) {
          const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
          emit({ type: 'error', rank: p.spec.rank, host: spec.host, message: `rank ${p.spec.rank} on ${spec.host} ${how}`, logTail: p.tail.get(), code: 'rank-exited' });
        }
        // One failing rank fails the run fast: stop this host's other ranks now (peers on other hosts see their sockets close).
        killAll(`rank ${p.spec.rank} failed`);
      }
      if (procs.every((q) => q.exited)) resolveDone();
    });
  }

  // Heartbeats and cancel from core; EOF means the channel is gone.
  let lastBeat = Date.now();
  const watchdog =
    spec.heartbeatTimeoutMs > 0
      ? setInterval(() => {
          if (Date.now() - lastBeat > spec.heartbeatTimeoutMs) cancel(`no heartbeat from the controller for ${spec.heartbeatTimeoutMs} ms`);
        }, Math.min(1000, spec.heartbeatTimeoutMs))
      : undefined;
  void (async () => {
    for (;;) {
      const next = await it.next();
      if (next.done) return cancel('controller channel closed');
      const cmd = next.value.trim();
      if (cmd === AGENT_HEARTBEAT) lastBeat = Date.now();
      else if (cmd === AGENT_CANCEL) return cancel('cancelled by the controller');
    }
  })();
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => cancel(`agent received ${sig}`));

  await allExited;
  finished = true; // closing stdin below must not read as "controller gone"
  if (watchdog) clearInterval(watchdog);
  lines.close();
  if (run.outcome === 'cancelled') return AGENT_EXIT.cancelled;
  return run.outcome === 'failed' ? AGENT_EXIT.failed : AGENT_EXIT.ok;
}

function startRank(r: AgentRank, spec: LaunchSpec, engine: EngineChoice, trainerEntry: string, runDir: string, emit: Emit): RankProc {
  const threads = Math.max(1, Math.floor(cpus().length / spec.ranks.length));
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
    [CACHE_DIR_ENV]: join(runDir, '..', '..', 'cache'),
    COHORT_ENGINE_REASON: engine.reason,
    COHORT_THREADS: spec.env.COHORT_THREADS ?? String(threads),
  };
  const gpus = visibleGpus(engine.name, spec.ranks, r);
  if (gpus !== undefined) env.CUDA_VISIBLE_DEVICES = gpus;
  // The run id in every rank's arguments lets `cohort` find leftovers of a run with ps (python: -X accepts any key).
  // tfjs ranks get relaxed SIMD (FMA in the wasm GEMM kernels) where this Node has it behind a flag (Node 20).
  const [cmd, ...args] =
    engine.name === 'torch' ? [engine.python!, '-X', `cohort_run=${spec.runId}`, engine.script!] : [process.execPath, ...relaxedSimdNodeFlags(), trainerEntry, 'rank', '--run', spec.runId];
  // detached: the rank leads its own process group, so killing the group also ends anything it spawned.
  const child = spawn(cmd!, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const p: RankProc = { spec: r, child, tail: new LogTail(), reportedError: false, exited: false };
  const decoder = new EventLineDecoder();
  const host = spec.host;
  // Event lines can be large (a done event); plain log lines are cut at MAX_LOG_LINE_BYTES.
  boundedLines(child.stdout!, 4 * 1024 * 1024, (raw) => {
    const res = decoder.decodeLine(raw);
    const line = capLogLine(raw);
    if (res?.kind === 'event') {
      const e = res.event;
      if (e.type === 'error') {
        p.reportedError = true;
        writeEvent({ ...e, logTail: e.logTail.length ? e.logTail : p.tail.get() });
      } else if (r.rank === 0 || e.type === 'log') writeEvent(e);
      return;
    }
    if (res === undefined) return;
    p.tail.add(line);
    emit({ type: 'log', level: 'info', rank: r.rank, host, stream: 'stdout', message: line });
  });
  boundedLines(child.stderr!, MAX_LOG_LINE_BYTES, (line) => {
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

function capLogLine(line: string): string {
  return line.length <= MAX_LOG_LINE_BYTES ? line : `${line.slice(0, MAX_LOG_LINE_BYTES)}… [${line.length - MAX_LOG_LINE_BYTES} characters cut]`;
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

function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
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
