// A rank's last words (issue 24): the report a rank makes as it stops itself because its agent is
// silent (`agent-silent`, train/lifeline.ts; torch: cohort_torch/distributed.py) goes into a file of
// its own in the run's record dir, named by the agent in the rank's environment (LAST_WORDS_ENV)
// (tfjs: there only, unless it cannot be written; torch: then on stdout too). Stdout is not enough: it is a socketpair from the agent (~80 kB took
// filler here), nobody reads it while the agent is stopped, a rank that logs fills it (~5 s of fast
// step events), and the report cannot be written. The agent removes the file before it starts the
// rank and, when the rank has exited without a report on stdout, relays the file's event as the
// rank's own: the record says `agent-silent` with the rank and host, not `rank-exited`.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { EventLineDecoder, type ErrorEvent } from '../protocol';

/** Where rank `rank` of this host writes its last words (one file per rank of the run's record dir). */
export function lastWordsPath(runDir: string, rank: number): string {
  return join(runDir, `rank-${rank}.last-words.json`);
}

/** Removes a previous start's last words (a restart reuses the name). */
export function clearLastWords(path: string): void {
  rmSync(path, { force: true });
}

/**
 * The rank's last words, if it wrote any, and the file removed: its error event, or undefined when
 * there is none. A file that does not decode is said in `warn` (with its path) and ignored.
 */
export function takeLastWords(path: string, warn: (message: string) => void): ErrorEvent | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined; // none: the rank wrote no last words (or was started without the variable)
  }
  clearLastWords(path);
  const res = new EventLineDecoder().decodeLine(text);
  if (res?.kind === 'event' && res.event.type === 'error') return res.event;
  warn(`a rank's last-words file ${path} is not an error event (${res?.kind === 'invalid' ? res.error : (res?.kind ?? 'empty')}): ignored`);
  return undefined;
}
