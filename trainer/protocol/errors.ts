// One error base for everything that can cross a process or the Api (STYLE.md "Errors"): a stable
// kebab-case `code` (for scripts, tests and the dashboard), a `hint` saying what to do next,
// `fatal` (the operation or run cannot continue) and the standard `cause`. Plain TypeScript: the
// trainer, core, the CLI and the renderer share it. Across a process boundary an error travels as
// plain data, {name, code, message, hint} (VS Code's {name, message} idea plus our code and hint):
// `toErrorInfo` writes it from any thrown value, `CohortError.fromInfo` reads it back.

/**
 * The fields of an error on every wire, defined once (issue 24 item 5). Each wire is this shape with
 * what it requires or adds, never a shape of its own: ErrorInfo (IPC, WebSocket, a host command's
 * failure line: `code` required, the thrower's `name`, the `runId`), ErrorEvent (the event log: `host`
 * and `rank` required, the rank's `logTail`, a hang's details; event-types.ts) and RunStateError (a
 * host's state.json: `host` and `rank` required; run-state.ts). A field means the same on each.
 */
export interface ErrorFields {
  /** Stable kebab-case (ERROR_CODE_RE), for scripts, tests and the dashboard. Optional only in records and events written by older bundles. */
  code?: string;
  /** What failed, with the bad value. */
  message: string;
  /** What to do next, when the failing side knew (CohortError's hint). */
  hint?: string;
  /** The host the failure concerns, where the error named one (SshError's host): the dashboard's sentence names it. */
  host?: string;
  /** The rank the failure concerns; -1 when it is not a rank's (a host lost, a bad spec, busy slots). */
  rank?: number;
}

/** What an error looks like on the Api's wire (IPC, WebSocket) and in a host command's failure line. */
export interface ErrorInfo extends ErrorFields {
  /** The error class on the side that threw it ('SshError', 'ProfileError', ...), when known. */
  name?: string;
  code: string;
  /** The run the failure belongs to, where one exists (a launch that failed after its run id was made, issue 22): the dashboard links to it. */
  runId?: string;
}

export interface CohortErrorOptions {
  hint?: string;
  cause?: unknown;
  /** Default true: the operation (or the run) cannot go on. */
  fatal?: boolean;
}

/** kebab-case: lower-case words joined by '-' ('ssh-auth', 'bad-config'). */
export const ERROR_CODE_RE = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export class CohortError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly fatal: boolean;

  constructor(code: string, message: string, opts: CohortErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    // Subclasses set their own name (a bundler may rename classes, so new.target.name is not used).
    this.name = 'CohortError';
    this.code = code;
    this.hint = opts.hint || undefined;
    this.fatal = opts.fatal ?? true;
  }

  /** The wire form; JSON.stringify(err) writes it too. */
  toJSON(): ErrorInfo {
    return toErrorInfo(this);
  }

  /** Rebuilds an error from its wire form (the name of the original class is kept). */
  static fromInfo(info: ErrorInfo): CohortError {
    const e = new CohortError(info.code, info.message, info.hint ? { hint: info.hint } : {});
    if (info.name) e.name = info.name;
    return e;
  }
}

/**
 * The wire form of any thrown value. A value with a string `code` (CohortError, Node's errno
 * errors) keeps it; anything else gets `fallbackCode`.
 */
export function toErrorInfo(err: unknown, fallbackCode = 'error'): ErrorInfo {
  const e = err as { name?: unknown; code?: unknown; message?: unknown; hint?: unknown; host?: unknown; runId?: unknown } | null | undefined;
  const isObj = typeof e === 'object' && e !== null;
  return {
    ...(isObj && typeof e.name === 'string' && e.name ? { name: e.name } : {}),
    code: isObj && typeof e.code === 'string' && e.code ? e.code : fallbackCode,
    message: isObj && typeof e.message === 'string' ? e.message : String(err),
    ...(isObj && typeof e.hint === 'string' && e.hint ? { hint: e.hint } : {}),
    ...(isObj && typeof e.host === 'string' && e.host ? { host: e.host } : {}),
    ...(isObj && typeof e.runId === 'string' && e.runId ? { runId: e.runId } : {}),
  };
}
