// Reads a small file the user pointed us at (a profile, an identity file) without trusting what
// is at the path: it is opened non-blocking (a FIFO cannot hang the open), must be a regular file
// (/dev/zero, a FIFO, a directory are refused before any byte is read) and at most `maxBytes`
// long (checked with fstat, and again while reading, so a file that grows cannot fill the heap).
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { CohortError } from '../../../trainer/protocol';

export type BoundedReadProblem = 'not-found' | 'not-a-file' | 'too-large' | 'io';

/** Each problem's error code and what to do about it. */
const PROBLEM: Record<BoundedReadProblem, { code: string; hint: string }> = {
  'not-found': { code: 'file-not-found', hint: 'check the path (a typo, or the file was moved)' },
  'not-a-file': { code: 'not-a-regular-file', hint: 'point at a regular file, not a directory, pipe or device' },
  'too-large': { code: 'file-too-large', hint: 'point at the right file; this one is far larger than such a file can be' },
  io: { code: 'file-unreadable', hint: 'check the file\'s permissions and the disk' },
};

export class BoundedReadError extends CohortError {
  constructor(
    readonly problem: BoundedReadProblem,
    readonly path: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(PROBLEM[problem].code, message, { hint: PROBLEM[problem].hint, ...options });
    this.name = 'BoundedReadError';
  }
}

const KINDS: [string, (s: import('node:fs').Stats) => boolean][] = [
  ['a directory', (s) => s.isDirectory()],
  ['a FIFO (named pipe)', (s) => s.isFIFO()],
  ['a character device', (s) => s.isCharacterDevice()],
  ['a block device', (s) => s.isBlockDevice()],
  ['a socket', (s) => s.isSocket()],
];

export function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${Math.round(n / 1024)} KiB` : `${n} bytes`;
}

/** The file's bytes; throws BoundedReadError (with `problem`) for a missing, special or oversized file. */
export async function readBounded(path: string, maxBytes: number): Promise<Buffer> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT') throw new BoundedReadError('not-found', path, `${path} does not exist`, { cause: err });
    if (code === 'EISDIR') throw new BoundedReadError('not-a-file', path, `${path} is a directory, not a file`, { cause: err });
    if (code === 'ENXIO') throw new BoundedReadError('not-a-file', path, `${path} is a FIFO or socket, not a file`, { cause: err });
    throw new BoundedReadError('io', path, `cannot open ${path} (${String(code ?? err)})`, { cause: err });
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) {
      const kind = KINDS.find(([, is]) => is(st))?.[0] ?? 'not a regular file';
      throw new BoundedReadError('not-a-file', path, `${path} is ${kind}, not a regular file`);
    }
    if (st.size > maxBytes) throw new BoundedReadError('too-large', path, `${path} is ${formatBytes(st.size)}, over the ${formatBytes(maxBytes)} limit`);
    // Sized by fstat (+1 to see growth); grows, never past maxBytes + 1, if the file grew meanwhile.
    let buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        if (n > maxBytes) throw new BoundedReadError('too-large', path, `${path} grew past the ${formatBytes(maxBytes)} limit while being read`);
        const bigger = Buffer.alloc(Math.min(buf.length * 2, maxBytes + 1));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > maxBytes) throw new BoundedReadError('too-large', path, `${path} grew past the ${formatBytes(maxBytes)} limit while being read`);
    return buf.subarray(0, n);
  } catch (err) {
    if (err instanceof BoundedReadError) throw err;
    throw new BoundedReadError('io', path, `cannot read ${path} (${String((err as { code?: unknown }).code ?? err)})`, { cause: err });
  } finally {
    await fh.close();
  }
}
