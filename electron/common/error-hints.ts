// What to do next, worded for the surface that shows it (issue 22 items 8 and the GUI wording):
// core's errors carry the CLI's hint (a terminal user passes flags: `--accept-new-host-key`,
// `cohort deploy --force`); the dashboard has buttons instead. The one place an error's hint is
// chosen per surface: every view that shows an error's hint asks `hintFor(error, 'gui')` (the
// sentence of error-wording.ts for its code, naming its host), the CLI prints `hintFor(error,
// 'cli')` (the hint as core wrote it, with the error's own specifics). An information notice's code
// (NOTICE_CODES) and a code the table does not word (a test keeps that from happening) keep core's hint.
import { guiWording, NOTICE_CODES } from './error-wording';
export type HintSurface = 'cli' | 'gui';

/** An error as the views hold it: its code, message, core's hint, and the host it names when known. */
export interface HintedError {
  code?: string | undefined;
  hint?: string | undefined;
  /** The host the error concerns (SshError's host, an error event's host); fills the GUI sentence. */
  host?: string | undefined;
}

/** The hint to show on `surface`, or undefined when there is none. */
export function hintFor(e: HintedError, surface: HintSurface): string | undefined {
  if (surface === 'gui' && e.code && !NOTICE_CODES.includes(e.code)) return guiWording(e.code, e.host) ?? e.hint;
  return e.hint;
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
