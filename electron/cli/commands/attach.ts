// `cohort attach RUN [--json]`: follows a run from any terminal, whichever client started it, from
// the beginning of its hosts' record (no event missed, none twice), and exits with the run's exit
// code. On a finished run it prints the record and exits. Ctrl-C detaches; the run goes on.
import { EXIT, UsageError } from '../exit-codes';
import { humanPrinter, jsonPrinter } from '../event-printer';
import type { CliIo } from '../io';
import { makeService } from '../service';
import { parseCommandLine } from '../train-flags';
import { exitCodeOf } from './run';
import type { RunResult } from '../../core/runs/run-controller';
import { followRun, runErrorText } from '../../common';
import { resolveRun } from '../../core/runs/run-select';
import { onProcessSignals } from '../../../trainer/util/node-lifecycle';

export const ATTACH_USAGE = `usage: cohort attach RUN [--json] [--verbose] [--per-rank] [--system]
  streams the run's events from the start of its record and exits with its exit code
  (0 ok, 1 failed, 3 lost/connection, 130 cancelled); Ctrl-C detaches, the run goes on`;

export async function attachCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(args, { json: { type: 'boolean' }, verbose: { type: 'boolean' }, 'per-rank': { type: 'boolean' }, system: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
  if (values.help) {
    io.stdout.write(ATTACH_USAGE + '\n');
    return EXIT.ok;
  }
  const id = positionals[0];
  if (!id) throw new UsageError(`name a run (see "cohort runs list")\n${ATTACH_USAGE}`);
  const service = makeService(io);
  const printer = values.json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose, perRank: !!values['per-rank'], system: !!values.system, asked: () => service.runs.meta(runId)?.config });
  const runId = resolveRun(service.runs, id).id;
  let off = () => undefined as void;
  const detach = () => {
    io.stderr.write(`\ndetached from run ${runId}; it goes on (cohort stop ${runId} stops it)\n`);
    process.exit(EXIT.ok);
  };
  const signals = onProcessSignals(['SIGINT', 'SIGTERM', 'SIGHUP'], detach);
  try {
    const f = await followRun(service, runId, (e) => printer.event(e));
    off = f.dispose;
    const a = f.attachment;
    const result = service.runResult(runId);
    if (!a.live || !result) {
      if (!values.json) io.stderr.write(`run ${runId}: ${a.meta.status}${a.meta.error ? ` (${runErrorText(a.meta.error)})` : ''}\n`);
      return exitCodeOf({ status: a.meta.status as RunResult['status'], ...(a.meta.error ? { error: a.meta.error } : {}) });
    }
    return exitCodeOf(await result);
  } finally {
    signals.dispose();
    off();
    service.dispose();
  }
}
