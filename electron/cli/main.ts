// The `cohort` CLI: the composition root for headless use. It reads the environment once and
// hands explicit dependencies to core (cli.ts runs the command).
import { main } from './cli';
import { quietOnClosedPipe } from './closed-pipe';

// Output to a closed pipe (`cohort runs list | head -1`) ends quietly with exit 0, as Unix tools
// do; a foreground run goes on to its end and is recorded (closed-pipe.ts says why).
process.exitCode = await main(process.argv.slice(2), { env: process.env, stdout: quietOnClosedPipe(process.stdout), stderr: quietOnClosedPipe(process.stderr), stdin: process.stdin });
