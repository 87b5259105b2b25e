// `run-follow --run ID [--offset BYTES]`: the bytes of events.jsonl from BYTES on, whole lines only,
// then follows (poll 150 ms) until this host's run is terminal and drained (exit 0). An agent that
// died without a terminal state: drain, exit 4. No such run: exit 5. stdout carries event lines only.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { HOST_CMD_EXIT, isTerminalRunState } from '../protocol';
import { HostCmdFailure, intFlag, parseFlags, sleep } from './host-cmd';
import { readState, recordAgentAlive, recordPaths, runDirOf } from './run-record';

const POLL_MS = 150;
/** Longer than the agent's state beat (2 s). */
const DAMAGED_FINAL_MS = 3000;
const CHUNK = 1 << 20;

export async function runFollow(argv: readonly string[], workdir: string): Promise<number> {
  const flags = parseFlags(argv, ['run', 'offset'], 'run-follow');
  if (!flags.run) throw new HostCmdFailure('usage', 'run-follow: --run ID is required', HOST_CMD_EXIT.usage);
  const dir = runDirOf(workdir, flags.run);
  const paths = recordPaths(dir);
  if (!existsSync(dir)) throw new HostCmdFailure('no-such-run', `run-follow: no run ${flags.run} under ${workdir}/runs`, HOST_CMD_EXIT.noSuchRun);
  let offset = intFlag(flags, 'offset', 0, 'run-follow');
  const buf = Buffer.alloc(CHUNK);
  let closedOut = false;
  process.stdout.on('error', () => (closedOut = true));
  /** Writes every whole line from `offset`; returns whether it wrote anything. */
  const drain = async (): Promise<boolean> => {
    if (!existsSync(paths.events)) return false;
    const fd = openSync(paths.events, 'r');
    let wrote = false;
    try {
      for (;;) {
        const n = readSync(fd, buf, 0, CHUNK, offset);
        if (n === 0) break;
        const end = buf.subarray(0, n).lastIndexOf(0x0a);
        if (end < 0) break; // a line longer than CHUNK is not written by the agent; a partial one waits
        const out = Buffer.from(buf.subarray(0, end + 1));
        offset += end + 1;
        wrote = true;
        if (!process.stdout.write(out)) await new Promise<void>((res) => process.stdout.once('drain', res));
        if (closedOut) return wrote;
      }
    } finally {
      closeSync(fd);
    }
    return wrote;
  };
  // A state.json that cannot be read is final only when it stays so past the agent's 2-s beat (an
  // in-place rewrite on a full disk may be caught half-written; the next beat mends it).
  let damagedSince = 0;
  const stateNow = (): ReturnType<typeof readState> | 'damaged' => {
    try {
      const st = existsSync(paths.state) ? readState(dir) : undefined;
      damagedSince = 0;
      return st;
    } catch (err) {
      if (!(err instanceof HostCmdFailure) || err.code !== 'record-damaged') throw err;
      damagedSince ||= Date.now();
      if (Date.now() - damagedSince > DAMAGED_FINAL_MS) throw err;
      return 'damaged';
    }
  };
  for (;;) {
    if (closedOut) return 0;
    const now = stateNow();
    if (now === 'damaged') {
      if (!(await drain())) await sleep(POLL_MS); // the events go on meanwhile
      continue;
    }
    const st = now;
    if (st && isTerminalRunState(st.state)) {
      await drain();
      return 0;
    }
    if (st && !recordAgentAlive(st)) {
      // one more look: the agent may have written its terminal state just before exiting
      const again = readState(dir);
      await drain();
      return again && isTerminalRunState(again.state) ? 0 : HOST_CMD_EXIT.agentLost;
    }
    if (!(await drain())) await sleep(POLL_MS);
  }
}
