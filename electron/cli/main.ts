// The `cohort` CLI: the composition root for headless use. It reads the environment once and
// hands explicit dependencies to core (cli.ts runs the command).
import { main } from './cli';

/** Output to a closed pipe (`cohort runs list | head -1`) ends quietly with exit 0, as Unix tools do. */
function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

exitQuietlyOnClosedPipe(process.stdout);
exitQuietlyOnClosedPipe(process.stderr);
process.exitCode = await main(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
