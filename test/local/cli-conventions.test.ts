// The CLI's conventions, through the real built `cohort` in real processes: --help on every command
// and subcommand of the command table, --version, did-you-mean, conflicting flags, closed pipes,
// and --json's error + done on a refused connection.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeEvent, type CohortEvent } from '../../trainer/protocol';
import { DEFAULT_TRAIN_CONFIG } from '../../trainer/protocol';
import { RunStore } from '../../electron/core/runs/run-store';
import { COMMANDS } from '../../electron/cli/commands';
import { allCommands } from '../../electron/cli/command-spec';
import { COHORT, ROOT, runCli } from '../helpers/cli';
import { freePort } from '../helpers/free-port';

const dirs: string[] = [];
const temp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const env = () => ({ COHORT_DATA_DIR: temp('cohort-cli-data-'), COHORT_CONFIG_DIR: temp('cohort-cli-config-'), NO_COLOR: '1' });

async function cli(args: string[], e: NodeJS.ProcessEnv = env()) {
  const r = runCli(args, { env: e });
  const exit = await r.exit;
  return { code: exit.code, stdout: r.stdout, stderr: r.stderr };
}

describe('cohort --help', () => {
  const every = allCommands(COMMANDS);
  it('the table has every command and subcommand (so the test below covers them)', () => {
    expect(every.map((c) => c.name)).toEqual(expect.arrayContaining(['run', 'profiles', 'profiles add', 'profiles import-ssh-config', 'runs export', 'probe', 'serve']));
    expect(every.length).toBeGreaterThanOrEqual(17);
  });

  it.concurrent.each(every.flatMap((c) => [[c.name, '--help'], [c.name, '-h']]))('cohort %s %s: exit 0, a usage line, its summary, nothing on stderr', async (name, flag) => {
    const cmd = every.find((c) => c.name === name)!;
    const r = await cli([...name.split(' '), flag]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^usage: cohort ${name}`, 'm'));
    expect(r.stdout).toContain(cmd.summary);
    if (cmd.examples?.length) expect(r.stdout).toContain(`examples:\n  ${cmd.examples[0]}`);
    expect(r.stdout).not.toMatch(/\x1b\[/); // not a TTY: no colour
  });

  it('cohort --help lists every top-level command; no command prints the help and exits 2', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  ${c.name} `, 'm'));
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^usage: cohort COMMAND/m);
  });

  it('run --help shows defaults and examples', async () => {
    const r = await cli(['run', '--help']);
    expect(r.stdout).toMatch(new RegExp(`--batch-size B .*\\[default: ${DEFAULT_TRAIN_CONFIG.batchSize}\\]`));
    expect(r.stdout).toMatch(/--ranks N\s+ranks with --local \(default: 1\)/);
    expect(r.stdout).toContain('examples:\n  cohort run --local');
  });
});

