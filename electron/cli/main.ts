// The `cohort` CLI: the composition root for headless use. It reads the environment once and
// hands explicit dependencies to core.
import { runCommand } from './commands/run';
import { EXIT, UsageError } from './exit-codes';

const USAGE = `usage: cohort <command> [options]
commands:
  run      train ResNet-50 (--local, or --profile NAME)      cohort run --help
  help     this text`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const io = { env: process.env, stdout: process.stdout, stderr: process.stderr };
  try {
    switch (cmd) {
      case 'run':
        return await runCommand(rest, io);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(USAGE + '\n');
        return cmd === undefined ? EXIT.usage : EXIT.ok;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`cohort: ${err.message}\n`);
      return EXIT.usage;
    }
    const e = err as Error & { code?: string };
    io.stderr.write(`cohort: ${e.message}\n`);
    return typeof e.code === 'string' && e.code.startsWith('ssh-') ? EXIT.connection : EXIT.trainingFailed;
  }
}

process.exitCode = await main(process.argv.slice(2));
