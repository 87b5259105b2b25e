// `cohort ARGS` → exit code: help, --version, the command table's lookup and parsing, and how
// errors are printed. Commands, their help and their options: commands.ts.
import { COMMANDS } from './commands';
import { closest, findCommand, helpText, parseFor, topHelp, wantsHelp, type CommandSpec } from './command-spec';
import { EXIT, UsageError } from './exit-codes';
import { hintText } from './hint-text';
import type { CliIo } from './io';
import { styleFor } from './style';

declare const __COHORT_VERSION__: string | undefined;

/** package.json's version, put into the bundle at build time (no git, no file read at run time). */
export const VERSION = typeof __COHORT_VERSION__ === 'string' ? __COHORT_VERSION__ : '0.0.0-dev';

export async function main(argv: string[], io: CliIo, table: readonly CommandSpec[] = COMMANDS): Promise<number> {
  const err = styleFor(io.stderr, io.env);
  try {
    const first = argv[0];
    if (first === undefined) {
      io.stderr.write(topHelp(table, { env: io.env, stdout: io.stderr }));
      return EXIT.usage;
    }
    if (first === '--help' || first === '-h' || (first === 'help' && argv.length === 1)) {
      io.stdout.write(topHelp(table, io));
      return EXIT.ok;
    }
    if (first === '--version' || first === '-V') {
      io.stdout.write(`cohort ${VERSION}\n`);
      return EXIT.ok;
    }
    // `cohort help profiles add` = `cohort profiles add --help`
    const words = first === 'help' ? [...argv.slice(1), '--help'] : argv;
    if (words[0]!.startsWith('-')) throw new UsageError(`unknown option ${words[0]} before the command\nrun "cohort --help" for the commands and options`);
    const { cmd, rest } = findCommand(table, words);
    if (wantsHelp(rest)) {
      io.stdout.write(helpText(cmd, io));
      return EXIT.ok;
    }
    if (cmd.runArgs) {
      parseFor(cmd, rest);
      return await cmd.runArgs(rest, io);
    }
    if (!cmd.run) {
      // A group (profiles, runs): the next word must be one of its commands.
      const subs = cmd.subcommands ?? [];
      const word = rest[0];
      if (word === undefined) {
        io.stderr.write(helpText(cmd, { env: io.env, stdout: io.stderr }));
        return EXIT.usage;
      }
      const guess = closest(word, subs.map((c) => c.name.split(' ').at(-1)!));
      throw new UsageError(`unknown ${cmd.name} command ${JSON.stringify(word)}${guess ? `; did you mean "cohort ${cmd.name} ${guess}"?` : ''}\n"cohort ${cmd.name} --help" lists them`);
    }
    return await cmd.run(parseFor(cmd, rest), io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`${err.red('cohort:')} ${e.message}\n`);
      return EXIT.usage;
    }
    const x = e as Error & { code?: string; hint?: string; host?: string };
    // The code's sentence in the terminal's words (the dashboard's table), then core's specifics.
    io.stderr.write(`${err.red('cohort:')} ${x.message}\n${hintText(x, err.bold)}`);
    return exitCodeFor(x);
  }
}

/** Input problems (a bad profile, an unknown run) are usage errors; connection problems have their own code. */
function exitCodeFor(e: Error & { code?: string }): number {
  const code = typeof e.code === 'string' ? e.code : '';
  if (code.startsWith('ssh-') || code === 'deploy-failed') return EXIT.connection;
  // A bad run configuration reaches the CLI from core (the one Api decodes it) as `bad-config`.
  if (code.startsWith('profile-') || code === 'bad-config' || code === 'run-ambiguous' || code === 'run-not-found' || code === 'run-still-running' || code === 'bad-run-id' || e.name === 'ProfileError' || e.name === 'DecodeError' || e.name === 'ConfigError') return EXIT.usage;
  return EXIT.trainingFailed;
}
