// Crash-safe file replacement: write a temporary file in the same directory, fsync it, rename it
// over the target, fsync the directory. A reader sees the old file or the new one, never half
// (rename is atomic within a filesystem, which is why the temp file lives beside the target).
// Used by profiles, known_hosts, run history and checkpoints.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Synchronous form, for writers that must finish before the process goes on (checkpoints, run meta). */
/** `existingDir`: the directory must still be there (ENOENT otherwise): a writer that must not bring back a removed record. */
/** `afterChunk`: called after each chunk is written, before the fsync and rename (a test's pause mid-write: checkpoint.ts). */
export function writeFileAtomicSync(path: string, chunks: Uint8Array | string | (Uint8Array | string)[], opts: { mode?: number; existingDir?: boolean; afterChunk?: () => void } = {}): void {
  const dir = dirname(path);
  if (!opts.existingDir) mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'w', opts.mode ?? 0o644);
  try {
    for (const c of Array.isArray(chunks) ? chunks : [chunks]) {
      const bytes = typeof c === 'string' ? Buffer.from(c) : c;
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      opts.afterChunk?.();
    }
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw namingPath(err, path);
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  try {
    const dfd = openSync(dir, 'r');
    fsyncSync(dfd);
    closeSync(dfd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  }
}

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0o600: profiles and known_hosts are private). */
  mode?: number;
  /** Mode for directories created on the way (default 0o700). */
  dirMode?: number;
}

export async function writeFileAtomic(path: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  try {
    await mkdir(dir, { recursive: true, mode: opts.dirMode ?? 0o700 });
  } catch (err) {
    // Node's recursive mkdir says ENOENT where the parent exists but takes no new directory (a
    // read-only filesystem): once more without recursion gives the true cause (EROFS, EACCES...).
    if ((err as { code?: unknown }).code !== 'ENOENT') throw err;
    await mkdir(dir, { mode: opts.dirMode ?? 0o700 });
  }
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let renamed = false;
  try {
    const fh = await open(tmp, 'wx', opts.mode ?? 0o600);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    renamed = true;
    await syncDir(dir);
  } catch (err) {
    throw namingPath(err, path);
  } finally {
    if (!renamed) await rm(tmp, { force: true });
  }
}

/** A write() or fsync() error carries no path (ENOSPC on a full disk): it names the file it was for. */
function namingPath(err: unknown, path: string): unknown {
  if (err && typeof err === 'object' && 'code' in err && !('path' in err)) Object.assign(err, { path });
  return err;
}

async function syncDir(dir: string): Promise<void> {
  // Makes the rename itself durable. Some filesystems refuse fsync on a directory: not fatal.
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    /* best effort */
  }
}

/**
 * Serialises read-modify-write cycles on one path within this process (e.g. several hosts
 * accepting new host keys at once must not lose each other's lines).
 */
const locks = new Map<string, Promise<unknown>>();
export async function withFileLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(path) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const settled = next.catch(() => undefined);
  locks.set(path, settled);
  try {
    return await next;
  } finally {
    if (locks.get(path) === settled) locks.delete(path);
  }
}
