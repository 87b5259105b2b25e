// A profile's Slurm `extraArgs` read the way sbatch's getopt_long reads them (Slurm 22.05,
// `sbatch --help`), so an option Cohort sets itself cannot come back in another spelling:
//  - short options cluster and take an attached value: `-vJx` is -v, then -J with value "x";
//    `-pnosuchpart` is -p with value "nosuchpart";
//  - a long option may be abbreviated to any unambiguous prefix: `--job=x` is --job-name=x; an
//    exact name wins over longer ones (`--gpus` is --gpus, not --gpus-per-node).
// A long prefix that could mean an option Cohort sets is refused even where sbatch would call it
// ambiguous (`--par` is --partition or --parsable): neither may be passed. Options not in the
// table below go to sbatch as given; sbatch judges them.

/** sbatch options Cohort sets itself (from the scheduler fields or the run), long name → the profile field to use ('' for none). */
export const SBATCH_OWNED_LONG: Record<string, string> = {
  nodes: 'nodes', 'ntasks-per-node': 'tasksPerNode', ntasks: 'tasksPerNode', partition: 'partition', time: 'timeLimit', account: 'account', 'gpus-per-node': 'gpusPerNode',
  'job-name': '', output: '', error: '', chdir: '', wrap: '', requeue: '', 'no-requeue': '', parsable: '',
};

/** Short spellings of the owned options. */
const OWNED_SHORT: Record<string, string> = { N: 'nodes', n: 'ntasks', p: 'partition', t: 'time', A: 'account', J: 'job-name', o: 'output', e: 'error', D: 'chdir' };

/** sbatch's short options that take a value (the rest of the word, or the next word). */
const SHORT_WITH_VALUE = new Set('aAbBcCdDeFGiJLmMnNopqStwx'.split(''));
/** sbatch's short options without one (clustered: `-vH`). */
const SHORT_FLAGS = new Set('hHkOQsuvVW'.split(''));

/** sbatch's other long options (22.05): only an exact name among them counts against an owned one that it prefixes. */
const OTHER_LONG = new Set(['gpus', 'time-min', 'ntasks-per-core', 'ntasks-per-socket', 'ntasks-per-gpu', 'nodefile', 'nodelist', 'export', 'exclusive', 'nice', 'propagate']);

export interface SbatchOptionRead {
  /** The option as getopt reads it: `--job-name`, `-J`. */
  flag: string;
  /** Its long name, when it is one Cohort sets. */
  owned?: string;
  /** Its attached value, if any (`-pfoo`: foo; `--partition=foo`: foo). */
  value?: string;
}

/** The sbatch options one extraArgs word holds (a short cluster holds several). */
export function readSbatchWord(word: string): SbatchOptionRead[] {
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    const value = eq < 0 ? undefined : word.slice(eq + 1);
    const owned = ownedLong(name);
    return [{ flag: `--${owned ?? name}`, ...(owned ? { owned } : {}), ...(value === undefined ? {} : { value }) }];
  }
  const out: SbatchOptionRead[] = [];
  for (let i = 1; i < word.length; i++) {
    const c = word[i]!;
    const owned = OWNED_SHORT[c];
    if (SHORT_WITH_VALUE.has(c)) {
      const value = word.slice(i + 1);
      out.push({ flag: `-${c}`, ...(owned ? { owned } : {}), ...(value ? { value } : {}) });
      break; // the rest of the word is its value
    }
    out.push({ flag: `-${c}` });
    if (!SHORT_FLAGS.has(c)) break; // unknown to sbatch: it refuses the word itself
  }
  return out;
}

/** The owned long option `name` spells (exactly, or as a prefix getopt could expand to it), if any. */
function ownedLong(name: string): string | undefined {
  if (name in SBATCH_OWNED_LONG) return name;
  if (!name || OTHER_LONG.has(name)) return undefined;
  return Object.keys(SBATCH_OWNED_LONG).find((o) => o.startsWith(name));
}

/** Why Cohort refuses this extraArgs word (an option it sets, however spelled), or undefined. */
export function refusedSbatchWord(word: string): string | undefined {
  for (const o of readSbatchWord(word)) {
    if (!o.owned) continue;
    const field = SBATCH_OWNED_LONG[o.owned]!;
    const plain = word === o.flag || word.startsWith(`${o.flag}=`);
    const spelled = plain ? o.flag : `"${word}" (sbatch reads it as --${o.owned}${o.value !== undefined ? `=${o.value}` : ''})`;
    return field ? `${spelled} is set from scheduler.${field}; set that field instead` : `${spelled} is set by Cohort for every run; remove it`;
  }
  return undefined;
}
