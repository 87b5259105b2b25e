// Entry of the trainer bundle deployed to hosts (resources/trainer/cohort-trainer.mjs):
//   node cohort-trainer.mjs run-start           durable run: LaunchSpec line on stdin → detached agent
//   node cohort-trainer.mjs run-rejoin --run ID relaunch a lost follower host's agent (workdir kept)
//   node cohort-trainer.mjs run-follow --run ID [--offset BYTES]   stream the host's events.jsonl
//   node cohort-trainer.mjs run-stop --run ID [--reason TEXT] [--wait-ms N]
//   node cohort-trainer.mjs run-status [--run ID]
//   node cohort-trainer.mjs run-spec --run ID   the run's spec on this host, without env (a spare's start, issue 21)
//   node cohort-trainer.mjs agent-run --run ID  the detached agent itself (started by run-start)
//   node cohort-trainer.mjs slurm-submit        Slurm run: SlurmSubmit line on stdin → sbatch (login node)
//   node cohort-trainer.mjs agent-slurm --run ID   one node's agent inside the job's srun
//   node cohort-trainer.mjs rank                one data-parallel rank (started by an agent)
//   node cohort-trainer.mjs check-host|check-link|check-compute   `cohort check`'s short host commands
//   node cohort-trainer.mjs check-slurm | check-slurm-node --dir D   the same inside a short Slurm allocation
// The host commands run with cwd = the host's workdir, or COHORT_WORKDIR set.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkCompute } from './agent/check-compute';
import { checkHost } from './agent/check-host';
import { checkLink } from './agent/check-link';
import { checkSlurm, checkSlurmNode } from './agent/check-slurm';
import { hostCommand, parseFlags } from './agent/host-cmd';
import { runDetachedAgent } from './agent/run-agent';
import { runFollow } from './agent/run-follow';
import { runRejoin, runStart } from './agent/run-start';
import { runSpec } from './agent/run-spec';
import { runStatus } from './agent/run-status';
import { runStop } from './agent/run-stop';
import { slurmNodeAgent, slurmSubmit } from './agent/slurm';
import { holdLifeline } from './train/lifeline';
import { runRank } from './train/rank';

const here = dirname(fileURLToPath(import.meta.url));
const entry = fileURLToPath(import.meta.url);
const [cmd, ...rest] = process.argv.slice(2);
const workdir = process.env.COHORT_WORKDIR ?? process.cwd();
const enginesDir = join(here, 'engines');

async function main(): Promise<number> {
  switch (cmd) {
    case 'agent-run':
      return runDetachedAgent({ trainerEntry: entry, enginesDir, workdir, runId: parseFlags(rest, ['run'], 'agent-run').run ?? '' });
    case 'slurm-submit':
      return hostCommand(() => slurmSubmit({ trainerEntry: entry, workdir }));
    case 'agent-slurm':
      return slurmNodeAgent({ trainerEntry: entry, enginesDir, workdir, argv: rest });
    case 'run-start':
      return hostCommand(() => runStart({ trainerEntry: entry, workdir, execArgv: process.execArgv }));
    case 'run-rejoin':
      return hostCommand(() => runRejoin(rest, { trainerEntry: entry, workdir, execArgv: process.execArgv }));
    case 'run-follow':
      return hostCommand(() => runFollow(rest, workdir));
    case 'run-stop':
      return hostCommand(() => runStop(rest, workdir));
    case 'run-status':
      return hostCommand(() => runStatus(rest, workdir));
    case 'run-spec':
      return hostCommand(() => runSpec(rest, workdir));
    case 'check-host':
      return hostCommand(() => checkHost(rest, { trainerEntry: entry, enginesDir, workdir }));
    case 'check-link':
      return hostCommand(() => checkLink(rest));
    case 'check-slurm':
      return hostCommand(() => checkSlurm(rest, { trainerEntry: entry, workdir }));
    case 'check-slurm-node':
      return checkSlurmNode(rest, { trainerEntry: entry });
    case 'check-compute':
      process.env.COHORT_WASM_DIR ??= join(here, 'wasm');
      return hostCommand(() => checkCompute(rest, { trainerEntry: entry, enginesDir, workdir }));
    case 'rank':
      process.env.COHORT_WASM_DIR ??= join(here, 'wasm');
      holdLifeline(process.env);
      return runRank(process.env);
    default:
      process.stderr.write('usage: cohort-trainer.mjs run-start|run-rejoin|run-follow|run-stop|run-status|run-spec|slurm-submit|agent-run|agent-slurm|rank|check-host|check-link|check-compute|check-slurm|check-slurm-node\n');
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
