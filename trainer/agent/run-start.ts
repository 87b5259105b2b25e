// `run-start`: reads one LaunchSpec line on stdin, creates the run dir with spec.json (0600: the
// host env may hold secrets, so it never goes on a command line), starts the run's agent detached
// (own session, stdio to agent.log: a closed SSH channel or a dead client does not touch it),
// waits for its first state.json and prints `{"runId","host","agentPid","state"}`.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { HOST_CMD_EXIT, decodeLaunchSpec, type LaunchSpec, type RunStartReply } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';
import { HostCmdFailure, firstStdinLine, replyLine, sleep } from './host-cmd';
import { agentAlive, checkRunId, readState, recordPaths, runDirOf } from './run-record';

const START_TIMEOUT_MS = 10_000;

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
    if (st) {
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
