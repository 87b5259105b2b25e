// Temp files of checkpoint writes cut short (issue 24 defect 12): a rank killed while writing leaves
// `.NAME.PID.HEX.tmp` (util/atomic-write.ts, the tfjs engine) or `NAME.PID.tmp` (the torch engine's
// checkpoint.py) beside the checkpoints. Resume ignores them, but each is a checkpoint's size
// (80–92 MB measured), forever. The agent removes those whose writer is no longer alive before its
// ranks start or resume (only the host of rank 0: the only writer).
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const TEMP_RE = /\.(\d+)(?:\.[0-9a-f]+)?\.tmp$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the temp files in `dir` whose writing process is gone; returns their names. */
export function cleanStaleTemps(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return []; // no checkpoints yet
  }
  const gone: string[] = [];
  for (const n of names) {
    const m = TEMP_RE.exec(n);
    if (!m || alive(Number(m[1]))) continue;
    try {
      rmSync(join(dir, n), { force: true });
      gone.push(n);
    } catch {
      // not ours to remove (permissions): left as it is
    }
  }
  return gone;
}
