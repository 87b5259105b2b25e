// The one seam between a run's controller and a host: run one of the trainer bundle's host
// commands (`run-start`, `run-follow`, `run-stop`, `run-status`, `run-rejoin`) in the host's
// workdir, with text on its stdin, and (optionally) make sure the bundle those commands run from is
// still on the host. Local hosts use a child process, SSH hosts an exec channel
// (cluster/ssh-cluster.ts); the controller sees only this interface. Nothing here outlives the
// command: the run's agent is detached by `run-start` (or `run-rejoin`) itself, on the host.
import { spawn } from 'node:child_process';

export interface HostCommandExit {
  code: number | null;
  signal: string | null;
}

export interface HostCommand {
  /** Returns a disposer, like every onXxx. */
  onStdout(listener: (chunk: Buffer) => void): () => void;
  /** stderr so far (capped). */
  stderr(): string;
  readonly exit: Promise<HostCommandExit>;
  /** Ends the command (the exec channel or child process); the run on the host is not touched. */
  kill(): void;
  /** Only when started with `openStdin`: more text on the command's stdin, and its end (EOF). */
  writeStdin?(text: string): void;
  endStdin?(): void;
}

/** What ensureBundle found: the bundle was there (`redeployed: false`) or was uploaded again. */
export interface BundleCheck {
  redeployed: boolean;
  bytesSent: number;
  /** The bundle's directory on the host (<workdir>/trainer/<hash>). */
  remoteDir: string;
}

export interface HostLink {
  readonly host: string;
  /** Runs `node <bundle> ...args` on the host with cwd = its workdir; `stdin` is written then closed (left open with `openStdin`). */
  command(args: string[], opts?: { stdin?: string; openStdin?: boolean }): Promise<HostCommand>;
  /**
   * Makes sure the trainer bundle `command` runs from is on the host and intact, uploading it
   * again when it is missing or damaged (a host re-imaged with its workdir's runs/ restored, a
   * cleanup job). SSH links: cluster/deploy.ts's manifest check, cheap when the bundle is there.
   * Throws CohortError `bundle-mismatch` (retrying will not help) when the run's bundle is gone
   * and this client holds another version of it. Absent where nothing can go missing (the local
   * link runs this machine's bundle in place).
   */
  ensureBundle?(opts?: { signal?: AbortSignal }): Promise<BundleCheck>;
  dispose?(): void;
}

/** The `local` cluster's host: this machine, commands as child processes. */
export function localHostLink(o: { host: string; nodePath: string; trainerEntry: string; workdir: string; env?: Record<string, string> }): HostLink {
  return {
    host: o.host,
    command: async (args, opts = {}) => {
      const child = spawn(o.nodePath, [o.trainerEntry, ...args], { cwd: o.workdir, env: { ...process.env, ...o.env, COHORT_WORKDIR: o.workdir }, stdio: ['pipe', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => {
        if (err.length < 64 << 10) err += c;
      });
      child.stdin.on('error', () => undefined);
      if (opts.openStdin) child.stdin.write(opts.stdin ?? '');
      else child.stdin.end(opts.stdin ?? '');
      const exit = new Promise<HostCommandExit>((resolve) => {
        child.on('close', (code, signal) => resolve({ code, signal }));
        child.on('error', (e) => {
          err += `could not start ${o.nodePath}: ${e.message}\n`;
          resolve({ code: 127, signal: null });
        });
      });
      return {
        onStdout: (l) => (child.stdout.on('data', l), () => void child.stdout.off('data', l)),
        stderr: () => err,
        exit,
        kill: () => {
          if (child.exitCode === null) child.kill('SIGKILL');
        },
        ...(opts.openStdin ? { writeStdin: (t: string) => void child.stdin.write(t), endStdin: () => void child.stdin.end() } : {}),
      };
    },
  };
}

/**
 * Runs a host command to completion and returns its stdout (capped at 16 MiB), stderr and exit;
 * `stdoutAt`: Date.now() when its last stdout arrived (a reply's host time against ours: clock offsets).
 */
export async function runHostCommand(link: HostLink, args: string[], opts: { stdin?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string; stdoutAt?: number }> {
  const cmd = await link.command(args, opts.stdin === undefined ? {} : { stdin: opts.stdin });
  const chunks: Buffer[] = [];
  let size = 0;
  let stdoutAt: number | undefined;
  cmd.onStdout((b) => {
    stdoutAt = Date.now();
    if (size < 16 << 20) chunks.push(b);
    size += b.length;
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<HostCommandExit>((resolve) => {
    if (opts.timeoutMs !== undefined) timer = setTimeout(() => resolve({ code: null, signal: 'TIMEOUT' }), opts.timeoutMs);
  });
  const exit = await Promise.race([cmd.exit, timeout]);
  if (timer) clearTimeout(timer);
  if (exit.signal === 'TIMEOUT') cmd.kill();
  return { code: exit.code, stdout: Buffer.concat(chunks).toString('utf8'), stderr: exit.signal === 'TIMEOUT' ? `${link.host}: ${args[0]} did not answer within ${opts.timeoutMs} ms` : cmd.stderr(), ...(stdoutAt !== undefined ? { stdoutAt } : {}) };
}
