// Entry of the trainer bundle deployed to hosts (resources/trainer/cohort-trainer.mjs):
//   node cohort-trainer.mjs run-start           durable run: LaunchSpec line on stdin → detached agent
//   node cohort-trainer.mjs run-rejoin --run ID relaunch a lost follower host's agent (workdir kept)
//   node cohort-trainer.mjs run-follow --run ID [--offset BYTES]   stream the host's events.jsonl
//   node cohort-trainer.mjs run-stop --run ID [--reason TEXT] [--wait-ms N]
//   node cohort-trainer.mjs run-status [--run ID]
//   node cohort-trainer.mjs run-remove --run ID [--scheduler slurm]   remove an ended run's record here (cohort runs rm --hosts; a Slurm run's on the login node)
//   node cohort-trainer.mjs run-spec --run ID   the run's spec on this host, without env (a spare's start, issue 21)
//   node cohort-trainer.mjs agent-run --run ID  the detached agent itself (started by run-start)
//   node cohort-trainer.mjs slurm-submit        Slurm run: SlurmSubmit line on stdin → sbatch (login node)
//   node cohort-trainer.mjs agent-slurm --run ID   one node's agent inside the job's srun
//   node cohort-trainer.mjs rank                one data-parallel rank (started by an agent; its code is rank.cjs)
//   node cohort-trainer.mjs check-host|check-link|check-compute   `cohort check`'s short host commands
//   node cohort-trainer.mjs check-slurm | check-slurm-node --dir D   the same inside a short Slurm allocation
// The host commands run with cwd = the host's workdir, or COHORT_WORKDIR set.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostCommand, parseFlags } from './agent/host-cmd';
import { holdLifeline } from './train/lifeline';

// Each command's code is imported when that command runs: the bundle inlines them all, and esbuild
// defers a dynamically imported module's evaluation until then, so a short host command (check-*,
// run-status, run-follow) does not evaluate tfjs and the engine at every start (seconds on a busy
// host, paid once per command by `cohort check` and every run's host queries).
const here = dirname(fileURLToPath(import.meta.url));
const entry = fileURLToPath(import.meta.url);
const [cmd, ...rest] = process.argv.slice(2);
const workdir = process.env.COHORT_WORKDIR ?? process.cwd();
const enginesDir = join(here, 'engines');

async function main(): Promise<number> {
  switch (cmd) {
    case 'agent-run':
      return (await import('./agent/run-agent')).runDetachedAgent({ trainerEntry: entry, enginesDir, workdir, runId: parseFlags(rest, ['run'], 'agent-run').run ?? '' });
    case 'slurm-submit':
      return hostCommand(async () => (await import('./agent/slurm')).slurmSubmit({ trainerEntry: entry, workdir }));
    case 'agent-slurm':
      return (await import('./agent/slurm')).slurmNodeAgent({ trainerEntry: entry, enginesDir, workdir, argv: rest });
    case 'run-start':
      return hostCommand(async () => (await import('./agent/run-start')).runStart({ trainerEntry: entry, workdir, execArgv: process.execArgv }));
    case 'run-rejoin':
      return hostCommand(async () => (await import('./agent/run-start')).runRejoin(rest, { trainerEntry: entry, workdir, execArgv: process.execArgv }));
    case 'run-follow':
      return hostCommand(async () => (await import('./agent/run-follow')).runFollow(rest, workdir));
    case 'run-stop':
      return hostCommand(async () => (await import('./agent/run-stop')).runStop(rest, workdir));
    case 'run-status':
      return hostCommand(async () => (await import('./agent/run-status')).runStatus(rest, workdir));
    case 'run-remove':
      return hostCommand(async () => (await import('./agent/run-remove')).runRemove(rest, workdir));
    case 'run-spec':
      return hostCommand(async () => (await import('./agent/run-spec')).runSpec(rest, workdir));
    case 'check-host':
      return hostCommand(async () => (await import('./agent/check-host')).checkHost(rest, { trainerEntry: entry, enginesDir, workdir }));
    case 'check-link':
      return hostCommand(async () => (await import('./agent/check-link')).checkLink(rest));
    case 'check-slurm':
      return hostCommand(async () => (await import('./agent/check-slurm')).checkSlurm(rest, { trainerEntry: entry, workdir }));
    case 'check-slurm-node':
      return (await import('./agent/check-slurm')).checkSlurmNode(rest, { trainerEntry: entry });
    case 'check-compute':
      process.env.COHORT_WASM_DIR ??= join(here, 'wasm');
      return hostCommand(async () => (await import('./agent/check-compute')).checkCompute(rest, { trainerEntry: entry, enginesDir, workdir }));
    case 'rank':
      process.env.COHORT_WASM_DIR ??= join(here, 'wasm');
      holdLifeline(process.env);
      // Bundled apart as CommonJS (rank.cjs, scripts/build.mjs) and compiled with V8's code cache
      // (util/code-cache.ts says why); not imported here, so the ESM chunks carry no copy of it.
      return (await import('./util/code-cache')).requireWithCodeCache<typeof import('./train/rank')>(join(here, 'rank.cjs')).exports.runRank(process.env);
    default:
      process.stderr.write('usage: cohort-trainer.mjs run-start|run-rejoin|run-follow|run-stop|run-status|run-remove|run-spec|slurm-submit|agent-run|agent-slurm|rank|check-host|check-link|check-compute|check-slurm|check-slurm-node\n');
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`cohort-trainer: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
