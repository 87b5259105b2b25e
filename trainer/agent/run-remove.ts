// `run-remove --run ID`: removes this host's record of a run that has ended (`cohort runs rm RUN
// --hosts`): the run directory `<workdir>/runs/<id>` with its events, state, spec, logs and the
// checkpoints kept there. Refused while anything of the run lives on this host: a non-terminal
// record whose agent is alive, or any process whose arguments name the run (an agent, a rank,
// a torch rank's `-X cohort_run=<id>`), whatever the record says. A `--checkpoint-dir` outside
// the run directory is left where it is and named (it may be shared with other runs).
// `run-remove --run ID --scheduler slurm` (on a Slurm profile's login node, in the shared workdir):
// the run's whole Slurm directory `<workdir>/slurm/<id>` (spec, batch script, job output,
// rendezvous, and every node's record under node-<i>/runs/<id>), refused while Slurm still has its
// job in the queue (squeue: pending, running, completing...) or a process here names the run.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { HOST_CMD_EXIT, isTerminalRunState, slurmNodeWorkdir, slurmRunDir, type RunRemoveReply } from '../protocol';
import { HostCmdFailure, parseFlags, replyLine } from './host-cmd';
import { checkRunId, readState, recordAgentAlive, recordPaths, runDirOf } from './run-record';

/** Host commands that only read, stop or remove the record: another client's, not the run itself. */
const RECORD_COMMANDS = ['run-follow', 'run-status', 'run-stop', 'run-remove', 'run-spec'];

export async function runRemove(argv: readonly string[], workdir: string): Promise<number> {
  const flags = parseFlags(argv, ['run', 'scheduler'], 'run-remove');
  if (!flags.run) throw new HostCmdFailure('usage', 'run-remove: --run ID is required', HOST_CMD_EXIT.usage);
  const runId = checkRunId(flags.run);
  if (flags.scheduler !== undefined) {
    if (flags.scheduler !== 'slurm') throw new HostCmdFailure('usage', `run-remove: --scheduler must be slurm, got ${JSON.stringify(flags.scheduler)}`, HOST_CMD_EXIT.usage);
    return removeSlurmRun(runId, workdir);
  }
  const dir = runDirOf(workdir, runId);
  if (!existsSync(dir)) throw new HostCmdFailure('no-such-run', `run-remove: no run ${runId} under ${workdir}/runs`, HOST_CMD_EXIT.noSuchRun);
  let st;
  try {
    st = readState(dir);
  } catch {
    st = undefined; // a damaged state.json: the processes below decide
  }
  if (st && !isTerminalRunState(st.state) && recordAgentAlive(st)) {
    throw new HostCmdFailure('run-live', `run ${runId} is ${st.state} on this host (agent pid ${st.agentPid}); its record stays`);
  }
  const live = runProcesses(runId);
  if (live.length) throw new HostCmdFailure('run-live', `${live.length} process(es) of run ${runId} still run on this host (pid ${live.join(', ')}); its record stays`);
  const keptCheckpointDir = outsideCheckpointDir(dir, workdir);
  const { files, bytes, checkpoints } = sizeOf(dir);
  rmSync(dir, { recursive: true, force: true });
  const reply: RunRemoveReply = { runId, dir, files, bytes, checkpoints, ...(keptCheckpointDir ? { keptCheckpointDir } : {}) };
  replyLine(reply);
  return 0;
}

