// `cohort run --local [--ranks N] [trainer flags] [--json]`: trains on this machine with the
// same agent, events and run history as a cluster run.
import { join } from 'node:path';
import { LOCAL_PROFILE_NAME, localProfile } from '../../common';
import { DEFAULT_TRAIN_CONFIG, FLAG_OF, makeEvent } from '../../../trainer/protocol';
import { resolvePaths } from '../../core/paths';
import { RunStore } from '../../core/runs/run-store';
import { startRun } from '../../core/runs/start-run';
import type { SshCluster } from '../../core/cluster/ssh-cluster';
import type { Profile } from '../../common';
import { loadProfile, makeCluster, progressPrinter } from './cluster';
import { EXIT, UsageError } from '../exit-codes';
import type { CliIo } from '../io';
import { humanPrinter, jsonPrinter } from '../event-printer';
import { trainConfigFromFlags } from '../train-flags';
import type { Parsed } from '../command-spec';

/** The training options block of `cohort run --help` (the flags themselves come from train-flags.ts). */
export function runTrainingHelp(): string {
  const defaults = Object.entries(DEFAULT_TRAIN_CONFIG)
    .filter(([, v]) => v !== false && v !== '')
    .map(([k, v]) => `${FLAG_OF[k as keyof typeof FLAG_OF]} ${String(v)}`);
  return `training options:
  --engine tfjs|torch|auto   --backend auto|tensorflow|wasm|cpu
  --batch-size B (per rank)  --image-size S  --stem imagenet|cifar  --classes C
  --steps K | --epochs E     --log-steps L   --warmup-steps W
  --lr X  --optimizer adamw|sgd  --momentum M  --weight-decay D  --lr-warmup-steps N  --schedule constant|cosine|step
  --data synthetic|cifar100:DIR  --compile  --fp16  --bf16  --seed K  --freeze-bn  --sync-bn
  --checkpoint-dir DIR  --checkpoint-every N  --resume
defaults: ${defaults.join('  ')}`;
}

export async function runCommand({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  if (positionals.length) throw new UsageError(`run: unexpected argument ${JSON.stringify(positionals[0])} (options start with --; "cohort run --help" lists them)`);
  if (!values.local && values.profile === undefined) throw new UsageError('run: say where to run: --local (this machine), or --profile NAME ("cohort profiles list" shows them)');
  if (values.local && values.profile !== undefined && values.profile !== LOCAL_PROFILE_NAME) {
    throw new UsageError(`run: --local and --profile ${String(values.profile)} conflict: --local runs on this machine, --profile on that profile's hosts; give one`);
  }
  const local = !!values.local || values.profile === LOCAL_PROFILE_NAME;
  if (values.ranks !== undefined && !local) throw new UsageError('--ranks applies to --local; a cluster profile runs one rank per slot (edit the hosts\' slots)');
  const ranks = values.ranks === undefined ? 1 : Number(values.ranks);
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 64) throw new UsageError(`--ranks: expected a whole number from 1 to 64, got ${JSON.stringify(values.ranks)}`);
  const profile = local ? localProfile(ranks) : await loadProfile(io, values.profile as string, 'run');
  const config = trainConfigFromFlags(values, profile.defaults ?? {});

  const paths = resolvePaths(io.env);
  const store = new RunStore(join(paths.dataDir, 'runs'));
  const cluster = local ? undefined : makeCluster(io);
  const json = !!values.json;
  const printer = json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose, env: io.env });
  const t0 = Date.now();
  let started;
  try {
    printer.status?.(local ? `starting ${ranks} local rank(s)` : `connecting to ${profile.hosts.length} host(s) of ${profile.name}`);
    started = await startRun({
      profile,
      overrides: config,
      ranks,
      store,
      dataDir: paths.dataDir,
      ...(cluster ? { cluster } : {}),
      acceptNewHostKeys: !!values['accept-new-host-key'],
      ...(json ? {} : { onDeployProgress: printer.deploy ?? progressPrinter(io) }),
    });
  } catch (err) {
    cluster?.dispose();
    // --json promises a stream that always ends with `done`: a failure before the run exists (a
    // refused connection, a failed deploy) is an `error` event, then `done`, then the exit code.
    if (json) {
      const e = err as Error & { code?: string; hint?: string };
      const host = (e as { host?: string }).host ?? profile.hosts[0]?.name ?? profile.name;
      printer.event(makeEvent({ type: 'error', rank: -1, host, message: e.hint && !e.message.toLowerCase().includes(e.hint.toLowerCase()) ? `${e.message} (hint: ${e.hint})` : e.message, logTail: [], ...(typeof e.code === 'string' ? { code: e.code } : {}) }));
      printer.event(makeEvent({ type: 'done', status: 'failed', steps: 0, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: Date.now() - t0 }));
    }
    throw err;
  }
  const { runId, controller, recorder } = started;
  controller.onEvent((e) => printer.event(e));
  const onSignal = () => controller.cancel('interrupted (Ctrl-C)');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await controller.start();
    const result = await controller.result;
    printer.close?.();
    if (cluster) await reportLeftovers(cluster, profile, runId, io);
    if (!json) io.stderr.write(`run ${runId} recorded in ${recorder.dir}\n`);
    if (result.status === 'ok') return EXIT.ok;
    if (result.status === 'cancelled') return EXIT.cancelled;
    return result.error?.code?.startsWith('ssh-') ? EXIT.connection : EXIT.trainingFailed;
  } finally {
    printer.close?.();
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
