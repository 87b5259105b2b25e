// The shape of a `cohort` command and everything derived from it: argument parsing (node:util
// parseArgs, strict), `--help` text, and the errors for unknown commands and flags with the
// closest valid name. One table (commands.ts) lists the commands; nothing else spells their usage.
//
// Why parseArgs and not a library (commander, yargs, cac): the table already holds what those
// libraries would (names, options, defaults, examples) and the help is generated from it; what
// parseArgs lacks (did-you-mean, help per subcommand, `--lr -1`) is ~100 lines here, with no
// dependency to audit and nothing that prints or exits behind our back (scripts rely on exit codes).
import { parseArgs } from 'node:util';
import { UsageError } from './exit-codes';
import { joinNegativeValues } from './train-flags';
import type { CliIo } from './io';
import { styleFor } from './style';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's placeholder in help: N, FILE, ADDR. */
  arg?: string;
  help: string;
  /** Shown as "(default: …)". */
  default?: string;
  /** false: parsed but not in the options list (`run`'s training flags have their own block). */
  listed?: boolean;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface Parsed {
  values: OptionValues;
  positionals: string[];
}

export interface CommandSpec {
  /** The words after `cohort`: 'runs', 'profiles add'. */
  name: string;
  /** One line, shown in the parent's list. */
  summary: string;
  /** Usage forms after `cohort <name>` (e.g. 'NAME [--json]'); at least one. */
  usage: string[];
  options?: Record<string, OptionSpec>;
  /** Further help after the options (e.g. `run`'s training options). */
  more?: () => string;
  examples?: string[];
  /** Most positional arguments accepted (default: unlimited). */
  maxPositionals?: number;
  run?: (p: Parsed, io: CliIo) => Promise<number>;
  /** A handler that parses its own words (checked against `options` first, so typos and --help still come from the table). */
  runArgs?: (args: string[], io: CliIo) => Promise<number>;
  subcommands?: CommandSpec[];
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help' };

/** Every command and subcommand in the table, depth first (what the --help test walks). */
export function allCommands(table: readonly CommandSpec[]): CommandSpec[] {
  return table.flatMap((c) => [c, ...allCommands(c.subcommands ?? [])]);
}

/** Levenshtein distance (small strings only). */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The closest candidate to a mistyped word, if any is close enough to be a likely typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    // A prefix either way (--step → --steps, --batch → --batch-size) beats an equally short edit (--stem).
    const d = c.startsWith(w) || w.startsWith(c) ? 0.5 : editDistance(w, c.toLowerCase());
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(w.length / 3)) ? best : undefined;
}

function optionsOf(cmd: CommandSpec): Record<string, OptionSpec> {
  return { ...cmd.options, help: HELP_OPTION };
}

