// What to do next, worded for the surface that shows it (issue 22: one truth in GUI and CLI): the
// sentence of error-wording.ts for the error's code, one row for both, naming its host (and an errno
// error's path or address); the dashboard's words in the views (`hintFor(error, 'gui')`: views and
// buttons), the terminal's in `cohort` (`hintLines(error)`: commands and flags), followed there by
// core's own hint when it says more (the specifics of this error: a partition list, a key path).
// An information notice's code (NOTICE_CODES) and a code the table does not word (a test keeps that
// from happening for Cohort's own codes) keep core's hint alone.
import { cliWording, guiWording, NOTICE_CODES, type WordingFill } from './error-wording';
export type HintSurface = 'cli' | 'gui';

/** An error as the views hold it: its code, message, core's hint, and the host it names when known. */
export interface HintedError extends WordingFill {
  code?: string | undefined;
  hint?: string | undefined;
  /** The host the error concerns (SshError's host, an error event's host); fills the sentence. */
  host?: string | undefined;
}

/** The hint to show on `surface` (the code's sentence, else core's hint), or undefined when there is none. */
export function hintFor(e: HintedError, surface: HintSurface): string | undefined {
  if (!e.code || NOTICE_CODES.includes(e.code)) return e.hint;
  return (surface === 'gui' ? guiWording(e.code, e.host, e) : cliWording(e.code, e.host, e)) ?? e.hint;
}

/**
 * The terminal's hint lines for an error: the code's sentence, then core's own hint when it adds
 * something (not already in the message or the sentence); none when neither exists.
 */
export function hintLines(e: HintedError & { message: string }): string[] {
  const sentence = hintFor(e, 'cli');
  const said = (t: string, where: string) => where.toLowerCase().includes(t.toLowerCase());
  const out: string[] = [];
  if (sentence && !(sentence === e.hint && said(sentence, e.message))) out.push(sentence);
  if (e.hint && e.hint !== sentence && !said(e.hint, e.message) && !said(e.hint, sentence ?? '')) out.push(e.hint);
  return out;
}

/**
 * The message to show on `surface`. Core's SSH errors end their message with the CLI's hint
 * ("… Verify the fingerprint, then connect with --accept-new-host-key …"); where the dashboard has
 * its own wording, that sentence is taken out of the message (the GUI hint is shown instead).
 */
export function messageFor(e: HintedError & { message: string }, surface: HintSurface): string {
  if (surface === 'cli' || !e.hint || !e.code || hintFor(e, 'gui') === e.hint) return e.message;
  const i = e.message.toLowerCase().lastIndexOf(e.hint.toLowerCase());
  if (i < 0) return e.message;
  return (e.message.slice(0, i).replace(/[.\s]+$/, '') + e.message.slice(i + e.hint.length)).trim();
}

/** The hint once: shown only when the message does not already end with it (SSH errors often do). */
export function hintBesides(e: HintedError & { message: string }, surface: HintSurface): string {
  const h = hintFor(e, surface);
  return h && !messageFor(e, surface).toLowerCase().includes(h.toLowerCase()) ? h : '';
}
