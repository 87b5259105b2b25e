// Entry of the trainer bundle deployed to hosts (resources/trainer/cohort-trainer.mjs):
//   node cohort-trainer.mjs agent   one per host per run; reads a LaunchSpec on stdin
//   node cohort-trainer.mjs rank    one data-parallel rank (started by the agent)
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAgent } from './agent/agent';
import { runRank } from './train/rank';

const here = dirname(fileURLToPath(import.meta.url));
const [cmd] = process.argv.slice(2);

async function main(): Promise<number> {
  switch (cmd) {
    case 'agent':
      return runAgent({ trainerEntry: fileURLToPath(import.meta.url), enginesDir: join(here, 'engines'), workdir: process.env.COHORT_WORKDIR ?? process.cwd() });
    case 'rank':
      process.env.COHORT_WASM_DIR ??= join(here, 'wasm');
      return runRank(process.env);
    default:
      process.stderr.write('usage: cohort-trainer.mjs agent|rank\n');
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
