// The host agent: one per host per run, started by core over an SSH exec channel (or as a local
// child process for `--local`). It reads a LaunchSpec line on stdin, starts this host's ranks —
// each in its own process group — and relays their output as protocol events on stdout.
//
// Lifetime rule (no orphans): the agent kills every rank it started when its stdin ends (the SSH
// channel or the parent process is gone), when heartbeats stop, on a `cancel` line, or when any
// of its ranks fails. It never outlives its channel, and no rank outlives the agent (ranks.ts: the
// stdin lifeline). Durable runs use `run-start` / `agent-run` instead (run-agent.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AGENT_CANCEL, AGENT_HEARTBEAT, decodeLaunchSpec, type LaunchSpec } from '../protocol';
import { writeEvent } from '../train/emit';
import { chooseEngine, type EngineChoice } from './engine-choice';
import { assignGpus } from './gpu-assignment';
import { readGpuRows } from '../util/nvidia-smi';
import { RankGroup, emitTo, type RankSink } from './ranks';

/** Exit codes of the agent (core maps them onto run status). */
export const AGENT_EXIT = { ok: 0, failed: 1, badSpec: 2, cancelled: 130 } as const;

export async function runAgent(opts: { trainerEntry: string; enginesDir: string; workdir: string }): Promise<number> {
  const sink: RankSink = { event: writeEvent };
  const emit = emitTo(sink);
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
    engine = await chooseEngine(spec.config.engine, { enginesDir: opts.enginesDir, workdir: opts.workdir, env: { ...process.env, ...spec.env } });
  } catch (err) {
    emit({ type: 'error', rank: -1, host: spec.host, message: (err as Error).message, logTail: [], code: 'engine-unavailable' });
    return AGENT_EXIT.failed;
  }
  emit({ type: 'log', level: 'info', host: spec.host, message: `agent on ${spec.host}: starting ${spec.ranks.length} rank(s) with engine ${engine.name} (${engine.reason})` });
  // --require-gpu on torch: the agent knows from the Python probe whether that torch has CUDA.
  if (spec.config.requireGpu && engine.name === 'torch' && !engine.cuda) {
    emit({ type: 'error', rank: -1, host: spec.host, message: `--require-gpu: ${spec.host}'s torch has no CUDA (${engine.reason}); install a CUDA build of PyTorch, set the host's python in the profile, or run without --require-gpu`, logTail: [], code: 'gpu-required' });
    return AGENT_EXIT.failed;
  }
  const gpus = assignGpus({ engine: engine.name, ranks: spec.ranks, hostGpus: (await readGpuRows())?.gpus.length ?? 0, inherited: { ...process.env, ...spec.env } });
  emit({ type: 'log', level: 'info', host: spec.host, message: `agent on ${spec.host}: GPUs: ${gpus.explanation}` });

  const run = { outcome: 'running' as 'running' | 'failed' | 'cancelled' };
  const group = new RankGroup(spec, engine, opts.trainerEntry, runDir, sink, ({ proc: p, code, signal }) => {
    if (code !== 0 && run.outcome === 'running') {
      run.outcome = 'failed';
      if (!p.reportedError) {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        emit({ type: 'error', rank: p.spec.rank, host: spec.host, message: `rank ${p.spec.rank} on ${spec.host} ${how}`, logTail: p.tail.get(), code: 'rank-exited' });
      }
      // One failing rank fails the run fast: stop this host's other ranks now (peers on other hosts see their sockets close).
      killAll(`rank ${p.spec.rank} failed`);
    }
  }, gpus.env);
  const killAll = (why: string) => {
    group.kill();
    emit({ type: 'log', level: run.outcome === 'cancelled' ? 'info' : 'warn', host: spec.host, message: `agent on ${spec.host}: stopping ranks (${why})` });
  };
  let finished = false;
  const cancel = (why: string) => {
    if (finished || run.outcome !== 'running') return;
    run.outcome = 'cancelled';
    killAll(why);
  };

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

  await group.done;
  finished = true; // closing stdin below must not read as "controller gone"
  if (watchdog) clearInterval(watchdog);
  lines.close();
  if (run.outcome === 'cancelled') return AGENT_EXIT.cancelled;
  return run.outcome === 'failed' ? AGENT_EXIT.failed : AGENT_EXIT.ok;
}
