// Errors of the collective layer. Each carries a stable `code` (for events and tests), `fatal`
// (the run cannot continue on this collective) and a `hint` saying what to do next, following the
// house CohortError shape (STYLE.md "Errors"); they live here until a shared CohortError exists.

export type CollectiveErrorCode =
  | 'BAD_ENV' // a rendezvous environment variable is missing or malformed
  | 'BAD_ARGUMENT' // a caller passed an invalid argument (root out of range, ...)
  | 'NO_BACKEND' // no backend in the ordered list fits this world
  | 'RENDEZVOUS_TIMEOUT'
  | 'RENDEZVOUS_MISMATCH' // world size / duplicate rank / protocol version disagreement
  | 'MASTER_PORT_IN_USE'
  | 'CONNECT_FAILED'
  | 'PROTOCOL' // peers disagree on the sequence of collectives, or sent garbage
  | 'PEER_LOST'
  | 'ABORTED'
  | 'DISPOSED';

export class CollectiveError extends Error {
  readonly code: CollectiveErrorCode;
  readonly fatal: boolean;
  readonly hint: string | undefined;

  constructor(code: CollectiveErrorCode, message: string, opts: { hint?: string; cause?: unknown; fatal?: boolean } = {}) {
    super(opts.hint ? `${message}; ${opts.hint}` : message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CollectiveError';
    this.code = code;
    this.fatal = opts.fatal ?? true;
    this.hint = opts.hint;
  }
}

/** A peer rank is gone (process died, socket closed or errored, heartbeat timed out, or it left). */
export class PeerLostError extends CollectiveError {
  constructor(
    readonly peerRank: number,
    readonly peerHost: string,
    readonly reason: string,
    opts: { cause?: unknown; observedBy?: number } = {},
  ) {
    const seen = opts.observedBy === undefined ? '' : ` (seen by rank ${opts.observedBy})`;
    super('PEER_LOST', `rank ${peerRank} on host ${peerHost} was lost: ${reason}${seen}`, {
      hint: `check rank ${peerRank}'s log on ${peerHost}; the collective cannot continue and the run must be restarted`,
      cause: opts.cause,
    });
    this.name = 'PeerLostError';
  }
}

export function abortedError(what: string, signal: AbortSignal | undefined): CollectiveError {
  const reason: unknown = signal?.reason;
  const detail = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new CollectiveError('ABORTED', `${what} was aborted (${detail})`, { cause: reason });
}

export function errnoCode(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
