// A scripted pass of the README's and every `--help`'s examples, as a new user types them (issue 22,
// "Proof"): every `cohort …` line of README.md's code blocks and every command's `examples` (the
// table `--help` prints) runs in bash, pipes and redirections included (`set -o pipefail`), against
// a private config/data dir whose `lab` profile is 2 real sshd hosts, and must exit 0 (and show what
// EXPECT says the docs promise). A new example runs by itself; one that cannot run here must be
// listed in SKIPPED with its reason; a placeholder (RUN, A, B, a run id of the docs) is typed as a
// real run id, a training example's length as 2 steps and a local one's model at the tiny width
// (asTyped, test/helpers/doc-examples.ts, says why; the typed line is what the log prints). The examples naming the Slurm profile `hpc`
// run as typed against a real Slurm cluster in test/slurm/slurm-run.test.ts (listed here as such).
// `lab` has `defaults` (LAB_DEFAULTS: the tiny run), so an example that sets no run size (`cohort
// check lab`) runs and measures that, in seconds, as a profile's defaults would for its owner.
// Each example gets a fresh copy of the state (so `profiles rm lab` or `runs rm` never changes the
// next one's world) in a fresh working directory holding lab.json, with a HOME holding
// ~/.ssh/config (gpu1, gpu2) and ~/.ssh/id_ed25519. An unquoted glob character fails too (zsh, the
// macOS shell, refuses a glob that matches nothing).
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { SLURM_EXAMPLES_FILE, asTyped, cohortOnPath, docExamples, needsSlurm, type Example } from '../helpers/doc-examples';
import { tinyConfig, tinyRun } from '../helpers/tiny';

/** Examples that cannot run here, each with why (exact text as extracted). */
const SKIPPED: Record<string, string> = {
  'npm install': 'installs packages from the registry (this checkout is installed already)',
  'npm test': 'the whole test suite (this file is part of it)',
  'cohort run --profile lab --batch-size 64 --image-size 224 --steps 500 --name "bs64 224px" --tag baseline': 'ResNet-50 at 224 px, batch 64: a GPU cluster\'s run; on these CPU sshd hosts tfjs-wasm would take hours (the same flags at a small size: the other run examples)',
  'cohort run --profile lab --batch-size 32 --epochs 1 --data cifar100:~/data/cifar-100-binary': 'needs the CIFAR-100 binary files under ~/data on the hosts (no download here); --data is covered by the trainer tests',
  'cohort provision lab': 'installs @tensorflow/tfjs-node(-gpu) on the hosts from the npm registry: no network beyond the test hosts',
};

/**
 * What each example's output must show, beyond exit 0: what the docs say it does (exact text as
 * extracted). The `lab` checks run at the profile's defaults (LAB_DEFAULTS) under the flags typed.
 */
