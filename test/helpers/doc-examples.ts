// The README's and every `--help`'s examples (issue 22, "Proof": each run as a new user types it),
// found once for the files that run them: test/cluster/doc-examples.test.ts runs them on 2 sshd hosts
// (profile `lab`); the ones that name the Slurm profile `hpc` (its login node, its sbatch job) run
// as typed in test/slurm/slurm-run.test.ts against that file's real Slurm cluster (a second Slurm
// cluster in doc-examples would cost its start), and doc-examples lists them as run there.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS } from '../../electron/cli/commands';
import { allCommands } from '../../electron/cli/command-spec';
import { COHORT, ROOT } from './cli';
import { TINY_DEPTH, TINY_WIDTH } from './tiny';

export interface Example {
  text: string;
  from: string;
}

/** `cohort …` commands of README.md's fenced code blocks (continuations joined, comments dropped). */
function readmeExamples(): Example[] {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n');
  const out: Example[] = [];
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*```/.test(lines[i]!)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) continue;
    const at = i + 1;
    let line = lines[i]!;
    while (line.endsWith('\\') && i + 1 < lines.length) line = line.slice(0, -1) + lines[++i]!.trim();
    for (const part of line.split('&&').map((p) => p.replace(/\s+#.*$/, '').trim())) {
      const cmd = part.replace(/^[A-Z_]+=\S+\s+/, '');
      if (/^(node bin\/cohort\.mjs|cohort) /.test(cmd) || cmd.startsWith('npm ') || cmd.startsWith('npx ')) out.push({ text: cmd, from: `README.md:${at}` });
    }
  }
  return out;
}

const helpExamples = (): Example[] => allCommands(COMMANDS).flatMap((c) => (c.examples ?? []).map((text) => ({ text, from: `cohort ${c.name} --help` })));

/** Every example of the README and the `--help` texts, each text once (the first place it appears). */
export function docExamples(): Example[] {
  const seen = new Set<string>();
  return [...readmeExamples(), ...helpExamples()].filter((e) => !seen.has(e.text) && seen.add(e.text));
}

/**
 * The examples that need a Slurm cluster: those naming the profile `hpc` other than the one that
 * saves it (`profiles add-slurm hpc …` only writes a file). test/slurm/slurm-run.test.ts runs them.
 */
export const needsSlurm = (text: string): boolean => /(^|\s)(--profile\s+)?hpc(\s|$)/.test(text) && !/^cohort profiles add-slurm /.test(text);

/** Where the Slurm examples run (doc-examples' list points there). */
export const SLURM_EXAMPLES_FILE = 'test/slurm/slurm-run.test.ts';

/**
 * What a user types for an example: `node bin/cohort.mjs` as `cohort` (the same program), run ids
 * of the docs as ids that exist, a training example's `--steps N` as `--steps 2` (its length is
 * not what is checked: its flags, profile and output are), and a local training example that names
 * no `--width` (`cohort run --local …`, `cohort check local …`) at the tiny run's width and depth (TINY_WIDTH, TINY_DEPTH,
 * the model's size is not what is checked either; every flag it types is kept). Why (issue 25): at
 * full width the four local run examples and `check local` took ~150 s of this file's ~250 s, one
 * after another (ci33: the `--stem cifar` one alone 58 s for 2 steps). The `lab` examples train at
 * the profile's defaults (the tiny run) already; the README's own run is trained at full width, its
 * weights pinned, in test/local/local-run.test.ts.
 */
export function asTyped(example: string, run1: string, run2: string): string {
  const ids: [RegExp, string][] = [
    [/\bRUN\.\.\./g, run1],
    [/\b20261123-091200-ab12\b/g, run1],
    [/\b20261123-0930\b/g, run2],
    [/\b20261123-0912\b/g, run1],
    [/\bRUN1\b/g, run1],
    [/\bRUN2\b/g, run2],
    [/\bRUN\b/g, run1],
    [/^cohort runs export A B (.*)--baseline A\b/, `cohort runs export ${run1} ${run2} $1--baseline ${run1}`],
  ];
  let s = example.replace(/^node bin\/cohort\.mjs /, 'cohort ');
  for (const [re, to] of ids) s = s.replace(re, to);
  if (/^cohort run /.test(s)) s = s.replace(/--steps \d+/, '--steps 2');
  if (!/--width\b/.test(s)) {
    if (/^cohort run (.* )?--local\b/.test(s)) s = s.replace(/^cohort run /, `cohort run --width ${TINY_WIDTH} --depth ${TINY_DEPTH} `);
    else if (/^cohort check local\b/.test(s)) s = s.replace(/^cohort check local\b/, `cohort check local --width ${TINY_WIDTH} --depth ${TINY_DEPTH}`);
  }
  return s;
}

/** A directory holding `bin/cohort` (what `npm link` gives a user), for PATH. */
export function cohortOnPath(base: string): string {
  const bin = join(base, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'cohort'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(COHORT)} "$@"\n`);
  chmodSync(join(bin, 'cohort'), 0o755);
  return bin;
}

/** Runs one typed line in bash (`set -o pipefail`) with `bin` first on PATH; its exit code and stdout+stderr. */
export function typeInBash(cmd: string, o: { cwd: string; env: NodeJS.ProcessEnv; bin: string }): Promise<{ code: number | null; out: string }> {
  const child = spawn('bash', ['-c', `set -o pipefail; ${cmd}`], { cwd: o.cwd, env: { ...process.env, ...o.env, PATH: `${o.bin}:${process.env.PATH}`, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}
