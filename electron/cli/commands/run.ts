// `cohort run --local [--ranks N] [trainer flags] [--json]`: trains on this machine with the
// same agent, events and run history as a cluster run.
import { join } from 'node:path';
import { localProfile } from '../../../trainer/protocol';
import { resolvePaths } from '../../core/paths';
import { RunStore } from '../../core/runs/run-store';
import { startRun } from '../../core/runs/start-run';
import { EXIT, UsageError } from '../exit-codes';
import type { CliIo } from '../io';
import { humanPrinter, jsonPrinter } from '../event-printer';
import { parseCommandLine, trainConfigFromFlags, trainFlagOptions } from '../train-flags';

export const RUN_USAGE = `usage: cohort run --local [--ranks N] [options]
       cohort run --profile NAME [options] [--accept-new-host-key]
training options:
  --engine tfjs|torch|auto   --backend auto|tensorflow|wasm|cpu
  --batch-size B (per rank)  --image-size S  --stem imagenet|cifar  --classes C
  --steps K | --epochs E     --log-steps L   --warmup-steps W
  --lr X  --optimizer adamw|sgd  --momentum M  --weight-decay D  --lr-warmup-steps N  --schedule constant|cosine|step
  --data synthetic|cifar100:DIR  --compile  --fp16  --bf16  --seed K  --freeze-bn  --sync-bn
  --checkpoint-dir DIR  --checkpoint-every N  --resume
output: --json (events only, one per line)  --verbose (every rank's log lines)`;

export async function runCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(args, {
    ...trainFlagOptions(),
    local: { type: 'boolean' },
    profile: { type: 'string' },
    ranks: { type: 'string' },
    json: { type: 'boolean' },
    verbose: { type: 'boolean' },
    'accept-new-host-key': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RUN_USAGE + '\n');
    return EXIT.ok;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\n${RUN_USAGE}`);
  if (!values.local && !values.profile) throw new UsageError(`say where to run: --local, or --profile NAME\n${RUN_USAGE}`);
  if (values.profile && values.profile !== 'local') throw new UsageError('--profile: SSH cluster runs are not wired into this CLI yet (unfinished: see issue "Clusters over SSH"); use --local');
  const ranks = values.ranks === undefined ? 1 : Number(values.ranks);
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 64) throw new UsageError(`--ranks: expected a whole number from 1 to 64, got ${JSON.stringify(values.ranks)}`);
  const config = trainConfigFromFlags(values);

  const paths = resolvePaths(io.env);
  const store = new RunStore(join(paths.dataDir, 'runs'));
  // Flags were validated into a full config above; the profile's defaults do not apply to --local.
  const { runId, controller, recorder } = await startRun({ profile: localProfile(ranks), overrides: config, ranks, store, dataDir: paths.dataDir });
  const printer = values.json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose });
  controller.onEvent((e) => printer.event(e));
  const onSignal = () => controller.cancel('interrupted (Ctrl-C)');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await controller.start();
    const result = await controller.result;
    if (!values.json) io.stderr.write(`run ${runId} recorded in ${recorder.dir}\n`);
    return result.status === 'ok' ? EXIT.ok : result.status === 'cancelled' ? EXIT.cancelled : EXIT.trainingFailed;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
