// Event output of a rank: JSON lines on stdout, written synchronously so events keep their order
// and a crash loses at most the line being written. Everything else a rank prints goes to stderr
// (console.log is redirected there), so stdout stays a clean event channel.
import { writeSync } from 'node:fs';
import { encodeEvent, makeEvent, type CohortEvent, type EventPayload } from '../protocol';

export type Emit = (payload: EventPayload) => void;

export function stdoutEmitter(): Emit {
  return (payload) => writeEvent(makeEvent(payload) as CohortEvent);
}

/** Writes a complete event (e.g. one relayed from a rank, keeping its own timestamp). */
export function writeEvent(e: CohortEvent): void {
  writeStdoutLine(encodeEvent(e));
}

/** Sleeps this thread (Atomics.wait: allowed on Node's main thread). */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Writes one line to stdout synchronously (the process may exit right after); a closed pipe drops it. */
export function writeStdoutLine(text: string): void {
  const buf = Buffer.from(text + '\n');
  let off = 0;
  let waits = 0;
  while (off < buf.length) {
    try {
      off += writeSync(1, buf, off);
    } catch (err) {
      // A pipe that is full (its reader slow, or stopped: then the lifeline watcher ends this rank,
      // train/lifeline.ts): retry after 1, 2, ... 10 ms, not in a spin; a closed pipe: nobody listens.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      pause(Math.min(10, ++waits));
    }
  }
}

/** Keeps stdout for events only: libraries that print with console.log are sent to stderr. */
export function reserveStdoutForEvents(): void {
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
}

/** The last lines a rank logged, for the `error` event's logTail. */
export class LogTail {
  private lines: string[] = [];
  constructor(private readonly max = 30) {}
  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.shift();
  }
  get(): string[] {
    return [...this.lines];
  }
}