describe('cohort conventions', () => {
  it('--version prints package.json\'s version', async () => {
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    const r = await cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`cohort ${version}\n`);
  });

  it.each([
    [['run', '--local', '--batchsize', '4'], 'unknown option --batchsize; did you mean --batch-size?'],
    [['run', '--local', '--rank', '2'], 'unknown option --rank; did you mean --ranks?'],
    [['run', '--local', '--step', '2'], 'unknown option --step; did you mean --steps?'],
    [['profiles', 'add', 'x', 'h', '--slot', '2'], 'unknown option --slot; did you mean --slots?'],
    [['runs', 'export', 'r', '--fromat', 'csv'], 'unknown option --fromat; did you mean --format?'],
    [['prfiles', 'list'], 'unknown command "prfiles"; did you mean "profiles"?'],
    [['profiles', 'lst'], 'unknown profiles command "lst"; did you mean "cohort profiles list"?'],
    [['runs', 'exprot'], 'did you mean "cohort runs export"?'],
    [['run', '--local', '--steps'], 'run: --steps needs a value (--steps VALUE)'],
    [['probe', 'a', 'b'], 'probe: unexpected argument "b"'],
  ])('cohort %j → exit 2 with a suggestion or the fix', async (args, expected) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(expected);
    expect(r.stderr).not.toMatch(/at .*\.mjs:\d+/); // no stack trace
  });

  it('--local with --profile is refused as conflicting', async () => {
    const r = await cli(['run', '--local', '--profile', 'lab', '--steps', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--local and --profile lab conflict/);
  });

  it('a missing profile\'s hint names commands that exist, once', async () => {
    const r = await cli(['probe', 'nope']);
    expect(r.code).toBe(2);
    const hints = [...r.stderr.matchAll(/`cohort ([a-z-]+) ([a-z-]+)/g)].map((m) => [m[1]!, m[2]!]);
    expect(hints.length).toBeGreaterThan(0);
    for (const [cmd, sub] of hints) expect(allCommands(COMMANDS).map((c) => c.name), `${cmd} ${sub}`).toContain(`${cmd} ${sub}`);
    expect(r.stderr.match(/known profiles/g)).toHaveLength(1);
  });

  it('cohort probe local describes this machine', async () => {
    const r = await cli(['probe', 'local', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [p] = JSON.parse(r.stdout) as { host: string; ok: boolean; cores: number; node?: { version: string } }[];
    expect(p).toMatchObject({ host: 'local', ok: true });
    expect(p!.cores).toBeGreaterThan(0);
    expect(p!.node?.version).toBe(process.version);
  });
});

describe('closed pipes', () => {
  // Enough history that the output is far larger than a pipe's buffer (64 KiB), so writes go on
  // after `head` has exited.
  const data = temp('cohort-cli-pipe-');
  const store = new RunStore(join(data, 'runs'));
  for (let r = 0; r < 400; r++) {
    const id = `20261123-0900${String(r).padStart(3, '0')}-pipe`;
    const rec = store.create({ id, profile: 'local', startedAt: new Date(Date.UTC(2026, 10, 23, 9, 0, r)).toISOString(), status: 'ok', config: DEFAULT_TRAIN_CONFIG, hosts: [{ name: 'local', ranks: [0] }], worldSize: 1, versions: {}, medianGlobalSamplesPerSec: 10, steps: 500 });
    if (r === 0) for (let s = 1; s <= 3000; s++) rec.record(makeEvent({ type: 'step', step: s, epoch: 0, loss: 2, globalSamplesPerSec: 10, stepTimeMs: 100, worldSize: 1, lr: 1e-3, memory: [{ rank: 0, host: 'local', rssBytes: 1e9 }] }) as CohortEvent);
    rec.close();
  }

  it.each([
    ['runs list | head -1', `runs list`],
    ['runs export | head -1', `runs export 20261123-0900000-pipe`],
    ['runs export --format jsonl | head -1', `runs export 20261123-0900000-pipe --format jsonl`],
  ])('%s exits 0 with no EPIPE stack trace', async (_name, args) => {
    const sh = spawn('bash', ['-c', `set -o pipefail; "${process.execPath}" "${COHORT}" ${args} 2>"${data}/err" | head -1 >/dev/null; echo "status=\${PIPESTATUS[0]}"`], {
      env: { ...process.env, COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: data },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    sh.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise((r) => sh.on('exit', r));
    expect(out.trim()).toBe('status=0');
    expect(readFileSync(join(data, 'err'), 'utf8')).toBe('');
  });
});

describe('--json on a refused connection', () => {
  it('prints an error event, then done, on stdout', async () => {
    // A port nothing listens on: bind, note the port, close.
    const port = await freePort();
    const e = env();
    const key = join(e.COHORT_CONFIG_DIR, 'id_ed25519');
    expect(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]).status).toBe(0);
    expect((await cli(['profiles', 'add', 'gone', `me@127.0.0.1:${port}`, '--identity-file', key], e)).code).toBe(0);
    const r = runCli(['run', '--profile', 'gone', '--steps', '1', '--json'], { env: e, json: true });
    const exit = await r.exit;
    expect(exit.code).toBe(3); // connection
    expect(r.invalidLines).toBe(0);
    // First the failed launch's run id (it is in the history), then error, then done.
    expect(r.events.map((x) => x.type)).toEqual(['log', 'error', 'done']);
    expect(r.events[0]).toMatchObject({ type: 'log', runId: expect.stringMatching(/^\d{8}-/) });
    expect(r.events[1]).toMatchObject({ type: 'error', rank: -1, host: '127.0.0.1' });
    expect((r.events[1] as { message: string }).message).toMatch(/refused/i);
    expect(r.events[2]).toMatchObject({ type: 'done', status: 'failed', steps: 0 });
  });
});
