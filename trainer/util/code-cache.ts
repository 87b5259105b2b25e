// Loads a CommonJS bundle with V8's code cache: the rank (resources/trainer/rank.cjs, tfjs and the
// engine, ~2 MB) is started once per rank per run, and each start compiled the same functions to
// bytecode again, ~0.25 CPU-s of a tiny rank's ~0.8 (bench/results/suite.md, "session 17"). Node 22
// has this built in (module.enableCompileCache); Node 20, which the hosts run, has it only for
// vm.Script, so the rank is bundled as CommonJS and compiled here with the bytecode V8 kept from the
// last rank of the same bundle (script.createCachedData() at exit: every function the run compiled).
//
// The cache is an optimisation and never a reason to fail: unreadable, damaged, for another source,
// another Node or other V8 flags, it is ignored and written anew; unwritable (a read-only app
// folder), the next place is tried, then none. Its file starts with a header (sha256 of the source
// and of the V8 data) so a file that is not exactly what this process would have written is never
// handed to V8. It lives beside the bundle (on hosts: <workdir>/trainer/<content hash>/, removed with
// the bundle), else under $XDG_CACHE_HOME/cohort (or ~/.cache/cohort). COHORT_CODE_CACHE=0: off.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import vm from 'node:vm';

const MAGIC = Buffer.from('cohort-v8cache-1\n');
const HASH_BYTES = 32;

/** What the load did with the cache (for tests and measurement; nothing in the product branches on it). */
export type CodeCacheUse = 'off' | 'hit' | 'miss' | 'rejected';

export interface CodeCacheOptions {
  env?: NodeJS.ProcessEnv;
  /** Where to look and write, in order (default: beside the bundle, then the user's cache folder). */
  dirs?: string[];
  /** Write a missing or refused cache when the process exits (default true; false: the caller calls save()). */
  saveAtExit?: boolean;
}

export interface CodeCacheLoad<T> {
  exports: T;
  use: CodeCacheUse;
  /** Writes the bytecode compiled so far (all the functions that ran), if the cache was missing or refused; returns where, or null. */
  save(): string | null;
}

/**
 * Runs `file` (a CommonJS module) as `require` would, compiled with a cached copy of its bytecode
 * when one is there, and, if it was missing or V8 refused it, writes it when the process exits (by
 * then it holds every function the process ran, not just the top level). Returns the module's exports.
 */
export function requireWithCodeCache<T = unknown>(file: string, opts: CodeCacheOptions = {}): CodeCacheLoad<T> {
  const env = opts.env ?? process.env;
  const source = readFileSync(file, 'utf8');
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${source}\n});`;
  const off = env.COHORT_CODE_CACHE === '0';
  const sourceHash = createHash('sha256').update(source).digest();
  // The same bundle under another Node or other V8 flags gets a file of its own (V8 would refuse the other's).
  const variant = createHash('sha256').update(`${process.version} ${process.arch} ${process.execArgv.join(' ')}`).digest('hex').slice(0, 12);
  const name = `.${basename(file)}.${variant}.v8cache`;
  const dirs = opts.dirs ?? [dirname(file), join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'cohort', 'code-cache', sourceHash.toString('hex').slice(0, 16))];
  const cached = off ? undefined : readCache(dirs.map((d) => join(d, name)), sourceHash);
  const script = new vm.Script(wrapped, { filename: file, ...(cached ? { cachedData: cached } : {}) });
  const use: CodeCacheUse = off ? 'off' : !cached ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit';
  const save = () => (use === 'miss' || use === 'rejected' ? writeCache(dirs.map((d) => join(d, name)), sourceHash, script) : null);
  if (opts.saveAtExit !== false) process.once('exit', save);
  const module = { exports: {} as T };
  (script.runInThisContext() as (...a: unknown[]) => void).call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return { exports: module.exports, use, save };
}

/** The first file of `paths` whose header matches this source and its own data, as V8's cached data. */
function readCache(paths: string[], sourceHash: Buffer): Buffer | undefined {
  for (const p of paths) {
    let b: Buffer;
    try {
      b = readFileSync(p);
    } catch {
      continue;
    }
    const head = MAGIC.length + 2 * HASH_BYTES;
    if (b.length <= head || !b.subarray(0, MAGIC.length).equals(MAGIC)) continue;
    if (!b.subarray(MAGIC.length, MAGIC.length + HASH_BYTES).equals(sourceHash)) continue;
    const data = b.subarray(head);
    if (!b.subarray(MAGIC.length + HASH_BYTES, head).equals(createHash('sha256').update(data).digest())) continue;
    return data;
  }
  return undefined;
}

/** Writes the script's bytecode to the first of `paths` that takes it (temporary file + rename: a reader sees all of it or none). */
function writeCache(paths: string[], sourceHash: Buffer, script: vm.Script): string | null {
  let data: Buffer;
  try {
    data = script.createCachedData();
  } catch {
    return null;
  }
  const file = Buffer.concat([MAGIC, sourceHash, createHash('sha256').update(data).digest(), data]);
  for (const p of paths) {
    const tmp = `${p}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(tmp, file, { mode: 0o644 });
      renameSync(tmp, p);
      return p;
    } catch {
      try {
        rmSync(tmp, { force: true });
      } catch {
        // ENOTDIR and the like: there was no place for it, so nothing to remove.
      }
    }
  }
  return null;
}
