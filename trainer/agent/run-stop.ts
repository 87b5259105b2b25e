// `run-stop --run ID [--reason TEXT] [--wait-ms N]`: SIGTERM to this host's agent of the run (only
// after checking its command line names the run: never anything else), waits for a terminal state,
// prints the state record. On the leader this stops the whole run (the leader tells its followers).
import { existsSync, writeFileSync } from 'node:fs';
import { HOST_CMD_EXIT, isTerminalRunState, type RunStatusLine } from '../protocol';
import { HostCmdFailure, intFlag, parseFlags, replyLine, sleep } from './host-cmd';
import { agentAlive, readState, recordAgentAlive, runDirOf, stopMarkerPath } from './run-record';

export async function runStop(argv: readonly string[], workdir: string): Promise<number> {
  const flags = parseFlags(argv, ['run', 'reason', 'wait-ms'], 'run-stop');
  if (!flags.run) throw new HostCmdFailure('usage', 'run-stop: --run ID is required', HOST_CMD_EXIT.usage);
  const waitMs = intFlag(flags, 'wait-ms', 10_000, 'run-stop');
  const dir = runDirOf(workdir, flags.run);
  const st = existsSync(dir) ? readState(dir) : undefined;
  if (!st) throw new HostCmdFailure('no-such-run', `run-stop: no run ${flags.run} under ${workdir}/runs`, HOST_CMD_EXIT.noSuchRun);
  if (!isTerminalRunState(st.state) && st.agentNode !== undefined) {
    throw new HostCmdFailure('remote-agent', `run-stop: the agent of ${flags.run} runs on node ${st.agentNode}, not here; stop its Slurm job (scancel, which cohort stop uses)`);
  }
  // A stop is final: even with this host's agent gone (its host was lost and is back), no client relaunches it.
  try {
    writeFileSync(stopMarkerPath(dir), `${JSON.stringify({ at: Date.now(), reason: flags.reason ?? 'stopped' })}\n`, { mode: 0o600 });
  } catch {
    // a full disk: the SIGTERM below still stops a live agent
  }
  if (!isTerminalRunState(st.state) && agentAlive(st.agentPid, flags.run)) {
    try {
      process.kill(st.agentPid, 'SIGTERM');
    } catch {
      // it just exited
    }
  }
  const deadline = Date.now() + waitMs;
  for (;;) {
    const now = readState(dir)!;
    const alive = recordAgentAlive(now);
    if (isTerminalRunState(now.state) || !alive || Date.now() > deadline) {
      const line: RunStatusLine = { ...now, agentAlive: alive };
      replyLine(line);
      if (isTerminalRunState(now.state)) return 0;
      return alive ? HOST_CMD_EXIT.failed : HOST_CMD_EXIT.agentLost;
    }
    await sleep(50);
  }
}
