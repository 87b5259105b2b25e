// What a start loads: the real built CLI and trainer bundle, run as a user's shell and a host's SSH
// exec run them, with a Node hook that records every module they load. Each `cohort` start used to
// import ssh2 and ws (~0.18 of ~0.30 CPU-s) and each short host command parsed the whole 2.2-MB
// trainer bundle, tfjs inside (~0.20 CPU-s against ~0.10): a run's several SSH execs and a suite's
// ~1,400 starts paid it (session 10). Now ssh2/ws load on first use (electron/core/lazy-packages.ts)
// and the bundle is split per host command (scripts/build.mjs); the rank is a file of its own (rank.cjs).
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { COHORT, ROOT } from '../helpers/cli';
import { freePort } from '../helpers/free-port';

const dir = mkdtempSync(join(tmpdir(), 'cohort-start-loads-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// CommonJS packages (ssh2, ws) go through require: its cache lists them at exit. ES modules (the
// trainer's chunks) go through the loader: a registered load hook appends each URL to a file
// (hooks run on their own thread in Node 20, so the file, not stderr).
const HOOKS = join(dir, 'hooks.mjs');
writeFileSync(HOOKS, `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { appendFileSync(process.env.COHORT_TEST_LOAD_LOG, url + '\\n'); return next(url, context); }
`);
const RECORD = join(dir, 'record.mjs');
writeFileSync(RECORD, `import { createRequire, register } from 'node:module';
import { appendFileSync } from 'node:fs';
register(${JSON.stringify(pathToFileURL(HOOKS).href)});
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(process.env.COHORT_TEST_LOAD_LOG, Object.keys(cache).map((p) => 'cjs:' + p + '\\n').join('')));
`);

let n = 0;
/** Runs `node --import RECORD script args` and returns what it loaded (file URLs and cjs: paths) and how it exited. */
function loads(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; loaded: string[]; stderr: string; out: string }> {
  const log = join(dir, `loads-${n++}.txt`);
  writeFileSync(log, '');
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', pathToFileURL(RECORD).href, script, ...args], { env: { ...process.env, ...env, COHORT_TEST_LOAD_LOG: log }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code, loaded: readFileSync(log, 'utf8').split('\n').filter(Boolean), stderr, out: stdout + stderr });
    });
  });
}
const packagesIn = (loaded: string[]) => new Set(loaded.flatMap((l) => /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(l)?.[1] ?? []));

describe('a cohort start loads ssh2 and ws only when it uses them', () => {
  const env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data') };

  it('--help and profiles list load neither', async () => {
    for (const args of [['--help'], ['profiles', 'list']]) {
      const r = await loads(COHORT, args, env);
      expect(r.code, `cohort ${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.loaded.some((l) => l.endsWith('dist/cli.mjs')), 'the hook saw the CLI itself').toBe(true);
      const pkgs = packagesIn(r.loaded);
      expect(pkgs.has('ssh2'), `cohort ${args.join(' ')} loaded ssh2`).toBe(false);
      expect(pkgs.has('ws'), `cohort ${args.join(' ')} loaded ws`).toBe(false);
    }
  });

  it('a probe over SSH loads ssh2 (and still not ws), and says why it could not connect', async () => {
    // A key to offer (else the probe stops before connecting) and a loopback port nothing listens on.
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'key')]);
    const add = await loads(COHORT, ['profiles', 'add', 'closed', `nobody@127.0.0.1:${await freePort()}`, '--identity-file', join(dir, 'key')], env);
    expect(add.code, add.stderr).toBe(0);
    const r = await loads(COHORT, ['probe', 'closed'], env);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/connection refused/);
    const pkgs = packagesIn(r.loaded);
    expect(pkgs.has('ssh2'), 'probe connected without ssh2?').toBe(true);
    expect(pkgs.has('ws')).toBe(false);
  });
});

describe("a short host command does not load the trainer's tfjs code", () => {
  const bundle = join(ROOT, 'resources', 'trainer');
  const entry = join(bundle, 'cohort-trainer.mjs');
  const holdsTfjs = (f: string) => readFileSync(join(bundle, f), 'utf8').includes('tfjs-core');

  it('the bundle is split: the rank (rank.cjs, compiled with the code cache) alone holds tfjs, the entry is small', () => {
    expect(holdsTfjs('rank.cjs')).toBe(true);
    const esm = readdirSync(bundle).filter((f) => f.endsWith('.mjs'));
    expect(esm.length).toBeGreaterThan(5);
    expect(esm.filter(holdsTfjs), 'an ES chunk carries tfjs (imported outside the rank?)').toEqual([]);
    expect(readFileSync(entry).length).toBeLessThan(64 * 1024);
  });

  it('run-status loads its own chunk and nothing with tfjs', async () => {
    const workdir = mkdtempSync(join(dir, 'workdir-'));
    const r = await loads(entry, ['run-status'], { COHORT_WORKDIR: workdir });
    expect(r.code, r.stderr).toBe(0);
    const files = r.loaded.filter((l) => l.startsWith('file:')).map((l) => l.split('/').pop()!);
    expect(files).toContain('cohort-trainer.mjs');
    expect(files.some((f) => f.startsWith('run-status-')), `loaded: ${files.join(' ')}`).toBe(true);
    expect(files.filter((f) => f.endsWith('.mjs') && holdsTfjs(f))).toEqual([]);
  });
});
