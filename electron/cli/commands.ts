// The one table of `cohort` commands: name, summary, usage, options (with defaults), examples and
// handler. `--help` at every level, unknown command / flag errors and the --help test all read it;
// a new command is one entry here (and its handler).
import type { CommandSpec, OptionSpec } from './command-spec';
import { deployCommand, probeCommand, provisionCommand } from './commands/cluster';
import { profilesAdd, profilesAddSlurm, profilesExport, profilesImport, profilesImportSshConfig, profilesList, profilesRm, profilesShow } from './commands/profiles';
import { attachCommand } from './commands/attach';
import { checkCommand } from './commands/check';
import { runCommand } from './commands/run';
import { runsCommand, stopCommand } from './commands/runs';
import { serveCommand } from './commands/serve';
import { trainFlagOptions, trainFlagUsage } from './train-flags';

const json: OptionSpec = { type: 'boolean', help: 'machine-readable JSON on stdout' };
const acceptNewHostKey: OptionSpec = { type: 'boolean', help: 'trust a host key seen for the first time and add it to known_hosts (a changed key is still refused)' };
const force: OptionSpec = { type: 'boolean', help: 'overwrite a profile of the same name' };
const hostFields: Record<string, OptionSpec> = {
  slots: { type: 'string', arg: 'N', help: 'ranks per host', default: '1' },
  gpus: { type: 'string', arg: 'LIST', help: 'GPU indices per host, e.g. 0,1 (one rank per GPU)' },
  'identity-file': { type: 'string', arg: 'KEY', help: 'private key file (else ssh-agent)' },
  'proxy-jump': { type: 'string', arg: 'HOST', help: 'reach the hosts through this jump host, as ssh -J' },
  workdir: { type: 'string', arg: 'DIR', help: 'working directory on each host', default: '~/.cohort' },
};

/** `run`'s training flags: parsed from train-flags.ts (the run-config table), listed by runTrainingHelp. */
function trainingOptions(): Record<string, OptionSpec> {
  return Object.fromEntries(Object.entries(trainFlagOptions()).map(([name, o]) => [name, { type: o.type, help: '', listed: false }]));
}

