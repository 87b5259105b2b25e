// `cohort run --local [--ranks N] [trainer flags] [--json]`: trains on this machine with the
// same agent, events and run history as a cluster run.
import { resolvePaths } from '../../core/paths';
import { localWorkdir, startLocalRun } from '../../core/runs/local-run';
import { RunStore, newRunId } from '../../core/runs/run-store';
import { EXIT, UsageError } from '../exit-codes';
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

export async function runCommand(args: string[], io: { env: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
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
  const runId = newRunId();
  const store = new RunStore(`${paths.dataDir}/runs`);
  const controller = await startLocalRun({ runId, ranks, config, workdir: localWorkdir(paths.dataDir) });
  const recorder = store.create({
    id: runId,
    profile: 'local',
    startedAt: new Date().toISOString(),
    status: 'running',
    config,
    hosts: [{ name: 'local', ranks: Array.from({ length: ranks }, (_, i) => i) }],
    worldSize: ranks,
    versions: { node: process.versions.node },
    controllerPid: process.pid,
  });
  const printer = values.json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose });
  controller.onEvent((e) => {
    recorder.record(e);
    printer.event(e);
  });
  const onSignal = () => controller.cancel('interrupted (Ctrl-C)');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await controller.start();
    const result = await controller.result;
    recorder.update({
      status: result.status,
      endedAt: new Date().toISOString(),
      medianGlobalSamplesPerSec: result.done?.medianGlobalSamplesPerSec ?? null,
      steps: result.lastStep,
      ...(result.error ? { error: `${result.error.rank >= 0 ? `rank ${result.error.rank} on ` : ''}${result.error.host}: ${result.error.message}` } : {}),
    });
    if (!values.json) io.stderr.write(`run ${runId} recorded in ${recorder.dir}\n`);
    return result.status === 'ok' ? EXIT.ok : result.status === 'cancelled' ? EXIT.cancelled : EXIT.trainingFailed;
  } finally {
    recorder.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
