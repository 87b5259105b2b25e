// The code cache across real processes: each case starts Node processes that load a CommonJS module
// through requireWithCodeCache (built from this folder's source by esbuild) and exit, as a rank does.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
let loader: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-code-cache-'));
  loader = join(dir, 'loader.mjs');
  await build({ entryPoints: [fileURLToPath(new URL('./code-cache.ts', import.meta.url))], outfile: loader, bundle: true, platform: 'node', format: 'esm', logLevel: 'warning' });
  // The child: loads MODULE through the cache (dirs as given), calls its export, prints what happened; the exit writes the cache.
  writeFileSync(
    join(dir, 'child.mjs'),
    `import { requireWithCodeCache } from ${JSON.stringify(loader)};
const [file, dirs] = [process.argv[2], JSON.parse(process.argv[3])];
const r = requireWithCodeCache(file, dirs.length ? { dirs } : {});
console.log(JSON.stringify({ use: r.use, value: r.exports.twice(21) }));`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A CommonJS module big enough that V8's cache is worth having, with `body` changing its text but not its length. */
function makeModule(name: string, body = 'a'): string {
  const sub = join(dir, name);
  mkdirSync(sub, { recursive: true });
  const file = join(sub, 'mod.cjs');
  const fns = Array.from({ length: 200 }, (_, i) => `function f${i}(x) { return x + ${i} - ${i}; }`).join('\n');
  writeFileSync(file, `'use strict';\n// ${body}\n${fns}\nexports.twice = (x) => f7(x) * 2;\n`);
  return file;
}

function load(file: string, opts: { dirs?: string[]; env?: NodeJS.ProcessEnv; execArgv?: string[] } = {}): { use: string; value: number } {
  const r = spawnSync(process.execPath, [...(opts.execArgv ?? []), join(dir, 'child.mjs'), file, JSON.stringify(opts.dirs ?? [])], { encoding: 'utf8', env: { ...process.env, COHORT_CODE_CACHE: '', ...opts.env } });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as { use: string; value: number };
}

const cacheFiles = (d: string) => readdirSync(d).filter((f) => f.endsWith('.v8cache'));

describe('requireWithCodeCache', () => {
  it('writes the cache beside the module at exit; the next process compiles from it (V8 accepts it) and runs the same code', () => {
    const file = makeModule('first');
    const sub = join(dir, 'first');
    expect(load(file)).toEqual({ use: 'miss', value: 42 });
    const [cache] = cacheFiles(sub);
    expect(cache).toMatch(/^\.mod\.cjs\.[0-9a-f]{12}\.v8cache$/);
    const before = statSync(join(sub, cache!));
    expect(load(file)).toEqual({ use: 'hit', value: 42 });
    expect(load(file)).toEqual({ use: 'hit', value: 42 });
    // A hit leaves the file as it was (nothing written again), and no temporary file is left.
    expect(statSync(join(sub, cache!)).mtimeMs).toBe(before.mtimeMs);
    expect(readdirSync(sub).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('never hands V8 a cache made for other source text, even of the same length, or a damaged one: it is ignored and written anew', () => {
    const file = makeModule('edited', 'a');
    const sub = join(dir, 'edited');
    expect(load(file).use).toBe('miss');
    const cache = join(sub, cacheFiles(sub)[0]!);
    const made = readFileSync(cache);
    // The same length, another text: V8's own check looks at the length only.
    writeFileSync(file, readFileSync(file, 'utf8').replace('// a', '// b'));
    expect(load(file)).toEqual({ use: 'miss', value: 42 });
    expect(readFileSync(cache).equals(made)).toBe(false);
    expect(load(file).use).toBe('hit');
    // One byte of the V8 data changed: the header's sum no longer matches.
    const damaged = readFileSync(cache);
    damaged[damaged.length - 10] ^= 0xff;
    writeFileSync(cache, damaged);
    expect(load(file)).toEqual({ use: 'miss', value: 42 });
    expect(load(file).use).toBe('hit');
  });

  it('where the first place takes no file (a read-only folder), writes and reads the next one', () => {
    const file = makeModule('fallback');
    const blocked = join(dir, 'fallback', 'not-a-dir');
    writeFileSync(blocked, 'a file, so nothing can be created under it');
    const second = join(dir, 'fallback-cache');
    const dirs = [join(blocked, 'cache'), second];
    expect(load(file, { dirs })).toEqual({ use: 'miss', value: 42 });
    expect(cacheFiles(second)).toHaveLength(1);
    expect(load(file, { dirs })).toEqual({ use: 'hit', value: 42 });
    // Nowhere to write at all: the module still runs, every time.
    expect(load(file, { dirs: [join(blocked, 'a'), join(blocked, 'b')] })).toEqual({ use: 'miss', value: 42 });
  });

  it('another Node flag set gets a file of its own (V8 refuses a cache made under other flags)', () => {
    const file = makeModule('flags');
    const sub = join(dir, 'flags');
    expect(load(file).use).toBe('miss');
    expect(load(file, { execArgv: ['--no-opt'] }).use).toBe('miss');
    expect(cacheFiles(sub)).toHaveLength(2);
    expect(load(file).use).toBe('hit');
    expect(load(file, { execArgv: ['--no-opt'] }).use).toBe('hit');
  });

  it('a file V8 refuses (made under other flags, under this name) is reported refused and replaced', () => {
    const file = makeModule('refused');
    const sub = join(dir, 'refused');
    load(file, { execArgv: ['--no-opt'] });
    const [other] = cacheFiles(sub);
    // Under the name the flagless process looks for: the header matches (same source), V8's flag check does not.
    load(join(dir, 'first', 'mod.cjs')); // (any load: only to learn the flagless name's variant)
    const flagless = cacheFiles(join(dir, 'first'))[0]!.split('.')[3];
    const name = `.mod.cjs.${flagless}.v8cache`;
    writeFileSync(join(sub, name), readFileSync(join(sub, other!)));
    expect(load(file)).toEqual({ use: 'rejected', value: 42 });
    expect(load(file).use).toBe('hit');
  });

  it('COHORT_CODE_CACHE=0: runs the module, reads and writes nothing', () => {
    const file = makeModule('off');
    expect(load(file, { env: { COHORT_CODE_CACHE: '0' } })).toEqual({ use: 'off', value: 42 });
    expect(cacheFiles(join(dir, 'off'))).toEqual([]);
    expect(existsSync(join(dir, 'off', 'mod.cjs'))).toBe(true);
  });
});