const EXPECT: Record<string, RegExp[]> = {
  // "OS, cores, RAM, Node, GPUs (nvidia-smi), tfjs bindings, PyTorch per host"
  'cohort probe lab': [/^h1: Linux .*, \d+ cores, [\d.]+ GiB, node v\d+.*, CPU only, tfjs/m, /^h2: Linux /m],
  // "uploads the trainer bundle once (content-hashed; a second deploy sends nothing)": deployed before,
  // but `deploy lab --force` may be uploading to the same hosts at the same time (the examples run 3 at once)
  'cohort deploy lab': [/^h1: (already deployed|deployed [\d.]+ MiB) at /m, /^h2: (already deployed|deployed [\d.]+ MiB) at /m],
  'cohort deploy lab --force': [/^h1: deployed [\d.]+ MiB at /m, /^h2: deployed [\d.]+ MiB at /m],
  'cohort check lab': [/^  h1 \(\S+\): node v\d+/m, /^  h2 \(\S+\): node v\d+/m, /^links \(plain TCP between the hosts/m, /^  h1 → h2 /m, /^prediction for 2 rank\(s\):$/m, /^  bottleneck: \S/m, /^ok: nothing would make a run fail/m],
  'cohort check lab --batch-size 64': [/^prediction for 2 rank\(s\):$/m, /\(fp32 wire\)/, /^ok: nothing would make a run fail/m],
  'cohort check lab --batch-size 64 --fp16 --json | jq .prediction': [/^\{\n/, /^  "worldSize": 2,$/m, /^  "wire": "fp16",$/m, /^  "bottleneck": "\S/m],
};

/** The command without its quoted words (what the shell itself reads). */
const unquoted = (s: string) => s.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, '');
/** A usage synopsis (`[--json]`, `NAME`, `...`), not an example to type. */
const isSynopsis = (s: string) => /\[[^\]]+\]|\s\.\.\.(\s|$)|\b(PROFILE|NAME)\b/.test(unquoted(s));
/** Examples that need no profile (they make one); the others start with the `lab` profile saved. */
const makesProfile = (s: string) => /^cohort profiles (add|add-slurm|import|import-ssh-config) /.test(s);
/** Destructive ones last (they run in copies, but stop/rm touch the hosts' shared record). */
const order = (s: string) => (/^cohort (runs rm|stop) /.test(s) ? 1 : 0);

/** `lab`'s run settings when a command does not give them: the tiny run of the other cluster tests. */
const LAB_DEFAULTS = { ...tinyConfig, batchSize: 2, warmupSteps: 1 };

const fx = useCohortCluster(2, { enabled: !SSHD_MISSING });
let base = '';
let run1 = '';
let run2 = '';

beforeAll(async () => {
  if (SSHD_MISSING) return;
  base = mkdtempSync(join(tmpdir(), 'cohort-doc-examples-'));
  await fx().importProfile('lab', [0, 1], { defaults: LAB_DEFAULTS });
  const deployed = fx().cli(['deploy', 'lab']);
  expect((await deployed.exit).code, deployed.stderr).toBe(0);
  // Two ended runs on lab, for the examples that name a run.
  for (const i of [1, 2]) {
    const r = fx().cli(['run', '--profile', 'lab', ...tinyRun(), '--steps', '1', '--detach']);
    expect((await r.exit).code, r.stderr).toBe(0);
    const a = fx().cli(['attach', r.stdout.trim()]);
    expect((await a.exit).code, a.stderr).toBe(0);
    if (i === 1) run1 = r.stdout.trim();
    else run2 = r.stdout.trim();
  }
  cohortOnPath(base);
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
  // COHORT_CHECK_LINK_MS: `cohort check lab`'s links stream 200 ms each, not 2 s (the CLI's minimum,
  // as check.test's cases that assert no speeds): here they only need to connect and be listed.
  const env = { ...process.env, ...fxEnv, COHORT_CONFIG_DIR: join(root, 'config'), COHORT_DATA_DIR: join(root, 'data'), HOME: join(base, 'home'), PATH: `${join(base, 'bin')}:${process.env.PATH}`, NO_COLOR: '1', COHORT_CHECK_LINK_MS: '200' };
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
    const examples = docExamples();
    expect(examples.length).toBeGreaterThan(30);
    const ran: string[] = [];
    const skipped: string[] = [];
    const elsewhere: string[] = [];
    const failures: string[] = [];
    const todo = [...examples].sort((a, b) => order(a.text) - order(b.text));
    const runnable: { ex: Example; n: number }[] = [];
    for (const [n, ex] of todo.entries()) {
      if (SKIPPED[ex.text] !== undefined) {
        skipped.push(`${ex.text} (${ex.from}): ${SKIPPED[ex.text]}`);
        continue;
      }
      if (needsSlurm(ex.text)) {
        elsewhere.push(`${ex.text} (${ex.from}): runs as typed against a real Slurm cluster in ${SLURM_EXAMPLES_FILE}`);
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
      const missing = r.code === 0 ? (EXPECT[ex.text] ?? []).filter((re) => !re.test(r.out)) : [];
      if (missing.length) failures.push(`${ex.text} (${ex.from})${typed !== ex.text ? `, typed as: ${typed}` : ''}\n  exit 0 but its output lacks ${missing.join(', ')}:\n  ${r.out.trim().split('\n').join('\n  ')}`);
      else if (r.code === 0) ran.push(`${typed} (${((Date.now() - t0) / 1000).toFixed(1)} s)${EXPECT[ex.text] ? `: ${r.out.trim().split('\n').at(-1)}` : ''}`);
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
    console.log(`ran ${ran.length} examples:\n  ${ran.join('\n  ')}\nskipped ${skipped.length}:\n  ${skipped.join('\n  ')}\nrun elsewhere ${elsewhere.length}:\n  ${elsewhere.join('\n  ')}`);
    expect(failures, `examples that failed:\n${failures.join('\n')}`).toEqual([]);
    expect(ran.length).toBeGreaterThan(20);
    // Each output check names an example that exists and ran (a renamed example must not leave its check unused).
    for (const text of Object.keys(EXPECT)) expect(examples.map((e) => e.text), `EXPECT names ${text}`).toContain(text);
    expect(elsewhere.length, 'the hpc examples (probe, run)').toBeGreaterThanOrEqual(2);
  }, 1_200_000);
});
