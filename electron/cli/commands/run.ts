// `cohort run --local [--ranks N] [trainer flags] [--json]`: trains on this machine with the
// same agent, events and run history as a cluster run.
import { join } from 'node:path';
import { localProfile } from '../../common';
import { resolvePaths } from '../../core/paths';
import { RunStore } from '../../core/runs/run-store';
import { startRun } from '../../core/runs/start-run';
import type { SshCluster } from '../../core/cluster/ssh-cluster';
import type { Profile } from '../../common';
import { loadProfile, makeCluster, progressPrinter } from './cluster';
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
  const local = !!values.local || values.profile === 'local';
  if (values.ranks !== undefined && !local) throw new UsageError('--ranks applies to --local; a cluster profile runs one rank per slot (edit the hosts\' slots)');
  const ranks = values.ranks === undefined ? 1 : Number(values.ranks);
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 64) throw new UsageError(`--ranks: expected a whole number from 1 to 64, got ${JSON.stringify(values.ranks)}`);
  const profile = local ? localProfile(ranks) : await loadProfile(io, values.profile, RUN_USAGE);
  const config = trainConfigFromFlags(values, profile.defaults ?? {});

  const paths = resolvePaths(io.env);
  const store = new RunStore(join(paths.dataDir, 'runs'));
  const cluster = local ? undefined : makeCluster(io);
  const printer = values.json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose });
  let started;
  try {
    started = await startRun({ profile, overrides: config, ranks, store, dataDir: paths.dataDir, ...(cluster ? { cluster } : {}), acceptNewHostKeys: !!values['accept-new-host-key'], ...(values.json ? {} : { onDeployProgress: progressPrinter(io) }) });
  } catch (err) {
    cluster?.dispose();
    throw err;
  }
  const { runId, controller, recorder } = started;
  recorder.onWriteProblem((message) => io.stderr.write(`cohort: ${message}\n`)); // disk full: said once, the run goes on
  controller.onEvent((e) => printer.event(e));
  const onSignal = () => controller.cancel('interrupted (Ctrl-C)');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await controller.start();
    const result = await controller.result;
    if (cluster) await reportLeftovers(cluster, profile, runId, io);
    if (!values.json) io.stderr.write(`run ${runId} recorded in ${recorder.dir}\n`);
    if (result.status === 'ok') return EXIT.ok;
    if (result.status === 'cancelled') return EXIT.cancelled;
    return result.error?.code?.startsWith('ssh-') ? EXIT.connection : EXIT.trainingFailed;
  } finally {
    cluster?.dispose();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** After a cluster run: every host is checked for processes of this run (there should be none). */
async function reportLeftovers(cluster: SshCluster, profile: Profile, runId: string, io: CliIo): Promise<void> {
  try {
    for (const h of await cluster.leftovers(profile, runId)) {
      io.stderr.write(h.processes.length ? `${h.host}: ${h.processes.length} process(es) of this run still running:\n${h.processes.map((p) => '    ' + p).join('\n')}\n` : `${h.host}: nothing left running\n`);
    }
  } catch (err) {
    io.stderr.write(`could not check the hosts for leftovers: ${(err as Error).message}\n`);
  }
}
