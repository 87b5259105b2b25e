// Maps `cohort run` flags onto TrainConfig. The flag names come from FLAG_OF in the protocol
// (one definition), so the CLI, the dashboard and error messages agree on them.
import { parseArgs } from 'node:util';
import { ConfigError, DEFAULT_TRAIN_CONFIG, FLAG_OF, decodeTrainConfig, type TrainConfig } from '../../trainer/protocol';
import { UsageError } from './exit-codes';

type Key = keyof TrainConfig;
const KEYS = Object.keys(DEFAULT_TRAIN_CONFIG) as Key[];

/** parseArgs option specs for every training flag. */
export function trainFlagOptions(): Record<string, { type: 'string' | 'boolean' }> {
  const out: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const k of KEYS) out[FLAG_OF[k].slice(2)] = { type: typeof DEFAULT_TRAIN_CONFIG[k] === 'boolean' ? 'boolean' : 'string' };
  return out;
}

/** Builds a validated TrainConfig from parsed flag values (over optional defaults, e.g. a profile's). */
export function trainConfigFromFlags(values: Record<string, string | boolean | undefined>, defaults: Partial<TrainConfig> = {}): TrainConfig {
  const raw: Record<string, unknown> = { ...defaults };
  for (const k of KEYS) {
    const flag = FLAG_OF[k];
    const v = values[flag.slice(2)];
    if (v === undefined) continue;
    if (typeof DEFAULT_TRAIN_CONFIG[k] === 'number') {
      const n = Number(v);
      if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag}: expected a number, got ${JSON.stringify(v)}`);
      raw[k] = n;
    } else raw[k] = v;
  }
  // --epochs on the command line overrides a default step budget from a profile.
  if (values.epochs !== undefined && values.steps === undefined) delete raw.steps;
  try {
    return decodeTrainConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

export function parseCommandLine<T extends Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>>(args: string[], options: T, allowPositionals = true) {
  // `--lr -1` would read "-1" as an option: join a string flag with a negative-number value.
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    if (name && options[name]?.type === 'string' && /^-\d/.test(args[i + 1] ?? '')) joined.push(`${a}=${args[++i]}`);
    else joined.push(a);
  }
  try {
    return parseArgs({ args: joined, options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}
