// Errors of the collective layer. Each carries a stable `code` (for events and tests), `fatal`
// (the run cannot continue on this collective) and a `hint` saying what to do next, following the
// house CohortError (trainer/protocol/errors.ts), whose subclasses they are.
import { CohortError, type CohortErrorOptions } from '../protocol/errors';

export type CollectiveErrorCode =
  | 'bad-env' // a rendezvous environment variable is missing or malformed
  | 'bad-argument' // a caller passed an invalid argument (root out of range, ...)
  | 'no-backend' // no backend in the ordered list fits this world
  | 'rendezvous-timeout'
  | 'rendezvous-mismatch' // world size / duplicate rank / protocol version disagreement
  | 'master-port-in-use'
  | 'connect-failed'
  | 'protocol' // peers disagree on the sequence of collectives, or sent garbage
  | 'peer-lost'
  | 'aborted'
  | 'disposed';

export class CollectiveError extends CohortError {
  declare readonly code: CollectiveErrorCode;

  constructor(code: CollectiveErrorCode, message: string, opts: CohortErrorOptions = {}) {
    super(code, opts.hint ? `${message}; ${opts.hint}` : message, opts);
    this.name = 'CollectiveError';
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
    super('peer-lost', `rank ${peerRank} on host ${peerHost} was lost: ${reason}${seen}`, {
      hint: `check rank ${peerRank}'s log on ${peerHost}; the collective cannot continue and the run must be restarted`,
      cause: opts.cause,
    });
    this.name = 'PeerLostError';
  }
}

export function abortedError(what: string, signal: AbortSignal | undefined): CollectiveError {
  const reason: unknown = signal?.reason;
  const detail = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new CollectiveError('aborted', `${what} was aborted (${detail})`, { cause: reason });
}

export function errnoCode(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
