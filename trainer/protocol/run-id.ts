// The one run-id rule (issue 24 item 5): the client's history, the hosts' records and the CLI all
// check ids with it, so an id one side accepts the other never refuses. Plain TypeScript.
import { CohortError } from './errors';

/**
 * What a run id may be: letters, digits, `-` and `_`, starting with a letter or digit, at most 100
 * characters (newRunId makes `20261123-091800-ab12`). Anything else (`../../outside`, `a/b`) never
 * reaches a path.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export class RunIdError extends CohortError {
  declare readonly hint: string;
  constructor(
    readonly runId: string,
    hint = '"cohort runs list" shows the recorded runs',
  ) {
    super('bad-run-id', `${JSON.stringify(runId)} is not a run id (letters, digits, "-" and "_" only). ${hint.charAt(0).toUpperCase()}${hint.slice(1)}`, { hint });
    this.name = 'RunIdError';
  }
}

export function isValidRunId(id: string): boolean {
  return RUN_ID_PATTERN.test(id);
}

/** `id`, or a RunIdError when it is not a run id. */
export function checkRunId(id: string): string {
  if (!isValidRunId(id)) throw new RunIdError(id);
  return id;
}

export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}
