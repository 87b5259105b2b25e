// The one-writer lock of a run's local history (run-store.ts header): `writer.lock` holds the pid
// and start time of the process keeping events.jsonl and meta.json; readers keep private copies.
import { readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isFinished } from '../../../trainer/protocol';

const LOCK = 'writer.lock';

/** This process's identity in a lock: pid and start time (so a reused pid is not taken for the holder). */
function holderId(pid: number): string | undefined {
  try {
    // /proc/<pid>/stat field 22 (starttime); fields after the last ')' are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch {
    // no /proc (macOS): the pid alone, alive or not
    try {
      process.kill(pid, 0);
      return `${pid}`;
    } catch (err) {
      return (err as { code?: string }).code === 'EPERM' ? `${pid}` : undefined;
    }
  }
}

function holderAlive(line: string): boolean {
  const pid = Number(line.split(' ')[0]);
  if (!(pid > 0)) return false;
  const now = holderId(pid);
  return now !== undefined && (now === line || !line.includes(' ') || !now.includes(' '));
}

/** Takes the run's writer lock; false when a live process holds it (this one included). */
export function takeWriterLock(dir: string): boolean {
  const file = join(dir, LOCK);
  const me = holderId(process.pid) ?? `${process.pid}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, me + '\n', { flag: 'wx', mode: 0o600 });
      return true;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
    }
    let held = '';
    try {
      held = readFileSync(file, 'utf8').trim();
    } catch {
      continue; // released meanwhile: try again
    }
    // A lock being written right now reads empty: its writer is alive.
    if (held === '' || holderAlive(held)) return false;
    rmQuiet(file); // its holder is gone (killed): reclaim
  }
  return false;
}

/** Whether a live process (this one included) keeps this run's history. */
export function writerLockHeld(dir: string): boolean {
  try {
    const held = readFileSync(join(dir, LOCK), 'utf8').trim();
    return held === '' || holderAlive(held);
  } catch {
    return false;
  }
}

export function releaseWriterLock(dir: string): void {
  const file = join(dir, LOCK);
  try {
    if (readFileSync(file, 'utf8').trim() === (holderId(process.pid) ?? `${process.pid}`)) unlinkSync(file);
  } catch {
    // not there: nothing to release
  }
}

export function historyEnded(dir: string): boolean {
  try {
    const status = (JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as { status?: unknown }).status;
    return typeof status === 'string' && isFinished(status);
  } catch {
    return false;
  }
}

/** Private copies left by readers that were killed. */
export function removeDeadReaderCopies(dir: string): void {
  for (const f of readdirSync(dir)) {
    const m = /^events\.reader-(\d+)\.jsonl$/.exec(f);
    if (m && Number(m[1]) !== process.pid && holderId(Number(m[1])) === undefined) rmQuiet(join(dir, f));
  }
}

export function rmQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}
