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
  | 'rank-hung' // a peer's process is there but has made no progress (silent past its hang limit)
  | 'aborted'
  | 'disposed';

export class CollectiveError extends CohortError {
  declare readonly code: CollectiveErrorCode;

  constructor(code: CollectiveErrorCode, message: string, opts: CohortErrorOptions = {}) {
    super(code, opts.hint ? `${message}; ${opts.hint}` : message, opts);
    this.name = 'CollectiveError';
  }
}

/** What rank 0 knew when it found a rank hung (issue 21 item 4): the op every other rank waits in and each rank's last phase. */
export interface HangReport {
  /** The op in flight on the reporting rank ('none' between ops) and its sequence number (the same on every rank). */
  collective: string;
  seq: number;
  lastPhases: { rank: number; host: string; phase: string; step?: number; ageMs?: number }[];
}

/** A peer rank is gone (process died, socket closed or errored, heartbeat timed out, or it left). */
export class PeerLostError extends CollectiveError {
  constructor(
    readonly peerRank: number,
    readonly peerHost: string,
    readonly reason: string,
    opts: { cause?: unknown; observedBy?: number; hang?: HangReport } = {},
  ) {
    const seen = opts.observedBy === undefined ? '' : ` (seen by rank ${opts.observedBy})`;
    super(opts.hang ? 'rank-hung' : 'peer-lost', opts.hang ? `rank ${peerRank} on host ${peerHost} hung: ${reason}${seen}` : `rank ${peerRank} on host ${peerHost} was lost: ${reason}${seen}`, {
      hint: opts.hang
        ? `rank ${peerRank}'s process on ${peerHost} is there but makes no progress: check it (ps -o stat,pid,cmd: T = stopped, D = stuck in I/O), its host's load and its log; the run must be restarted`
        : `check rank ${peerRank}'s log on ${peerHost}; the collective cannot continue and the run must be restarted`,
      cause: opts.cause,
    });
    this.name = 'PeerLostError';
    this.observedBy = opts.observedBy;
    this.hang = opts.hang;
  }

  readonly observedBy: number | undefined;
  /** Set when the peer was found hung (code 'rank-hung'), not gone. */
  readonly hang: HangReport | undefined;
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
