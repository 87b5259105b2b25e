// `cohort run`'s training flags, derived from the run configuration's table
// (TRAIN_CONFIG_TABLE in the protocol): the parseArgs options, the flag values as overrides, and
// the usage lines. Nothing here merges profile defaults or decodes the whole config: core does
// that once (resolveRunConfig), for every client.
import { parseArgs } from 'node:util';
import { TRAIN_ROWS, engineLines, type TrainConfig, type TrainRow } from '../../trainer/protocol';
import { UsageError } from './exit-codes';

/** parseArgs option specs for every training flag. */
export function trainFlagOptions(): Record<string, { type: 'string' | 'boolean' }> {
  return Object.fromEntries(TRAIN_ROWS.map((r) => [r.flag.slice(2), { type: r.kind === 'bool' ? 'boolean' : 'string' }]));
}

/**
 * The training settings given on the command line, as overrides (absent flags are absent). Only
 * the text → number step happens here; ranges and rules are checked by core's decode, whose errors
 * name the same flags.
 */
export function trainOverridesFromFlags(values: Record<string, string | boolean | (string | boolean)[] | undefined>): Partial<TrainConfig> {
  const out: Record<string, unknown> = {};
  for (const r of TRAIN_ROWS) {
    const v = values[r.flag.slice(2)];
    if (v === undefined) continue;
    if (r.kind === 'int' || r.kind === 'float') {
      const n = Number(v);
      if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${r.flag}: expected a number, got ${JSON.stringify(v)}`);
      out[r.key] = n;
    } else out[r.key] = v;
  }
  return out as Partial<TrainConfig>;
}

/** Usage lines for the training flags: flag, value, help (with unit) and default, one per row. */
export function trainFlagUsage(): string {
  const left = TRAIN_ROWS.map((r) => `${r.flag}${valueOf(r)}`);
  const width = Math.max(...left.map((l) => l.length)) + 2;
  const indent = ' '.repeat(width + 4);
  return TRAIN_ROWS.map((r, i) => [`  ${left[i]!.padEnd(width)}${r.help}${valuesOf(r)}${defaultOf(r)}`, ...engineLines(r).map((l) => indent + l)].join('\n')).join('\n');
}

function valueOf(r: TrainRow): string {
  if (r.kind === 'bool') return '';
  if (r.kind === 'enum' && !r.arg) return ' ' + r.values.join('|');
  return ' ' + (r.arg ?? 'VALUE');
}

/** An enum with a placeholder (its values too long for the flag column) lists them after the help. */
function valuesOf(r: TrainRow): string {
  return r.kind === 'enum' && r.arg ? ` (${r.arg}: ${r.values.join('|')})` : '';
}

function defaultOf(r: TrainRow): string {
  if (r.kind === 'bool') return ` [default: ${r.default ? 'on' : 'off'}]`;
  return ` [default: ${r.default === '' ? 'none' : String(r.default)}]`;
}

export function parseCommandLine<T extends Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>>(args: string[], options: T, allowPositionals = true) {
  const joined = joinNegativeValues(args, (name) => options[name]?.type === 'string');
  try {
    return parseArgs({ args: joined, options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

/** `--lr -1` would read "-1" as an option: joins a string flag with a negative-number value. */
export function joinNegativeValues(args: string[], takesValue: (name: string) => boolean): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    if (name && takesValue(name) && /^-\d/.test(args[i + 1] ?? '')) joined.push(`${a}=${args[++i]}`);
    else joined.push(a);
  }
  return joined;
}
