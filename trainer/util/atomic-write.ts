// Crash-safe file replacement: write a temporary file in the same directory, fsync it, rename it
// over the target, fsync the directory. A reader sees the old file or the new one, never half.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function writeFileAtomic(path: string, chunks: Uint8Array | string | (Uint8Array | string)[], opts: { mode?: number } = {}): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`);
  const fd = openSync(tmp, 'w', opts.mode ?? 0o644);
  try {
    for (const c of Array.isArray(chunks) ? chunks : [chunks]) {
      const bytes = typeof c === 'string' ? Buffer.from(c) : c;
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    }
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
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
