// `run-spec --run ID`: the run's LaunchSpec as this host's agent was started with it (spec.json),
// without its env (the profile's, which the client has). A client that only attached to a run has
// no launch specs; when the leader moves a lost host's ranks to a spare host (issue 21 item 5), it
// reads the leader's spec here to build the spare's (the rendezvous, control endpoint and settings
// are the run's; the ranks are the lost host's): electron/core/runs/run-spare.ts.
import { existsSync, readFileSync } from 'node:fs';
import { HOST_CMD_EXIT, decodeLaunchSpec } from '../protocol';
import { HostCmdFailure, parseFlags, replyLine } from './host-cmd';
import { recordPaths, runDirOf } from './run-record';

export async function runSpec(argv: readonly string[], workdir: string): Promise<number> {
  const runId = parseFlags(argv, ['run'], 'run-spec').run;
  if (!runId) throw new HostCmdFailure('usage', 'run-spec: --run ID is required', HOST_CMD_EXIT.usage);
  const path = recordPaths(runDirOf(workdir, runId)).spec;
  if (!existsSync(path)) throw new HostCmdFailure('no-such-run', `run-spec: no run ${runId} under ${workdir}/runs`, HOST_CMD_EXIT.noSuchRun);
  const { env: _env, ...spec } = decodeLaunchSpec(JSON.parse(readFileSync(path, 'utf8')));
  replyLine({ spec: { ...spec, env: {} } });
  return 0;
}
