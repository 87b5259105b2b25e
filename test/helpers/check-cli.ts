// `cohort check ... --json` as a process: its exit code, its one JSON document (refused, with both
// streams, when it is not one) and stderr; the check's own duration is printed for the test log.
import type { CheckResult } from '../../trainer/protocol/check';
import { runCli } from './cli';

export async function runCheck(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; result: CheckResult; stderr: string }> {
  const r = runCli(['check', ...args, '--json'], { env });
  const exit = await r.exit;
  let result: CheckResult;
  try {
    result = JSON.parse(r.stdout) as CheckResult;
  } catch {
    throw new Error(`not one JSON document (exit ${exit.code}):\n${r.stdout}\n${r.stderr}`);
  }
  process.stderr.write(`cohort check ${args[0]}: ${(result.durationMs / 1000).toFixed(1)} s, exit ${exit.code}\n`);
  return { code: exit.code, result, stderr: r.stderr };
}