/** A Slurm run's directory in the shared workdir, once Slurm no longer runs (or queues) its job. */
function removeSlurmRun(runId: string, workdir: string): number {
  const dir = slurmRunDir(workdir, runId);
  if (!existsSync(dir)) throw new HostCmdFailure('no-such-run', `run-remove: no Slurm run ${runId} under ${workdir}/slurm`, HOST_CMD_EXIT.noSuchRun);
  const job = jobIdOf(dir);
  const state = job ? queuedState(job) : undefined;
  if (state) throw new HostCmdFailure('run-live', `Slurm job ${job} of run ${runId} is ${state}; its record stays`);
  const live = runProcesses(runId);
  if (live.length) throw new HostCmdFailure('run-live', `${live.length} process(es) of run ${runId} still run on this node (pid ${live.join(', ')}); its record stays`);
  const node0 = slurmNodeWorkdir(workdir, runId, 0);
  const keptCheckpointDir = existsSync(runDirOf(node0, runId)) ? outsideCheckpointDir(runDirOf(node0, runId), node0) : undefined;
  const { files, bytes, checkpoints } = sizeOf(dir);
  rmSync(dir, { recursive: true, force: true });
  const reply: RunRemoveReply = { runId, dir, files, bytes, checkpoints, ...(keptCheckpointDir ? { keptCheckpointDir } : {}) };
  replyLine(reply);
  return 0;
}

function jobIdOf(dir: string): string | undefined {
  try {
    const j = JSON.parse(readFileSync(join(dir, 'job.json'), 'utf8')) as { jobId?: unknown };
    return typeof j.jobId === 'string' && /^\d+$/.test(j.jobId) ? j.jobId : undefined;
  } catch {
    return undefined; // never submitted (sbatch refused it): nothing of it can run
  }
}

/** Slurm's state of `job` while it is still queued or running; undefined once it has ended (or was purged). */
function queuedState(job: string): string | undefined {
  let out: string;
  try {
    out = execFileSync('squeue', ['-h', '-j', job, '-o', '%T'], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string; code?: string };
    if (/invalid job id/i.test(e.stderr ?? '')) return undefined; // purged: long over
    throw new HostCmdFailure(e.code === 'ENOENT' ? 'slurm-missing' : 'run-live', `run-remove: cannot ask Slurm whether job ${job} still runs (${(e.stderr ?? e.message).trim().split('\n').pop()}); the record stays`);
  }
  const states = out.split('\n').map((l) => l.trim()).filter(Boolean);
  return states.find((st) => !ENDED_JOB_STATES.includes(st));
}

/** squeue's states of a job that has ended (shown for MinJobAge after the end). */
const ENDED_JOB_STATES = ['COMPLETED', 'CANCELLED', 'FAILED', 'TIMEOUT', 'NODE_FAIL', 'PREEMPTED', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE'];

/** Pids of processes on this host whose arguments name the run (not this command, not another client's record command). */
function runProcesses(runId: string): number[] {
  const out: number[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const p of pids) {
    const pid = Number(p);
    if (pid === process.pid) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const names = args.includes(`cohort_run=${runId}`) || args.some((a, i) => a === '--run' && args[i + 1] === runId);
    if (names && !args.some((a) => RECORD_COMMANDS.includes(a))) out.push(pid);
  }
  return out;
}

/** The run's `--checkpoint-dir` when it lies outside its run directory (read from spec.json). */
function outsideCheckpointDir(dir: string, workdir: string): string | undefined {
  try {
    const spec = JSON.parse(readFileSync(recordPaths(dir).spec, 'utf8')) as { config?: { checkpointDir?: unknown } };
    const c = spec.config?.checkpointDir;
    if (typeof c !== 'string' || !c) return undefined;
    const abs = resolve(workdir, c);
    const rel = relative(dir, abs);
    return rel.startsWith('..') || isAbsolute(rel) ? abs : undefined;
  } catch {
    return undefined;
  }
}

function sizeOf(dir: string): { files: number; bytes: number; checkpoints: number } {
  let files = 0;
  let bytes = 0;
  let checkpoints = 0;
  const walk = (d: string, inCheckpoints: boolean) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const s = lstatSync(p);
      // a run directory's checkpoints/ (a Slurm run's: each node's node-<i>/runs/<id>/checkpoints)
      if (s.isDirectory()) walk(p, inCheckpoints || (name === 'checkpoints' && (d === dir || d.endsWith(`/runs/${basename(dir)}`))));
      else {
        files++;
        bytes += s.size;
        if (inCheckpoints) checkpoints++;
      }
    }
  };
  walk(dir, false);
  return { files, bytes, checkpoints };
}
