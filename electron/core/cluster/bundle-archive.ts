// The trainer bundle as ONE gzipped tar for deploy (deploy.ts): one SFTP upload and one `tar -xzf` on
// the host instead of one upload per file. Why: the bundle is ~45 files, and each file's upload is
// ~4 SFTP round trips (open, write, close, rename) done one after another (over a 100 ms link, ~18 s
// of waiting by that count: estimated, not measured), and its ~3 MB of JavaScript and wasm compress
// ~4× with gzip. Measured on loopback sshd hosts: bench/results/suite.md, "session 14".
// The archive is plain POSIX ustar (GNU tar, bsdtar and BusyBox tar all read it), files only, each
// 0644 owned by uid/gid 0 with no owner names (extracted with -o: owned by whoever extracts) and no
// mtime (extracted with -m: the deploy's time, as an upload gave): the same bundle gives the same bytes. What
// arrives is still checked file by file against the manifest's sha256 on the host (deploy.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { TrainerBundle } from '../trainer-bundle';

const BLOCK = 512;

/** A ustar header's numeric field: octal digits, zero-padded, NUL-terminated, `len` bytes. */
function octal(n: number, len: number): string {
  return n.toString(8).padStart(len - 1, '0') + '\0';
}

/** ustar splits a long path into prefix (≤ 155 bytes) / name (≤ 100 bytes) at a slash. */
function splitPath(path: string): { name: string; prefix: string } {
  if (Buffer.byteLength(path) <= 100) return { name: path, prefix: '' };
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { name, prefix };
  }
  throw new Error(`bundle file ${path}: the path is too long for a tar archive (name ≤ 100 bytes after a directory of ≤ 155)`);
}

function header(path: string, size: number): Buffer {
  const { name, prefix } = splitPath(path);
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii'); // mode
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii'); // mtime: none (extracted with -m: the time of the deploy), so one bundle gives one archive
  h.fill(0x20, 148, 156); // the checksum is summed with its own field as spaces
  h.write('0', 156, 'ascii'); // typeflag: regular file
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

/** `files` (paths relative to `dir`, `/`-separated) as a gzipped ustar archive. */
export function tarGz(dir: string, files: readonly string[]): Buffer {
  const parts: Buffer[] = [];
  for (const path of files) {
    if (path.startsWith('/') || path.split('/').includes('..')) throw new Error(`bundle file ${path}: not a path inside the bundle`);
    splitPath(path); // too long: refused before any file is read
  }
  for (const path of files) {
    const data = readFileSync(join(dir, path));
    parts.push(header(path, data.length), data);
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(2 * BLOCK)); // end of archive
  return gzipSync(Buffer.concat(parts));
}

const made = new Map<string, Buffer>();

/** The bundle's archive, made once per bundle (hash) in this process: a deploy to N hosts compresses once. */
export function bundleArchive(bundle: TrainerBundle): Buffer {
  let a = made.get(bundle.hash);
  if (!a) {
    a = tarGz(bundle.dir, bundle.files.map((f) => f.path));
    made.set(bundle.hash, a);
  }
  return a;
}

/** The host command that unpacks `archive` into the current directory and removes it (files owned by the user who runs it). */
export const untarCommand = (archive: string, quote: (s: string) => string): string => `tar -xzmof ${quote(archive)} && rm -f ${quote(archive)}`;
