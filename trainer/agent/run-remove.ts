// `run-remove --run ID`: removes this host's record of a run that has ended (`cohort runs rm RUN
// --hosts`): the run directory `<workdir>/runs/<id>` with its events, state, spec, logs and the
// checkpoints kept there. Refused while anything of the run lives on this host: a non-terminal
// record whose agent is alive, or any process whose arguments name the run (an agent, a rank,
// a torch rank's `-X cohort_run=<id>`), whatever the record says. A `--checkpoint-dir` outside
// the run directory is left where it is and named (it may be shared with other runs).
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { HOST_CMD_EXIT, isTerminalRunState, type RunRemoveReply } from '../protocol';
import { HostCmdFailure, parseFlags, replyLine } from './host-cmd';
import { readState, recordAgentAlive, recordPaths, runDirOf } from './run-record';

/** Host commands that only read, stop or remove the record: another client's, not the run itself. */
const RECORD_COMMANDS = ['run-follow', 'run-status', 'run-stop', 'run-remove', 'run-spec'];

export async function runRemove(argv: readonly string[], workdir: string): Promise<number> {
  const flags = parseFlags(argv, ['run'], 'run-remove');
  if (!flags.run) throw new HostCmdFailure('usage', 'run-remove: --run ID is required', HOST_CMD_EXIT.usage);
  const runId = flags.run;
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
      if (s.isDirectory()) walk(p, inCheckpoints || (d === dir && name === 'checkpoints'));
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
