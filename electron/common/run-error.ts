// A run's error as its history keeps it (RunMeta.error): the one error shape every wire uses
// (ErrorFields, trainer/protocol/errors.ts: code, message, hint, host, rank), since session 8. Its
// `message` is the sentence History shows ("rank 1 on h2: ..."), `host`/`rank` the same facts apart,
// so the dashboard's banner and the CLI need no wording parsed back. Records written before held
// `error` as that sentence (a launch failure's with " (hint: ...)" appended) and the code beside it
// in `errorCode`: decodeRunError reads both. Plain TypeScript (core, the CLI and the renderer).
import type { ErrorFields } from '../../trainer/protocol/errors';

export type RunError = ErrorFields;

/** The history's error from a host's or an event's error ({host, rank, message, code, hint}). */
export function runErrorOf(e: { host: string; rank: number; message: string; code?: string; hint?: string }): RunError {
  return {
    ...(e.code ? { code: e.code } : {}),
    message: `${e.rank >= 0 ? `rank ${e.rank} on ` : ''}${e.host}: ${e.message}`,
    ...(e.hint ? { hint: e.hint } : {}),
    ...(e.host ? { host: e.host } : {}),
    rank: e.rank,
  };
}

const OLD_HINT = / \(hint: ([^]*)\)$/;

/**
 * A record's `error` as this version reads it: the one shape, from it or from the string (and
 * `errorCode`) written before session 8; undefined when there is none or it is neither.
 */
export function decodeRunError(error: unknown, errorCode?: unknown): RunError | undefined {
  const code = typeof errorCode === 'string' && errorCode ? { code: errorCode } : {};
  if (typeof error === 'string') {
    if (!error) return undefined;
    const hint = OLD_HINT.exec(error)?.[1];
    const host = /^launch failed on (\S+?):/.exec(error)?.[1];
    return { ...code, message: hint === undefined ? error : error.slice(0, -` (hint: ${hint})`.length), ...(hint ? { hint } : {}), ...(host ? { host } : {}) };
  }
  if (typeof error !== 'object' || error === null || typeof (error as { message?: unknown }).message !== 'string') return undefined;
  const e = error as Record<string, unknown>;
  return {
    ...(typeof e.code === 'string' && e.code ? { code: e.code } : code),
    message: e.message as string,
    ...(typeof e.hint === 'string' && e.hint ? { hint: e.hint } : {}),
    ...(typeof e.host === 'string' && e.host ? { host: e.host } : {}),
    ...(typeof e.rank === 'number' && Number.isInteger(e.rank) ? { rank: e.rank } : {}),
  };
}

/** One line for the CLI and CSV: the message, its hint in brackets when it adds something. */
export function runErrorText(e: RunError): string {
  return e.hint && !e.message.toLowerCase().includes(e.hint.toLowerCase()) ? `${e.message} (hint: ${e.hint})` : e.message;
}
