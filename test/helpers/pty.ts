// The real `cohort` CLI on a real pseudo-terminal (python3's pty module: the child's stdin, stdout
// and stderr are the pty's slave, so isTTY is true as in a user's terminal), answering prompts as
// a user types: each time `expect` text appears in the output (after the last answer), the next
// answer is written. Output is the terminal's (stdout and stderr together, \r\n line ends, echo).
import { spawn } from 'node:child_process';
import { COHORT } from './cli';

const DRIVER = String.raw`
import json, os, pty, select, signal, sys, time
argv, prompts, timeout = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out, seen, deadline = b'', 0, time.time() + timeout
while True:
    if time.time() > deadline:
        os.kill(pid, signal.SIGKILL)
        out += b'\n[pty driver: timed out]\n'
        break
    r, _, _ = select.select([fd], [], [], 0.5)
    if fd not in r:
        continue
    try:
        data = os.read(fd, 4096)
    except OSError:
        break  # EIO: the child closed the terminal (it exited)
    if not data:
        break
    out += data
    if prompts and prompts[0][0].encode() in out[seen:]:
        seen = len(out)
        os.write(fd, prompts.pop(0)[1].encode())
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.stdout.flush()
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
`;

/** Runs `cohort ARGS` on a pty; `prompts`: [text to wait for, what to type] in order. */
export function cliOnPty(args: string[], prompts: [string, string][], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn('/usr/bin/python3', ['-c', DRIVER, JSON.stringify([process.execPath, COHORT, ...args]), JSON.stringify(prompts), String((opts.timeoutMs ?? 120_000) / 1000)], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output: output + err })));
}
