// Splits a child's output into lines without ever holding more than `maxLineBytes` of one line:
// a longer line is delivered cut at the limit, marked `… [N bytes cut]`, and the rest of it is
// skipped as it streams by (readline would buffer a newline-free stream without bound).
import type { Readable } from 'node:stream';

/** Rank log lines longer than this are cut (a progress bar redrawn with \r, a dumped tensor). */
export const MAX_LOG_LINE_BYTES = 16 * 1024;

export function boundedLines(stream: Readable, maxLineBytes: number, onLine: (line: string) => void): void {
  let parts: Buffer[] = [];
  let held = 0;
  let cut = 0;
  const finish = () => {
    const text = Buffer.concat(parts).toString('utf8').replace(/\r$/, '');
    onLine(cut > 0 ? `${text.replace(/\uFFFD$/, '')}… [${cut} bytes cut]` : text);
    parts = [];
    held = 0;
    cut = 0;
  };
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      const room = maxLineBytes - held;
      const piece = chunk.subarray(start, end);
      if (piece.length <= room) {
        parts.push(piece);
        held += piece.length;
      } else {
        if (room > 0) parts.push(piece.subarray(0, room));
        held = maxLineBytes;
        cut += piece.length - Math.max(room, 0);
      }
      if (nl === -1) break;
      finish();
      start = nl + 1;
    }
  });
  stream.on('end', () => {
    if (held > 0 || cut > 0) finish();
  });
}
