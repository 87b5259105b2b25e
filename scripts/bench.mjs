// `npm run bench [-- name ... [--option value ...]]`: runs the benchmark scripts in test/bench one after another
// (never in parallel: these machines are noisy enough) and collects bench/results/*.md into
// bench/results/README.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const all = ['trainer', 'tfjs-step', 'gemm', 'winograd', 'allreduce', 'reduce-kernel', 'torch-engine', 'cluster', 'slurm', 'dashboard', 'host-record', 'attach', 'restart', 'bundle-check', 'trainer-ab', 'per-rank', 'check', 'device-kit', 'system-metrics', 'checkpoint-resume'];
// Bench names first, then options for the scripts: `npm run bench -- allreduce --rounds 5`.
const args = process.argv.slice(2);
const firstFlag = args.findIndex((a) => a.startsWith('-'));
const picked = firstFlag < 0 ? args : args.slice(0, firstFlag);
const flags = firstFlag < 0 ? [] : args.slice(firstFlag);
const names = picked.length ? picked : all;
spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { stdio: 'inherit' });
let failed = 0;
for (const name of names) {
  const file = join(root, 'test', 'bench', `${name}.ts`);
  if (!existsSync(file)) {
    console.log(`bench ${name}: missing (${file})`);
    continue;
  }
  console.log(`\n== bench ${name}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...flags], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) failed++;
}
const parts = all.map((n) => join(root, 'bench', 'results', `${n}.md`)).filter(existsSync).map((p) => readFileSync(p, 'utf8'));
writeFileSync(join(root, 'bench', 'results', 'README.md'), `# Benchmark results\n\nWritten by \`npm run bench\` on ${new Date().toISOString()}.\n\n${parts.join('\n')}`);
process.exit(failed ? 1 : 0);