/** The help text of one command: usage lines, summary, subcommands or options, examples. */
export function helpText(cmd: CommandSpec, io?: Pick<CliIo, 'env' | 'stdout'>): string {
  const s = styleFor(io?.stdout, io?.env ?? {});
  const lines = cmd.usage.map((u, i) => `${i === 0 ? s.bold('usage:') : '      '} cohort ${cmd.name}${u ? ' ' + u : ''}`);
  lines.push('', cmd.summary);
  if (cmd.subcommands?.length) {
    lines.push('', s.bold('commands:'));
    const word = (c: CommandSpec) => c.name.split(' ').at(-1)!;
    const w = Math.max(...cmd.subcommands.map((c) => word(c).length));
    for (const c of cmd.subcommands) lines.push(`  ${word(c).padEnd(w)}  ${c.summary}`);
  }
  const opts = Object.entries(optionsOf(cmd)).filter(([, o]) => o.listed !== false);
  if (opts.length) {
    lines.push('', s.bold('options:'));
    const label = ([name, o]: [string, OptionSpec]) => `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
    const w = Math.min(30, Math.max(...opts.map((e) => label(e).length)));
    for (const e of opts) lines.push(`  ${label(e).padEnd(w)}  ${e[1].help}${e[1].default !== undefined ? ` (default: ${e[1].default})` : ''}`);
  }
  if (cmd.more) lines.push('', cmd.more());
  if (cmd.examples?.length) lines.push('', s.bold('examples:'), ...cmd.examples.map((e) => `  ${e}`));
  if (cmd.subcommands?.length) lines.push('', `"cohort ${cmd.name} COMMAND --help" for a command's options.`);
  return lines.join('\n') + '\n';
}

/** The top-level help: every command with its summary. */
export function topHelp(table: readonly CommandSpec[], io?: Pick<CliIo, 'env' | 'stdout'>): string {
  const s = styleFor(io?.stdout, io?.env ?? {});
  const w = Math.max(...table.map((c) => c.name.length));
  return [
    `${s.bold('usage:')} cohort COMMAND [options]`,
    '',
    'Data-parallel ResNet-50 training on this machine or over SSH, with history and a dashboard.',
    '',
    s.bold('commands:'),
    ...table.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    '',
    s.bold('options:'),
    '  -h, --help     this help ("cohort COMMAND --help" for a command\'s)',
    '      --version  the version of cohort',
    '',
    'environment: COHORT_CONFIG_DIR, COHORT_DATA_DIR (where profiles and runs live), NO_COLOR.',
  ].join('\n') + '\n';
}

/** Resolves argv to the command it names (descending into subcommands) and the rest of the words. */
export function findCommand(table: readonly CommandSpec[], argv: readonly string[]): { cmd: CommandSpec; rest: string[] } {
  let list = table;
  let cmd: CommandSpec | undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    const word = argv[i]!;
    const next = list.find((c) => c.name.split(' ').at(-1) === word);
    if (!next) break;
    cmd = next;
    list = next.subcommands ?? [];
    if (!list.length) {
      i++;
      break;
    }
  }
  if (!cmd) {
    const word = argv[0] ?? '';
    const guess = closest(word, table.map((c) => c.name));
    throw new UsageError(`unknown command ${JSON.stringify(word)}${guess ? `; did you mean "${guess}"?` : ''}\nrun "cohort --help" for the list of commands`);
  }
  return { cmd, rest: argv.slice(i) };
}

/** Parses a command's arguments strictly, with did-you-mean for unknown flags. */
export function parseFor(cmd: CommandSpec, args: string[]): Parsed {
  const options = optionsOf(cmd);
  const specs = Object.fromEntries(Object.entries(options).map(([k, o]) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}) }]));
  const joined = joinNegativeValues(args, (name) => options[name]?.type === 'string');
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: joined, options: specs, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(parseErrorMessage(cmd, options, err as Error & { code?: string }));
  }
  if (cmd.maxPositionals !== undefined && parsed.positionals.length > cmd.maxPositionals) {
    throw new UsageError(`${cmd.name}: unexpected argument ${JSON.stringify(parsed.positionals[cmd.maxPositionals])}\n${usageHint(cmd)}`);
  }
  const values: OptionValues = {};
  for (const [k, v] of Object.entries(parsed.values)) if (typeof v === 'string' || typeof v === 'boolean') values[k] = v;
  return { values, positionals: parsed.positionals };
}

function parseErrorMessage(cmd: CommandSpec, options: Record<string, OptionSpec>, err: Error & { code?: string }): string {
  const msg = err.message.replace(/^TypeError \[[A-Z_]+\]: /, '');
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(msg)?.[1] ?? '';
    const bare = flag.replace(/^-+/, '').split('=')[0]!;
    const guess = flag.startsWith('--') || bare.length > 1 ? closest(bare, Object.keys(options)) : undefined;
    return `${cmd.name}: unknown option ${flag}${guess ? `; did you mean --${guess}?` : ''}\n${usageHint(cmd)}`;
  }
  const missing = /^Option '(?:-\w, )?--([\w-]+) <value>' argument missing/.exec(msg);
  if (missing) {
    const o = options[missing[1]!];
    return `${cmd.name}: --${missing[1]} needs a value (--${missing[1]} ${o?.arg ?? 'VALUE'})\n${usageHint(cmd)}`;
  }
  return `${cmd.name}: ${msg.replace(/\. To specify a positional argument.*$/s, '')}\n${usageHint(cmd)}`;
}

export function usageHint(cmd: CommandSpec): string {
  return `usage: cohort ${cmd.name} ${cmd.usage[0] ?? ''}`.trimEnd() + `\n"cohort ${cmd.name} --help" shows every option`;
}

/** True when the words ask for help (before any `--`). */
export function wantsHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}
