// Which recorded run a user means: the one place a run argument (an id or a prefix of one) becomes a
// run. The rule is git's for abbreviated commits: a whole id, else a prefix that exactly one run's id
// starts with; a prefix that several ids start with is refused with how many match (never the
// newest of them silently: a rename or a stop would hit the wrong run), and so is one that none does.
// Every command that takes a run (runs show, rename, rm, export, attach, stop) goes through
// resolveRun; `runs export --match PREFIX` asks for every match explicitly (matchingRuns).
import { CohortError } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';
import { RunIdError, isValidRunId, type RunStore } from './run-store';

export class RunSelectError extends CohortError {
  constructor(code: 'run-ambiguous' | 'run-not-found', message: string, hint: string) {
    super(code, message, { hint });
    this.name = 'RunSelectError';
  }
}

/** The run `arg` names (its id, or a prefix of exactly one id); a RunIdError or RunSelectError otherwise. */
export function resolveRun(store: Pick<RunStore, 'meta' | 'list' | 'runsDir'>, arg: string): RunMeta {
  if (!isValidRunId(arg)) throw new RunIdError(arg);
  const exact = store.meta(arg);
  if (exact) return exact;
  const matches = store.list().filter((m) => m.id.startsWith(arg));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new RunSelectError('run-not-found', `no run matches ${arg} in ${store.runsDir}`, '"cohort runs list" shows the recorded runs');
  const shown = matches.slice(0, 5).map((m) => m.id).join(', ');
  throw new RunSelectError(
    'run-ambiguous',
    `ambiguous: ${matches.length} runs match ${arg} (${shown}${matches.length > 5 ? ', ...' : ''})`,
    'give more of the id (or, for runs export, --match PREFIX to take them all)',
  );
}

/** Every run whose id starts with `prefix`, oldest first (the order a comparison reads, the first as baseline); none is an error. */
export function matchingRuns(store: Pick<RunStore, 'list' | 'runsDir'>, prefix: string): RunMeta[] {
  if (!isValidRunId(prefix)) throw new RunIdError(prefix);
  const matches = store.list().filter((m) => m.id.startsWith(prefix)).reverse();
  if (!matches.length) throw new RunSelectError('run-not-found', `no run matches ${prefix} in ${store.runsDir}`, '"cohort runs list" shows the recorded runs');
  return matches;
}
