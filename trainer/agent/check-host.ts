// `check-host --engine E`: what `cohort check` needs to know about this host, as one JSON line
// (HostCheckReport): Node and the bundle answering, the workdir writable and its free disk, the
// clock, the engine the agent would choose (engine-choice.ts, the agent's own code), the torch
// stack's versions (Python, torch, CUDA, cuDNN, NCCL) and every GPU's health from nvidia-smi.
// Nothing is left running: it reads, writes one temporary file in the workdir and removes it.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ENGINES, toErrorInfo, type Engine } from '../protocol';
import type { HostCheckReport } from '../protocol/check';
import { readBootId } from '../util/boot-id';
import { readGpuHealth } from '../util/gpu-health';
import { chooseEngine, findPythons, pickPython, pythonCandidates, tfjsGpuInstalled } from './engine-choice';
import { HostCmdFailure, parseFlags, replyLine } from './host-cmd';


/** How long each Python may take to say which torch it has (a first `import torch` with CUDA can take long). */
const PYTHON_TIMEOUT_MS = 30_000;

export async function checkHost(argv: readonly string[], o: { trainerEntry: string; enginesDir: string; workdir: string }): Promise<number> {
  const flags = parseFlags(argv, ['engine', 'python'], 'check-host');
  // The profile's python for this host, as the agent gets it (LaunchSpec env COHORT_PYTHON).
  if (flags.python) process.env.COHORT_PYTHON = flags.python;
  const engine = (flags.engine ?? 'tfjs') as Engine;
  if (!ENGINES.includes(engine)) throw new HostCmdFailure('usage', `check-host: --engine must be one of ${ENGINES.join(', ')}`, 3);
  // The engine choice and the list ask the same interpreters at once: findPythons starts each once.
  const [choice, pythons, smi] = await Promise.all([
    chooseEngine(engine, { enginesDir: o.enginesDir, workdir: o.workdir, pythonTimeoutMs: PYTHON_TIMEOUT_MS }).then(
      (c) => ({ name: c.name, reason: c.reason, ...(c.cuda !== undefined ? { cuda: c.cuda } : {}) }),
      (e: unknown) => ({ error: toErrorInfo(e, 'engine-unavailable') }),
    ),
    engine === 'tfjs' ? Promise.resolve(undefined) : findPythons(pythonCandidates(process.env, o.workdir), { timeoutMs: PYTHON_TIMEOUT_MS }),
    readGpuHealth(runSmi, isCohortProcess).catch(() => ({ state: 'failed' as const, gpus: [] })),
  ]);
  const chosen = pythons ? pickPython(pythons).chosen : undefined;
  const libs = { ...(chosen?.cudnn ? { cudnn: chosen.cudnn } : {}), ...(chosen?.nccl ? { nccl: chosen.nccl } : {}) };
  const smiState = smi.state === 'failed' && !(await smiPresent()) ? 'missing' : smi.state;
  const report: HostCheckReport = {
    v: 1,
    nodeVersion: process.version,
    bundleHash: bundleHash(o.trainerEntry),
    workdir: o.workdir,
    ...workdirState(o.workdir),
    hostname: hostname(),
    cpuModel: cpus()[0]?.model.trim() ?? '?',
    cores: cpus().length,
    ...bootId(),
    memBytes: totalmem(),
    engine: choice,
    tfjsBackend: tfjsGpuInstalled() ? 'tensorflow-gpu' : tfjsNodeInstalled() ? 'tensorflow' : 'wasm',
    ...(chosen ? { python: { path: chosen.python, version: chosen.version, ...(chosen.torch ? { torch: chosen.torch } : {}), ...(chosen.cudaVersion ? { cuda: chosen.cudaVersion } : {}), ...libs } } : {}),
    smi: smiState,
    gpus: smi.gpus,
    timeMs: Date.now(),
  };
  report.timeMs = Date.now();
  replyLine(report);
  return 0;
}

/** The kernel's boot id (Linux): hosts that report the same one are one machine (namespaces, containers) and share its cores. */
function bootId(): { bootId?: string } {
  const id = readBootId();
  return id ? { bootId: id } : {}; // none (not Linux): each host counts as its own machine
}

function bundleHash(entry: string): string {
  try {
    return (JSON.parse(readFileSync(join(dirname(entry), 'manifest.json'), 'utf8')) as { hash?: string }).hash ?? '';
  } catch {
    return '';
  }
}

function workdirState(workdir: string): Pick<HostCheckReport, 'workdirWritable' | 'workdirError' | 'freeBytes'> {
  const probe = join(workdir, `.cohort-check-${process.pid}`);
  let out: Pick<HostCheckReport, 'workdirWritable' | 'workdirError' | 'freeBytes'>;
  try {
    mkdirSync(workdir, { recursive: true });
    writeFileSync(probe, 'cohort check\n');
    out = { workdirWritable: true };
  } catch (err) {
    out = { workdirWritable: false, workdirError: (err as Error).message };
  } finally {
    rmSync(probe, { force: true });
  }
  try {
    const s = statfsSync(workdir);
    out.freeBytes = s.bavail * s.bsize;
  } catch {
    // unknown: the report leaves it out
  }
  return out;
}

function tfjsNodeInstalled(): boolean {
  const roots = [process.env.COHORT_RUNTIME_DIR ? join(process.env.COHORT_RUNTIME_DIR, 'node_modules') : undefined, process.cwd()].filter((x): x is string => !!x);
  try {
    createRequire(join(process.cwd(), 'noop.js')).resolve('@tensorflow/tfjs-node', { paths: roots });
    return true;
  } catch {
    return false;
  }
}

/** A compute process is Cohort's when its command line is a rank or agent of the bundle (node) or the torch engine (python). */
function isCohortProcess(pid: number): boolean {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('cohort-trainer.mjs') || cmd.includes('cohort_run=');
  } catch {
    return false;
  }
}

function runSmi(args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => execFile('nvidia-smi', args, { timeout: 10_000 }, (err, out) => resolve(err ? undefined : out)));
}

function smiPresent(): Promise<boolean> {
  return new Promise((resolve) => execFile('nvidia-smi', ['-h'], { timeout: 10_000 }, (err) => resolve(!(err && (err as NodeJS.ErrnoException).code === 'ENOENT'))));
}