export const COMMANDS: CommandSpec[] = [
  {
    name: 'run',
    summary: 'train ResNet-50 data-parallel, on this machine (--local) or on a profile\'s hosts',
    usage: ['--local [--ranks N] [training options] [--json] [--detach]', '--profile NAME [training options] [--accept-new-host-key] [--json] [--detach]'],
    maxPositionals: 0,
    options: {
      local: { type: 'boolean', help: 'run on this machine (no SSH)' },
      profile: { type: 'string', arg: 'NAME', help: 'run on the hosts of this saved profile ("local" = --local)' },
      ranks: { type: 'string', arg: 'N', help: 'ranks with --local', default: '1' },
      json: { type: 'boolean', help: 'events only, one JSON object per line on stdout; always ends with a `done` event' },
      verbose: { type: 'boolean', help: "every rank's log lines (else rank 0's)" },
      'per-rank': { type: 'boolean', help: "one line per rank every step window: its step time split into data, compute, waiting for peers, exchange and optimizer; the slowest rank marked" },
      system: { type: 'boolean', help: "one line per host every step window: CPU % of the host and of the run's ranks, load average, network MB/s in and out, memory, GPU utilisation" },
      detach: { type: 'boolean', help: 'start the run and return at once, printing its id; "cohort attach RUN" follows it, "cohort stop RUN" stops it' },
      'max-restarts': { type: 'string', arg: 'N', help: 'after a rank or host failure, restart every rank from the last checkpoint, at most N times', default: '0' },
      check: { type: 'boolean', help: 'run `cohort check` on the profile first (on stderr) and refuse to start when it finds an error' },
      'no-queue': { type: 'boolean', help: 'fail at once (slots-busy) when the GPU slots are busy with another run, instead of waiting behind it' },
      name: { type: 'string', arg: 'NAME', help: 'a name for the run (runs list, History; "cohort runs rename" changes it)' },
      tag: { type: 'string', arg: 'TAG', help: 'a tag for the run; repeat for several (--tag fp16 --tag baseline)' },
      notes: { type: 'string', arg: 'TEXT', help: 'notes kept with the run (runs show, History)' },
      'accept-new-host-key': acceptNewHostKey,
      ...trainingOptions(),
    },
    more: () => `training options (a profile's defaults apply under them; exactly one of --steps/--epochs is > 0):\n${trainFlagUsage()}`,
    examples: [
      'cohort run --local --ranks 2 --steps 50 --image-size 32 --stem cifar',
      'cohort run --profile lab --batch-size 32 --epochs 1 --data cifar100:~/data/cifar-100-binary',
      'cohort run --local --steps 20 --json | jq -c \'select(.type=="step")\'',
      'cohort run --local --steps 20 --name "bs 16 baseline" --tag baseline --tag cpu --notes "before the kernel change"',
    ],
    runArgs: runCommand,
  },
  {
    name: 'profiles',
    summary: 'saved cluster profiles (hosts, users, keys): list, show, add, rm, import, export, import-ssh-config',
    usage: ['COMMAND [options]'],
    examples: ['cohort profiles add lab alice@10.0.0.5 alice@10.0.0.6 --slots 2', 'cohort profiles list'],
    subcommands: [
      { name: 'profiles list', summary: 'the saved profiles (and the built-in "local")', usage: ['[--json]'], maxPositionals: 0, options: { json }, examples: ['cohort profiles list --json'], run: profilesList },
      { name: 'profiles show', summary: 'one profile as JSON', usage: ['NAME'], maxPositionals: 1, examples: ['cohort profiles show lab'], run: profilesShow },
      {
        name: 'profiles add',
        summary: 'save a profile from SSH targets',
        usage: ['NAME [USER@]ADDRESS[:PORT]... [options]'],
        options: { ...hostFields, 'master-addr': { type: 'string', arg: 'ADDR', help: "rank 0's address as the other hosts reach it", default: "the first host's address" }, force },
        examples: ['cohort profiles add lab alice@10.0.0.5 alice@10.0.0.6:2222 --slots 2 --identity-file ~/.ssh/id_ed25519'],
        run: profilesAdd,
      },
      {
        name: 'profiles add-slurm',
        summary: 'save a Slurm profile: runs go through sbatch on the cluster, reached through its login node',
        usage: ['NAME [USER@]LOGIN[:PORT] [--partition P] [--nodes N] [--tasks-per-node T] [options]'],
        maxPositionals: 2,
        options: {
          partition: { type: 'string', arg: 'P', help: 'sbatch --partition', default: "the cluster's default partition" },
          nodes: { type: 'string', arg: 'N', help: 'compute nodes (one Cohort agent each)', default: '1' },
          'tasks-per-node': { type: 'string', arg: 'T', help: 'ranks per node (one per GPU)', default: '1' },
          'gpus-per-node': { type: 'string', arg: 'G', help: 'sbatch --gpus-per-node' },
          time: { type: 'string', arg: 'LIMIT', help: "sbatch --time, Slurm's format (e.g. 02:00:00)", default: "the partition's default" },
          account: { type: 'string', arg: 'ACCOUNT', help: 'sbatch --account' },
          'extra-args': { type: 'string', arg: "'ARGS'", help: 'more sbatch options, space-separated, written with = since they start with a dash: --extra-args="--constraint=a100 --qos=high"' },
          'identity-file': hostFields['identity-file']!,
          'proxy-jump': { type: 'string', arg: 'HOST', help: 'reach the login node through this jump host, as ssh -J' },
          workdir: { type: 'string', arg: 'DIR', help: 'working directory on a filesystem the compute nodes see (probe checks)', default: '~/.cohort' },
          force,
        },
        examples: ['cohort profiles add-slurm hpc me@login.example.org --partition gpu --nodes 2 --tasks-per-node 4 --gpus-per-node 4 --time 02:00:00 --workdir /scratch/me/cohort'],
        run: profilesAddSlurm,
      },
      { name: 'profiles rm', summary: 'delete a profile', usage: ['NAME'], maxPositionals: 1, examples: ['cohort profiles rm lab'], run: profilesRm },
      {
        name: 'profiles import',
        summary: 'save a profile from a JSON file (as written by export)',
        usage: ['FILE [--name NEW] [--force]'],
        maxPositionals: 1,
        options: { name: { type: 'string', arg: 'NEW', help: 'save it under this name' }, force },
        examples: ['cohort profiles import lab.json --name lab2'],
        run: profilesImport,
      },
      {
        name: 'profiles export',
        summary: 'a profile as JSON (stdout, or a file)',
        usage: ['NAME [--out FILE]'],
        maxPositionals: 1,
        options: { out: { type: 'string', arg: 'FILE', help: 'write to FILE instead of stdout' } },
        examples: ['cohort profiles export lab --out lab.json'],
        run: profilesExport,
      },
      {
        name: 'profiles import-ssh-config',
        summary: 'save a profile from the hosts in ~/.ssh/config',
        usage: ['NAME [--hosts ALIAS,...] [options]'],
        maxPositionals: 1,
        options: { hosts: { type: 'string', arg: 'ALIAS,...', help: 'only these Host aliases', default: 'every concrete Host' }, ...hostFields, force },
        examples: ['cohort profiles import-ssh-config lab --hosts gpu1,gpu2 --slots 4'],
        run: profilesImportSshConfig,
      },
    ],
  },
  {
    name: 'probe',
    summary: 'what each host offers: OS, cores, memory, Node, GPUs, TensorFlow bindings, PyTorch ("local" = this machine)',
    usage: ['PROFILE [--json] [--accept-new-host-key]'],
    maxPositionals: 1,
    options: { json, 'accept-new-host-key': acceptNewHostKey },
    examples: ['cohort probe local', 'cohort probe lab --json'],
    run: probeCommand,
  },
  {
    name: 'check',
    summary: 'the cluster doctor: hosts, versions, GPU health, links between the hosts, and a prediction of the planned run\'s step time and scaling ("local" = this machine)',
    usage: ['PROFILE [--json] [--accept-new-host-key] [--no-compute] [training options]'],
    maxPositionals: 1,
    options: {
      json,
      'accept-new-host-key': acceptNewHostKey,
      'no-compute': { type: 'boolean', help: "skip the one-rank measurement when History has none (no prediction then)" },
      ...trainingOptions(),
    },
    more: () => `training options (the run to predict; the profile's defaults apply under them):\n${trainFlagUsage()}\nexit: 0 nothing would make a run fail (warnings allowed), 1 something would, 2 usage`,
    examples: ['cohort check lab', 'cohort check lab --batch-size 64 --fp16 --json | jq .prediction', 'cohort check local'],
    run: checkCommand,
  },
  {
    name: 'deploy',
    summary: 'upload the trainer bundle to every host (skipped where a verified copy of the same bundle is already there)',
    usage: ['PROFILE [--force] [--json] [--accept-new-host-key]'],
    maxPositionals: 1,
    options: { json, 'accept-new-host-key': acceptNewHostKey, force: { type: 'boolean', help: 'upload the bundle again even when the host has a verified copy' } },
    examples: ['cohort deploy lab', 'cohort deploy lab --force'],
    run: deployCommand,
  },
  {
    name: 'provision',
    summary: "install @tensorflow/tfjs-node(-gpu) into each host's workdir (needs the hosts' network)",
    usage: ['PROFILE [--cpu] [--accept-new-host-key]'],
    maxPositionals: 1,
    options: { cpu: { type: 'boolean', help: 'install tfjs-node even where GPUs were found' }, 'accept-new-host-key': acceptNewHostKey },
    examples: ['cohort provision lab'],
    run: provisionCommand,
  },
  {
    name: 'runs',
    summary: 'run history: list, show, rename, rm, export',
    usage: ['COMMAND [options]'],
    examples: ['cohort runs list', 'cohort runs export --match 2026 --format summary'],
    subcommands: [
      { name: 'runs list', summary: 'every recorded run, newest first (cancelled and failed ones with what they measured)', usage: ['[--json] [--search WORDS] [--status S] [--engine E] [--profile P] [--tag T]'],
        maxPositionals: 0,
        options: {
          json,
          search: { type: 'string', help: 'only runs with every word in their name, id, tags, notes or profile (as History\'s search)' },
          status: { type: 'string', help: 'only runs in this state (ok, failed, cancelled, lost, running...)' },
          engine: { type: 'string', help: 'only runs whose engine (as it ran) is this: tfjs or torch' },
          profile: { type: 'string', help: 'only runs of this profile' },
          tag: { type: 'string', help: 'only runs with this tag' },
        },
        examples: ['cohort runs list | head -5', 'cohort runs list --status failed --tag nightly'], runArgs: (a, io) => runsCommand(['list', ...a], io) },
      { name: 'runs show', summary: "one run's summary (RUN: its id or a unique prefix)", usage: ['RUN [--json]'], maxPositionals: 1, options: { json: { type: 'boolean', help: 'the run record and every event as JSON' } }, examples: ['cohort runs show 20261123-0912'], runArgs: (a, io) => runsCommand(['show', ...a], io) },
      { name: 'runs rm', summary: "delete ended runs from the local history (RUN: an id or a prefix only it has); the hosts' records stay unless --hosts", usage: ['RUN... [--hosts [--yes]]'],
        options: {
          hosts: { type: 'boolean', help: "also remove each run's record on its hosts (events, logs, checkpoints under the workdir); each host says what it removed or why not" },
          yes: { type: 'boolean', help: 'with --hosts: delete the local record even when a host kept its own (not reached); without it you are asked, or (no terminal) it is kept' },
        },
        examples: ['cohort runs rm 20261123-091200-ab12 20261123-0930', 'cohort runs rm 20261123-0912 --hosts'], runArgs: (a, io) => runsCommand(['rm', ...a], io) },
      { name: 'runs rename', summary: 'name a run (shown in History, lists and exports); an empty NAME clears it', usage: ['RUN NAME'], maxPositionals: 2, examples: ['cohort runs rename 20261123-0912 "fp16 + channels-last"'], runArgs: (a, io) => runsCommand(['rename', ...a], io) },
      {
        name: 'runs export',
        summary: 'runs as CSV (one row per step), a summary CSV or JSON (one row per run: measurements, spread, speedup over the baseline) or raw JSON lines',
        usage: ['[RUN...] [--match PREFIX] [--format csv|summary|json|jsonl] [--baseline RUN]'],
        options: {
          match: { type: 'string', arg: 'PREFIX', help: 'also every run whose id starts with PREFIX, oldest first (a RUN must name one run: a prefix several runs share is refused)' },
          format: { type: 'string', arg: 'csv|summary|json|jsonl', help: 'what to write', default: 'csv' },
          baseline: { type: 'string', arg: 'RUN', help: 'the run speedups are measured against (summary, json)', default: 'the first RUN' },
        },
        examples: ['cohort runs export RUN1 RUN2 --format summary > compare.csv', 'cohort runs export --match "$(date -u +%Y%m%d)" --format summary', 'cohort runs export RUN1 RUN2 --format json --baseline RUN1 | jq \'.runs[].speedupVsBaselinePct\''],
        runArgs: (a, io) => runsCommand(['export', ...a], io),
      },
    ],
  },
  {
    name: 'attach',
    summary: "follow a run from any terminal, from the start of its record; exits with the run's exit code (Ctrl-C detaches)",
    usage: ['RUN [--json] [--verbose] [--per-rank] [--system]'],
    maxPositionals: 1,
    options: { json: { type: 'boolean', help: 'events only, one JSON object per line' }, verbose: { type: 'boolean', help: "every rank's log lines" }, 'per-rank': { type: 'boolean', help: 'one line per rank every step window (phases, slowest rank marked)' }, system: { type: 'boolean', help: 'one line per host every step window (CPU, load, network, memory, GPU)' } },
    examples: ['cohort attach 20261123-0912'],
    runArgs: attachCommand,
  },
  {
    name: 'stop',
    summary: 'stop a run on every host, from any terminal',
    usage: ['RUN'],
    maxPositionals: 1,
    examples: ['cohort stop 20261123-0912'],
    runArgs: stopCommand,
  },
  {
    name: 'serve',
    summary: 'the dashboard in a browser: loopback, with a per-launch token in the printed URL',
    usage: ['[--port N] [--host ADDR]'],
    maxPositionals: 0,
    options: {
      port: { type: 'string', arg: 'N', help: 'listen on port N', default: 'a free port' },
      host: { type: 'string', arg: 'ADDR', help: 'listen on ADDR; a non-loopback address exposes the dashboard to your network, protected only by the token', default: '127.0.0.1' },
    },
    examples: ['cohort serve', 'cohort serve --host 0.0.0.0 --port 8080'],
    run: (p, io) => serveCommand(p, io),
  },
];
