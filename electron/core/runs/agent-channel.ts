// A byte channel to one host agent: its stdin (launch spec, heartbeats, cancel) and its stdout
// (events). Local runs use a child process; SSH runs use an exec channel (core/ssh). The run
// controller sees only this interface, so both paths behave the same.
import { spawn } from 'node:child_process';

export interface AgentExit {
  code: number | null;
  signal: string | null;
}

export interface AgentChannel {
  readonly host: string;
  write(line: string): void;
  /** Closes the agent's stdin: the agent treats EOF as "controller gone" and stops its ranks. */
  end(): void;
  /** Returns a disposer, like every onXxx. */
  onStdout(listener: (chunk: string) => void): () => void;
  onStderr(listener: (chunk: string) => void): () => void;
  readonly exited: Promise<AgentExit>;
  /** Last resort after a cancel grace period: end the agent by force (local: kill its group; SSH: close the channel). */
  forceKill(): void;
  dispose(): void;
}

/** Starts the trainer agent as a local child process (the `local` profile). */
export function spawnLocalAgent(opts: { host: string; nodePath: string; trainerEntry: string; workdir: string; runId: string; env?: NodeJS.ProcessEnv }): AgentChannel {
  const child = spawn(opts.nodePath, [opts.trainerEntry, 'agent', '--run', opts.runId], {
    cwd: opts.workdir,
    env: { ...process.env, ...opts.env, COHORT_WORKDIR: opts.workdir },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // its own process group: forceKill reaches the agent and every rank it started
  });
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdin.on('error', () => {}); // EPIPE after the agent exited is expected
  const exited = new Promise<AgentExit>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', (err) => {
      child.stderr.emit('data', `could not start the trainer agent: ${err.message}\n`);
      resolve({ code: 127, signal: null });
    });
  });
  let disposed = false;
  return {
    host: opts.host,
    write: (line) => {
      if (!child.stdin.destroyed) child.stdin.write(line + '\n');
    },
    end: () => child.stdin.end(),
    onStdout: (l) => (child.stdout.on('data', l), () => void child.stdout.off('data', l)),
    onStderr: (l) => (child.stderr.on('data', l), () => void child.stderr.off('data', l)),
    exited,
    forceKill: () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
    dispose: () => {
      if (disposed) return;
      disposed = true;
      child.stdin.destroy();
    },
  };
}
