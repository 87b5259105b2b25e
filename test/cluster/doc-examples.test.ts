// A scripted pass of the README's and every `--help`'s examples, as a new user types them (issue 22,
// "Proof"): every `cohort …` line of README.md's code blocks and every command's `examples` (the
// table `--help` prints) runs in bash, pipes and redirections included (`set -o pipefail`), against
// a private config/data dir whose `lab` profile is 2 real sshd hosts, and must exit 0. A new example
// runs by itself; one that cannot run here must be listed in SKIPPED with its reason, and one that
// names a placeholder (RUN, A, B, a run id of the docs) in AS_TYPED with what a user types instead.
// Each example gets a fresh copy of the state (so `profiles rm lab` or `runs rm` never changes the
// next one's world) in a fresh working directory holding lab.json, with a HOME holding
// ~/.ssh/config (gpu1, gpu2) and ~/.ssh/id_ed25519. An unquoted glob character fails too (zsh, the
// macOS shell, refuses a glob that matches nothing).
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../electron/cli/commands';
import { allCommands } from '../../electron/cli/command-spec';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { COHORT, ROOT } from '../helpers/cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { tinyRun } from '../helpers/tiny';

/** Examples that cannot run here, each with why (exact text as extracted). */
const SKIPPED: Record<string, string> = {
  'npm install': 'installs packages from the registry (this checkout is installed already)',
  'npm test': 'the whole test suite (this file is part of it)',
  'cohort run --profile lab --batch-size 64 --image-size 224 --steps 500 --name "bs64 224px" --tag baseline': 'ResNet-50 at 224 px, batch 64: a GPU cluster\'s run; on these CPU sshd hosts tfjs-wasm would take hours (the same flags at a small size: the other run examples)',
  'cohort run --profile lab --batch-size 32 --epochs 1 --data cifar100:~/data/cifar-100-binary': 'needs the CIFAR-100 binary files under ~/data on the hosts (no download here); --data is covered by the trainer tests',
  'cohort provision lab': 'installs @tensorflow/tfjs-node(-gpu) on the hosts from the npm registry: no network beyond the test hosts',
  'cohort check lab': "measures compute on both hosts at the default run settings: minutes on these shared CPU hosts; `cohort check` on sshd hosts is test/cluster/check.test.ts (`cohort check local` runs here)",
  'cohort check lab --batch-size 64': 'as "cohort check lab", at batch 64',
  'cohort check lab --batch-size 64 --fp16 --json | jq .prediction': 'as "cohort check lab", at batch 64',
  'cohort probe hpc': 'a Slurm login node (test/slurm covers Slurm profiles against a real Slurm cluster)',
  'cohort run --profile hpc --steps 500': 'a Slurm cluster (test/slurm)',
};

/** run ids in the docs and what a user types instead (the runs this file records first); steps cut short. */
function asTyped(example: string, run1: string, run2: string): string {
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
  let s = example.replace(/^node bin\/cohort\.mjs /, 'cohort '); // the same program (`npm link`'s cohort), from any directory
  for (const [re, to] of ids) s = s.replace(re, to);
  // A training example's length is not what is checked (its flags, profile and output are): 2 steps.
  if (/^cohort run /.test(s)) s = s.replace(/--steps \d+/, '--steps 2');
  return s;
}

interface Example {
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

/** The command without its quoted words (what the shell itself reads). */
const unquoted = (s: string) => s.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, '');
/** A usage synopsis (`[--json]`, `NAME`, `...`), not an example to type. */
const isSynopsis = (s: string) => /\[[^\]]+\]|\s\.\.\.(\s|$)|\b(PROFILE|NAME)\b/.test(unquoted(s));
/** Examples that need no profile (they make one); the others start with the `lab` profile saved. */
const makesProfile = (s: string) => /^cohort profiles (add|add-slurm|import|import-ssh-config) /.test(s);
/** Destructive ones last (they run in copies, but stop/rm touch the hosts' shared record). */
const order = (s: string) => (/^cohort (runs rm|stop) /.test(s) ? 1 : 0);

const fx = useCohortCluster(2, { enabled: !SSHD_MISSING, profiles: { lab: [0, 1] }, deploy: 'lab' });
let base = '';
let run1 = '';
let run2 = '';

