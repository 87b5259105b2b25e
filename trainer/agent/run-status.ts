// `run-status [--run ID]`: one JSON line per run under `<workdir>/runs/` (or the one asked for): its
// state.json with `agentAlive` (false for a non-terminal record whose agent is gone: lost, not running).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_CMD_EXIT, isValidRunId, type RunStatusLine } from '../protocol';
import { HostCmdFailure, parseFlags, replyLine } from './host-cmd';
import { readState, recordAgentAlive, runDirOf } from './run-record';

export async function runStatus(argv: readonly string[], workdir: string): Promise<number> {
  const flags = parseFlags(argv, ['run'], 'run-status');
  const runs = join(workdir, 'runs');
  const ids = flags.run ? [flags.run] : existsSync(runs) ? readdirSync(runs).filter((d) => isValidRunId(d)).sort() : [];
  let found = 0;
  for (const id of ids) {
    const dir = runDirOf(workdir, id);
    let st;
    try {
      st = existsSync(dir) ? readState(dir) : undefined;
    } catch {
      continue; // a record being written or damaged: leave it out rather than fail the whole list
    }
    if (!st) continue;
    found++;
    const line: RunStatusLine = { ...st, agentAlive: recordAgentAlive(st) };
    replyLine(line);
  }
  if (flags.run && !found) throw new HostCmdFailure('no-such-run', `run-status: no run ${flags.run} under ${workdir}/runs`, HOST_CMD_EXIT.noSuchRun);
  return 0;
}
