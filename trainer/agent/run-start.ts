// `run-start`: reads one LaunchSpec line on stdin, creates the run dir with spec.json (0600: the
// host env may hold secrets, so it never goes on a command line), starts the run's agent detached
// (own session, stdio to agent.log: a closed SSH channel or a dead client does not touch it),
// waits for its first state.json and prints `{"runId","host","agentPid","state"}`.
// `run-rejoin --run ID`: the same for a host that was lost (sshd and every process killed, machine
// rebooted) with its workdir kept: a client relaunches the agent from the spec.json already there.
// A follower's agent rejoins the leader, which waits for it (run-agent.ts awaitHosts); a leader's
// agent goes on from its predecessor's record, and the followers, which wait for it (awaitLeader),
// connect to it again.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { HOST_CMD_EXIT, decodeLaunchSpec, isTerminalRunState, type LaunchSpec, type RunStartReply } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';
import { HostCmdFailure, firstStdinLine, parseFlags, replyLine, sleep } from './host-cmd';
import { claimSlots, slotsOf } from './leases';
import { agentAlive, checkRunId, readState, recordPaths, runDirOf, stopMarkerPath } from './run-record';

const START_TIMEOUT_MS = 10_000;
/** A rejoin lock older than this was left by a run-rejoin that died: it is taken over. */
const REJOIN_LOCK_STALE_MS = START_TIMEOUT_MS + 5000;

export async function runStart(opts: { trainerEntry: string; workdir: string; execArgv?: string[] }): Promise<number> {
  const line = await firstStdinLine();
  let spec: LaunchSpec;
  try {
    if (line === undefined) throw new Error('no LaunchSpec line on stdin');
    spec = decodeLaunchSpec(JSON.parse(line));
    checkRunId(spec.runId);
  } catch (err) {
    throw new HostCmdFailure('bad-spec', `run-start: bad launch spec: ${(err as Error).message}`, HOST_CMD_EXIT.badSpec);
  }
  const dir = runDirOf(opts.workdir, spec.runId);
  const paths = recordPaths(dir);
  const prior = existsSync(paths.state) ? readState(dir) : undefined;
  if (prior) {
    const live = agentAlive(prior.agentPid, spec.runId);
    throw new HostCmdFailure('run-exists', `run ${spec.runId} already ${live ? `has a live agent on ${spec.host} (pid ${prior.agentPid})` : `has a record on ${spec.host} (state ${prior.state})`}; start it under a new run id`);
  }
  mkdirSync(paths.logs, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(paths.spec, JSON.stringify(spec) + '\n', { mode: 0o600 });
  return startAgent(opts, spec);
}

export async function runRejoin(argv: readonly string[], opts: { trainerEntry: string; workdir: string; execArgv?: string[] }): Promise<number> {
  const runId = parseFlags(argv, ['run'], 'run-rejoin').run;
  if (!runId) throw new HostCmdFailure('usage', 'run-rejoin: --run ID is required', HOST_CMD_EXIT.usage);
  const dir = runDirOf(opts.workdir, runId);
  const paths = recordPaths(dir);
  if (!existsSync(paths.spec)) throw new HostCmdFailure('no-such-run', `run-rejoin: no run ${runId} under ${opts.workdir}/runs (the workdir was not kept): start the run again`, HOST_CMD_EXIT.noSuchRun);
  const spec = decodeLaunchSpec(JSON.parse(readFileSync(paths.spec, 'utf8')));
  const prior = readState(dir);
  if (prior && isTerminalRunState(prior.state)) throw new HostCmdFailure('run-ended', `run-rejoin: run ${runId} already ended on ${spec.host} (${prior.state})`);
  // A stop is final (issue 24 defect 6): a run stopped while this host's agent was gone is not relaunched.
  if (existsSync(stopMarkerPath(dir))) throw new HostCmdFailure('run-stopped', `run-rejoin: run ${runId} was stopped (cohort stop reached ${spec.host}); it is not relaunched: start a new run to train again`);
  const lock = join(dir, 'rejoin.lock');
  const already = (): RunStartReply | undefined => {
    const st = readState(dir);
    return st && agentAlive(st.agentPid, runId) ? { runId, host: spec.host, agentPid: st.agentPid, state: st.state } : undefined;
  };
  // Two clients may relaunch at once: one lock per run dir, and a live agent is the answer for both.
  let fd: number | undefined;
  try {
    fd = openSync(lock, 'wx', 0o600);
  } catch {
    const age = Date.now() - (existsSync(lock) ? statSync(lock).mtimeMs : 0);
    if (age < REJOIN_LOCK_STALE_MS) throw new HostCmdFailure('rejoin-busy', `run-rejoin: another client is relaunching the agent of ${runId} on ${spec.host}; ask again in a few seconds`);
    rmSync(lock, { force: true });
    fd = openSync(lock, 'wx', 0o600);
  }
  closeSync(fd);
  try {
    const live = already();
    if (live) {
      replyLine(live);
      return 0;
    }
    return await startAgent(opts, spec);
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Starts the run's agent detached and waits for the state record it writes (its own pid in it). */
async function startAgent(opts: { trainerEntry: string; workdir: string; execArgv?: string[] }, spec: LaunchSpec): Promise<number> {
  const dir = runDirOf(opts.workdir, spec.runId);
  const paths = recordPaths(dir);
  const log = openSync(paths.agentLog, 'a', 0o600);
  // detached = setsid: the agent leads a new session, so the exec channel's hangup never reaches it.
  const child = spawn(process.execPath, [...(opts.execArgv ?? []), opts.trainerEntry, 'agent-run', '--run', spec.runId], {
    cwd: opts.workdir,
    env: { ...process.env, COHORT_WORKDIR: opts.workdir },
    stdio: ['ignore', log, log],
    detached: true,
  });
  closeSync(log);
  let exited: number | null = null;
  child.on('exit', (code) => (exited = code ?? 1));
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const st = existsSync(paths.state) ? readState(dir) : undefined;
    if (st && st.agentPid === child.pid) {
      // A single-host run's queue order is start order: its slots are claimed for the agent (its pid in
      // the lease) before the client hears the run started, so a run started after this one queues
      // behind it even if its agent reaches its own claim first. Busy or stale leases are left to the
      // agent, which queues and says behind whom, or takes the stale one over and says so. A multi-host
      // run claims host after host in the global claim order (claim-order.ts), never here: a claim out
      // of that order is how two runs came to hold one host each and wait for the other forever.
      if (spec.worldSize === spec.ranks.length) {
        try {
          claimSlots(opts.workdir, spec.runId, slotsOf(spec), { pid: child.pid, takeOver: false });
        } catch {
          // unreadable leases dir: the agent's own claim reports it
        }
      }
      const reply: RunStartReply = { runId: spec.runId, host: spec.host, agentPid: st.agentPid, state: st.state };
      replyLine(reply);
      return 0;
    }
    if (exited !== null || Date.now() > deadline) {
      const tail = readFileSync(paths.agentLog, 'utf8').trim().split('\n').slice(-5).join(' | ');
      if (exited === null) child.kill('SIGKILL');
      throw new HostCmdFailure('agent-start', `run-start: the agent of ${spec.runId} on ${spec.host} ${exited !== null ? `exited with code ${exited}` : `wrote no state within ${START_TIMEOUT_MS / 1000} s`}${tail ? `: ${tail}` : ''}`);
    }
    await sleep(25);
  }
}