beforeAll(async () => {
  if (SSHD_MISSING) return;
  base = mkdtempSync(join(tmpdir(), 'cohort-doc-examples-'));
  // Two ended runs on lab, for the examples that name a run.
  for (const i of [1, 2]) {
    const r = fx().cli(['run', '--profile', 'lab', ...tinyRun(), '--steps', '1', '--detach']);
    expect((await r.exit).code, r.stderr).toBe(0);
    const a = fx().cli(['attach', r.stdout.trim()]);
    expect((await a.exit).code, a.stderr).toBe(0);
    if (i === 1) run1 = r.stdout.trim();
    else run2 = r.stdout.trim();
  }
  const bin = join(base, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'cohort'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(COHORT)} "$@"\n`);
  chmodSync(join(bin, 'cohort'), 0o755);
  const home = join(base, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
  copyFileSync(fx().cluster.clientKeyPath, join(home, '.ssh', 'id_ed25519'));
  // A new user's ~/.ssh/config with the two aliases the import examples name (never connected to).
  writeFileSync(join(home, '.ssh', 'config'), 'Host gpu1\n  HostName 10.0.0.21\n  User me\nHost gpu2\n  HostName 10.0.0.22\n  User me\n');
  const exported = fx().cli(['profiles', 'show', 'lab']);
  expect((await exported.exit).code, exported.stderr).toBe(0);
  writeFileSync(join(base, 'lab.json'), exported.stdout);
}, 300_000);
afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

/** Runs one example in bash in a fresh copy of the state; exit code and output. */
async function runExample(cmd: string, n: number): Promise<{ code: number | null; out: string }> {
  const root = join(base, `ex-${n}`);
  const cwd = join(root, 'cwd');
  mkdirSync(cwd, { recursive: true });
  if (/ import lab\.json\b/.test(cmd)) copyFileSync(join(base, 'lab.json'), join(cwd, 'lab.json')); // made by `profiles export` before
  const { env: fxEnv } = fx();
  cpSync(fxEnv.COHORT_DATA_DIR!, join(root, 'data'), { recursive: true });
  if (makesProfile(cmd)) mkdirSync(join(root, 'config'));
  else cpSync(fxEnv.COHORT_CONFIG_DIR!, join(root, 'config'), { recursive: true });
  const env = { ...process.env, ...fxEnv, COHORT_CONFIG_DIR: join(root, 'config'), COHORT_DATA_DIR: join(root, 'data'), HOME: join(base, 'home'), PATH: `${join(base, 'bin')}:${process.env.PATH}`, NO_COLOR: '1' };
  const serve = /^cohort serve\b/.test(cmd);
  const child = spawn('bash', ['-c', `set -o pipefail; ${cmd}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: serve });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  if (serve) {
    // A server runs until stopped: once it says where it listens, Ctrl-C (SIGINT to its group), as a user does.
    const deadline = Date.now() + 60_000;
    while (!/http:\/\/\S+token=/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGINT');
    const code = await exit;
    // Ctrl-C is how a server is meant to end: exit 0 (or 130, the CLI's "stopped by Ctrl-C") once it listened.
    return { code: /http:\/\/\S+token=/.test(out) && (code === 0 || code === 130) ? 0 : (code ?? -1), out };
  }
  return { code: await exit, out };
}

describe.skipIf(SSHD_MISSING)('README and --help examples, as typed', () => {
  it('every example runs, or is listed as skipped with its reason', async () => {
    const seen = new Set<string>();
    const examples = [...readmeExamples(), ...helpExamples()].filter((e) => !seen.has(e.text) && seen.add(e.text));
    expect(examples.length).toBeGreaterThan(30);
    const ran: string[] = [];
    const skipped: string[] = [];
    const failures: string[] = [];
    const todo = [...examples].sort((a, b) => order(a.text) - order(b.text));
    const runnable: { ex: Example; n: number }[] = [];
    for (const [n, ex] of todo.entries()) {
      if (SKIPPED[ex.text] !== undefined) {
        skipped.push(`${ex.text} (${ex.from}): ${SKIPPED[ex.text]}`);
        continue;
      }
      if (/^np[mx] /.test(ex.text)) {
        failures.push(`${ex.text} (${ex.from}): an npm/npx line not listed in SKIPPED (never run here: it may ask the registry)`);
        continue;
      }
      if (isSynopsis(ex.text)) {
        skipped.push(`${ex.text} (${ex.from}): a usage synopsis, not an example`);
        continue;
      }
      // zsh (macOS's shell) aborts on a glob that matches nothing ("no matches found"): an example's
      // brackets, * and ? must be quoted, whatever bash does with them.
      if (/[*?[\]]/.test(unquoted(ex.text))) {
        failures.push(`${ex.text} (${ex.from}): an unquoted glob character (zsh: "no matches found"); quote it`);
        continue;
      }
      runnable.push({ ex, n });
    }
    const one = async ({ ex, n }: { ex: Example; n: number }): Promise<void> => {
      const typed = asTyped(ex.text, run1, run2);
      const t0 = Date.now();
      const r = await runExample(typed, n);
      if (r.code === 0) ran.push(`${typed} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      else if (/port is taken/.test(r.out) && /--port \d+/.test(typed)) skipped.push(`${typed} (${ex.from}): its fixed port is taken on this shared machine`);
      else failures.push(`${ex.text} (${ex.from})${typed !== ex.text ? `, typed as: ${typed}` : ''}\n  exit ${r.code}: ${r.out.trim().split('\n').slice(-6).join('\n  ')}`);
    };
    // Each example has its own copy of the state and its own working directory, so the ones that
    // only read or write that copy run three at a time (most of their time is starting Node and SSH
    // round trips). Those that take the hosts' slots or a port (run, check, serve) or touch the
    // hosts' shared record (stop, runs rm) run after, one by one, in the order above.
    const exclusive = (ex: Example) => /^cohort (run|check|serve|stop|runs rm)\b/.test(ex.text);
    const light = runnable.filter(({ ex }) => !exclusive(ex));
    await Promise.all(Array.from({ length: 3 }, async () => {
      for (let next = light.shift(); next; next = light.shift()) await one(next);
    }));
    for (const r of runnable.filter(({ ex }) => exclusive(ex))) await one(r);
    console.log(`ran ${ran.length} examples:\n  ${ran.join('\n  ')}\nskipped ${skipped.length}:\n  ${skipped.join('\n  ')}`);
    expect(failures, `examples that failed:\n${failures.join('\n')}`).toEqual([]);
    expect(ran.length).toBeGreaterThan(20);
  }, 1_200_000);
});
