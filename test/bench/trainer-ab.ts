// Trainer throughput side by side with an older commit: `cohort run --local` of this checkout and of BASE
// (checked out into a temporary git worktree, node_modules hard-linked, built), in interleaved rounds whose
// order alternates, so the machine's drift lands on both. Also checks that the weights sha256 of each
// configuration is the same for both (a fixed seed must give the same weights if training is unchanged).
//   npx tsx test/bench/trainer-ab.ts [--base REV] [--rounds N]
// The default base is b6569ea, the last commit before the round of issues 11-16 (architecture, durable runs,
// GPU truth, hardening, UX, Slurm): issue 11 asks that the trainer bench stay within noise of it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, countOption, machine, median, stringOption, writeResults } from './bench-util';

const base = stringOption('base', 'b6569ea');
const rounds = countOption('rounds', 4);
const CONFIGS = [
  { name: '32² 2 ranks, 30 steps', args: ['--ranks', '2', '--steps', '30', '--image-size', '32'] },
  { name: '64² 1 rank, 12 steps', args: ['--ranks', '1', '--steps', '12', '--image-size', '64'] },
];

interface Sample { round: number; side: 'base' | 'head'; config: string; samplesPerSec: number | null; weights: string | null; load: number }

/** A worktree of `rev` with this checkout's node_modules hard-linked, built; removed by the caller. */
function checkoutBase(rev: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-ab-'));
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', '--force', dir, rev], { stdio: 'ignore' });
  // Hard links, not a copy: node_modules is large and both sides only read it.
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')]);
  execFileSync(process.execPath, [join(dir, 'scripts', 'build.mjs')], { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** One `cohort run --local` from `root`; reads the median rate and the weights hash from its human `done:` line. */
function runOnce(root: string, args: string[]): { samplesPerSec: number | null; weights: string | null } {
  const config = mkdtempSync(join(tmpdir(), 'cohort-ab-cfg-'));
  try {
    const r = spawnSync(process.execPath, [join(root, 'bin', 'cohort.mjs'), 'run', '--local', ...args, '--batch-size', '16', '--seed', '7'], {
      cwd: root,
      env: { ...process.env, COHORT_CONFIG_DIR: config, COHORT_DATA_DIR: config },
      encoding: 'utf8',
    });
    // The `done:` line's wording changed after 04f6507 ("median X samples/s, weights sha256 H" then,
    // "median X samples/s — done: ok, N steps, weights sha256 H…" now): both numbers read on their own.
    const out = `${r.stdout}\n${r.stderr}`;
    const rate = /median ([\d.]+) samples\/s/.exec(out);
    const sha = /weights sha256 ([0-9a-f]+)/.exec(out);
    return rate && sha ? { samplesPerSec: Number(rate[1]), weights: sha[1] ?? null } : { samplesPerSec: null, weights: null };
  } finally {
    rmSync(config, { recursive: true, force: true });
  }
}

const baseDir = checkoutBase(base);
const samples: Sample[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const order: Array<'base' | 'head'> = round % 2 ? ['base', 'head'] : ['head', 'base'];
    for (const side of order) {
      for (const c of CONFIGS) {
        const s = { round, side, config: c.name, load: loadavg()[0] ?? 0, ...runOnce(side === 'base' ? baseDir : ROOT, c.args) };
        samples.push(s);
        console.log(`round ${round} ${side} ${c.name}: ${s.samplesPerSec ?? 'failed'} samples/s, weights ${s.weights ?? '-'}, load ${s.load.toFixed(2)}`);
      }
    }
  }
} finally {
  execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', baseDir], { stdio: 'ignore' });
  if (existsSync(baseDir)) rmSync(baseDir, { recursive: true, force: true });
}

const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const rows = CONFIGS.map((c) => {
  const of = (side: 'base' | 'head'): number[] => samples.filter((s) => s.config === c.name && s.side === side && s.samplesPerSec !== null).map((s) => s.samplesPerSec as number);
  const perRound = [...Array(rounds).keys()].map((i) => {
    const b = samples.find((s) => s.config === c.name && s.round === i + 1 && s.side === 'base')?.samplesPerSec;
    const h = samples.find((s) => s.config === c.name && s.round === i + 1 && s.side === 'head')?.samplesPerSec;
    return b && h ? h / b : null;
  }).filter((x): x is number => x !== null);
  const weights = new Set(samples.filter((s) => s.config === c.name).map((s) => s.weights));
  return { config: c.name, base: of('base'), head: of('head'), ratios: perRound, sameWeights: weights.size === 1 && !weights.has(null), weights: [...weights] };
});
const fmt = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(', ');
const md = [
  `### Trainer throughput, this checkout (${head}) side by side with ${base}`,
  '',
  `${rounds} interleaved rounds (order alternating), \`cohort run --local --batch-size 16 --seed 7\`; samples/s is each run's median log window.`,
  '',
  '| run | base median | head median | head ÷ base (median of per-round ratios) | per-round ratios | weights sha256 equal |',
  '|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.config} | ${median(r.base).toFixed(1)} (${fmt(r.base)}) | ${median(r.head).toFixed(1)} (${fmt(r.head)}) | ${r.ratios.length ? median(r.ratios).toFixed(2) : '-'} | ${r.ratios.map((x) => x.toFixed(2)).join(', ')} | ${r.sameWeights ? `yes (${r.weights[0]})` : `NO: ${r.weights.join(' vs ')}`} |`),
].join('\n');
writeResults('trainer-ab', { machine: machine(), base, head, samples, rows }, md);
if (rows.some((r) => !r.sameWeights)) process.exit(1);
