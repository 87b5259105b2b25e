// The device kit (scripts/device-kit.sh): its size by part, how long a build takes with the packed
// Node cached (the first build per Node version also fetches and compresses it: minutes, not
// measured here), and what the kit's first `cohort` costs on a fresh machine (Node unpacked by xz,
// or by Python's lzma where xz is missing) against a later one and the system node's.
//   npx tsx test/bench/device-kit.ts [--trials 3]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countOption, machine, median, ROOT, writeResults } from './bench-util';

const trials = countOption('trials', 3);
const work = mkdtempSync(join(tmpdir(), 'cohort-bench-kit-'));
const kit = join(work, 'kit');

const timed = (cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number => {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { cwd: ROOT, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return performance.now() - t0;
};
const bytes = (p: string): number => (statSync(p).isDirectory() ? readdirSync(p).reduce((s, f) => s + bytes(join(p, f)), 0) : statSync(p).size);

try {
  const build: number[] = [];
  for (let i = 0; i < trials; i++) build.push(timed('bash', ['scripts/device-kit.sh', '--no-build', kit]));
  const parts = ['node', 'resources', 'node_modules', 'dist', 'bench', 'scripts'].map((p) => [p, bytes(join(kit, p))] as const);
  const total = bytes(kit);
  const unpackXz: number[] = [];
  const unpackPy: number[] = [];
  const warm: number[] = [];
  const system: number[] = [];
  const cache = join(work, 'cache'); // where bin/node unpacks (XDG_CACHE_HOME), emptied for each first run
  const env = { ...process.env, XDG_CACHE_HOME: cache };
  for (let i = 0; i < trials; i++) {
    rmSync(cache, { recursive: true, force: true });
    unpackPy.push(timed(join(kit, 'bin', 'cohort'), ['--version'], { ...env, COHORT_KIT_UNPACK: 'python' }));
    rmSync(cache, { recursive: true, force: true });
    unpackXz.push(timed(join(kit, 'bin', 'cohort'), ['--version'], env));
    warm.push(timed(join(kit, 'bin', 'cohort'), ['--version'], env));
    system.push(timed(process.execPath, [join(ROOT, 'dist', 'cli.mjs'), '--version']));
  }
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const ms = (xs: number[]) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  writeResults(
    'device-kit',
    { machine: machine(), trials, bytes: total, parts: Object.fromEntries(parts), buildMs: build, unpackXzMs: unpackXz, unpackPythonMs: unpackPy, warmMs: warm, systemNodeMs: system },
    [
      '## Device kit (scripts/device-kit.sh)',
      '',
      `${mib(total)} in all (limit 60 MiB): ${parts.map(([p, b]) => `${p} ${mib(b)}`).join(', ')}. Medians (min–max) of ${trials} trials.`,
      '',
      '| What | Median |',
      '|---|---|',
      `| build, the packed Node cached (\`--no-build\`: dist/ and the bundle already built) | ${ms(build)} |`,
      `| first \`bin/cohort --version\`: Node unpacked by xz | ${ms(unpackXz)} |`,
      `| first \`bin/cohort --version\`: Node unpacked by Python's lzma | ${ms(unpackPy)} |`,
      `| later \`bin/cohort --version\` | ${ms(warm)} |`,
      `| the system node: \`node dist/cli.mjs --version\` | ${ms(system)} |`,
    ].join('\n'),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
