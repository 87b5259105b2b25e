// The `cohort` CLI: the composition root for headless use. It reads the environment once and
// hands explicit dependencies to core.
import { deployCommand, probeCommand, provisionCommand } from './commands/cluster';
import { profilesCommand } from './commands/profiles';
import { runCommand } from './commands/run';
import { serveCommand } from './commands/serve';
import { runsCommand, stopCommand } from './commands/runs';
import { quietOnClosedPipe } from './closed-pipe';
import { EXIT, UsageError } from './exit-codes';
import type { CliIo } from './io';

const USAGE = `usage: cohort <command> [options]
commands:
  run       train ResNet-50 (--local, or --profile NAME)      cohort run --help
  profiles  saved cluster profiles: list, show, add, rm, import, export, import-ssh-config
  probe PROFILE      what each host offers (GPUs, Node, tfjs bindings, PyTorch)
  deploy PROFILE     upload the trainer bundle (skipped when already there)
  provision PROFILE  install @tensorflow/tfjs-node(-gpu) on the hosts (needs their network)
  runs      run history: list, show, export
  stop RUN  stop a running run on every host
  serve     the dashboard in a browser (loopback + token): cohort serve [--port N] [--host ADDR]
  help     this text`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const io: CliIo = { env: process.env, stdout: quietOnClosedPipe(process.stdout), stderr: quietOnClosedPipe(process.stderr), stdin: process.stdin };
  try {
    switch (cmd) {
      case 'run':
        return await runCommand(rest, io);
      case 'profiles':
        return await profilesCommand(rest, io);
      case 'probe':
        return await probeCommand(rest, io);
      case 'deploy':
        return await deployCommand(rest, io);
      case 'provision':
        return await provisionCommand(rest, io);
      case 'runs':
        return await runsCommand(rest, io);
      case 'stop':
        return await stopCommand(rest, io);
      case 'serve':
        return await serveCommand(rest, io);
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
    const e = err as Error & { code?: string; hint?: string };
    io.stderr.write(`cohort: ${e.message}\n${e.hint ? `  hint: ${e.hint}\n` : ''}`);
    return exitCodeFor(e);
  }
}

/** Input problems (a bad profile, an unknown run) are usage errors; connection problems have their own code. */
function exitCodeFor(e: Error & { code?: string }): number {
  const code = typeof e.code === 'string' ? e.code : '';
  if (code.startsWith('ssh-') || code === 'deploy-failed') return EXIT.connection;
  if (code.startsWith('profile-') || e.name === 'ProfileError' || e.name === 'DecodeError' || e.name === 'ConfigError') return EXIT.usage;
  return EXIT.trainingFailed;
}

process.exitCode = await main(process.argv.slice(2));
