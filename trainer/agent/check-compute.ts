// `check-compute --threads N` (TrainConfig on stdin): one rank of the planned config, alone (world
// size 1), for a few steps on this host: `cohort check`'s per-rank compute time when History has
// none. The rank is started as the agent starts one (same command, environment, lifeline), in a
// temporary run directory under the workdir that is removed afterwards; nothing is left running
// (the rank's stdin is its lifeline to this process, and it is killed on a timeout).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CACHE_DIR_ENV, CONFIG_ENV, HOST_ENV, RENDEZVOUS_ENV, RUN_DIR_ENV, decodeTrainConfig, type TrainConfig } from '../protocol';
import type { ComputeReport } from '../protocol/check';
import { LIFELINE_ENV } from '../train/lifeline';
import { relaxedSimdNodeFlags } from '../util/wasm-asm';
import { chooseEngine } from './engine-choice';
import { firstStdinLine, intFlag, parseFlags, replyLine } from './host-cmd';

/** Steps measured after one warm-up step (compile, autotune). */
export const CHECK_COMPUTE_STEPS = 3;

export async function checkCompute(argv: readonly string[], o: { trainerEntry: string; enginesDir: string; workdir: string }): Promise<number> {
  const flags = parseFlags(argv, ['threads', 'timeout-ms', 'python'], 'check-compute');
  if (flags.python) process.env.COHORT_PYTHON = flags.python;
  const timeoutMs = intFlag(flags, 'timeout-ms', 180_000, 'check-compute');
  const line = await firstStdinLine();
  let report: ComputeReport;
  try {
    const planned = decodeTrainConfig(JSON.parse(line ?? '{}'));
    const config: TrainConfig = { ...planned, steps: 1 + CHECK_COMPUTE_STEPS, epochs: 0, warmupSteps: 1, logSteps: 1, checkpointEvery: 0, checkpointDir: '', resume: false };
    report = await measure(config, { ...o, threads: flags.threads, timeoutMs });
  } catch (err) {
    report = { ok: false, error: { code: 'check-compute-failed', message: (err as Error).message } };
  }
  replyLine(report);
  return report.ok ? 0 : 1;
}

async function measure(config: TrainConfig, o: { trainerEntry: string; enginesDir: string; workdir: string; threads: string | undefined; timeoutMs: number }): Promise<ComputeReport> {
  const engine = await chooseEngine(config.engine, { enginesDir: o.enginesDir, workdir: o.workdir, enginesReportImport: true });
  const runDir = mkdtempSync(join(o.workdir, '.check-compute-'));
  const runId = `check-${process.pid}`;
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [RENDEZVOUS_ENV.masterAddr]: '127.0.0.1',
      [RENDEZVOUS_ENV.masterPort]: String(await freePort()),
      [RENDEZVOUS_ENV.rank]: '0',
      [RENDEZVOUS_ENV.worldSize]: '1',
      [RENDEZVOUS_ENV.localRank]: '0',
      [CONFIG_ENV]: JSON.stringify(config),
      [HOST_ENV]: 'check',
      [RUN_DIR_ENV]: runDir,
      [CACHE_DIR_ENV]: join(o.workdir, 'cache'),
      [LIFELINE_ENV]: '1',
      COHORT_ENGINE_REASON: engine.reason,
      ...(o.threads ? { COHORT_THREADS: o.threads } : {}),
    };
    const [cmd, ...args] = engine.name === 'torch' ? [engine.python!, '-X', `cohort_run=${runId}`, engine.script!] : [process.execPath, ...relaxedSimdNodeFlags(), o.trainerEntry, 'rank', '--run', runId];
    const child = spawn(cmd!, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => undefined);
    const steps: number[] = [];
    let backend = '';
    let failure = '';
    let partial = '';
    let errTail = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      partial += c;
      for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
        const l = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        try {
          const e = JSON.parse(l) as { type?: string; stepTimeMs?: number; backend?: string; device?: string; message?: string };
          if (e.type === 'step' && typeof e.stepTimeMs === 'number') steps.push(e.stepTimeMs);
          if (e.type === 'hello' && e.backend) backend = e.backend;
          if (e.type === 'error' && e.message && !failure) failure = e.message;
        } catch {
          // a log line
        }
      }
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => (errTail = (errTail + c).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
    const code = await new Promise<number | null>((resolve) => {
      child.on('close', (c) => resolve(c));
      child.on('error', (e) => {
        failure ||= e.message;
        resolve(127);
      });
    });
    clearTimeout(timer);
    if (!steps.length) {
      return { ok: false, error: { code: 'check-compute-failed', message: `a one-rank ${engine.name} run measured no step (exit ${code}): ${failure || errTail.trim().split('\n').slice(-3).join(' / ') || 'no output'}` } };
    }
    steps.sort((a, b) => a - b);
    return { ok: true, stepMs: steps[Math.floor(steps.length / 2)]!, steps: steps.length, engine: engine.name, backend };
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}
