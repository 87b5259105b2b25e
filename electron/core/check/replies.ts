// The check's host commands answer with JSON lines (trainer/protocol/check.ts): the last one that
// parses is the answer (lastJson, one rule in trainer/protocol). And a bounded wait whose timer never outlives what it waited for.

export { lastJson } from '../../../trainer/protocol';

/**
 * `p`, or `fallback` once `ms` passed; the timer is cleared as soon as `p` settles. (A timer left
 * pending kept the `cohort check` process alive ~45 s after its answer: the CLI ends when nothing is.)
 */
export function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([p, new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() => clearTimeout(timer));
}
