// Distinct exit codes so scripts can tell failures apart (documented in the README).
import { CohortError } from '../../trainer/protocol';
export const EXIT = {
  ok: 0,
  /** The training itself failed (a rank died, diverged, ran out of memory...). */
  trainingFailed: 1,
  /** Bad flags or input: fix the command line. */
  usage: 2,
  /** Could not reach, log in to or deploy to a host (name resolution, refused, timeout, auth, host key, deploy). */
  connection: 3,
  /** Stopped by Ctrl-C or `cohort stop`. */
  cancelled: 130,
} as const;

export class UsageError extends CohortError {
  constructor(message: string) {
    super('usage', message);
    this.name = 'UsageError';
  }
}
