// HostSession: one authenticated SSH connection to one profile host (possibly through jump
// hosts), with exec channels, SFTP upload and remote checksums. The deployer and launcher build
// on it. When the connection drops, every pending operation is rejected with an
// 'ssh-disconnected' SshError (ssh2's habit, kept: nothing waits forever on a dead socket).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { posix } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { ClientChannel, SFTPWrapper } from 'ssh2';
import { DisposableBase, Emitter } from '../../../trainer/protocol';
import { closeClient, connectChain, type ConnectedClient, type HostKeyInfo, type SshConnectOptions, type SshEndpoint } from './connect';
import { SshError, classifySshError, describeHost } from './ssh-error';
import { ENV_PRELUDE, envLines, shQuote } from './remote-shell';

export interface ExitStatus {
  /** Exit code, or null when the command died of a signal (or sshd sent no status). */
  code: number | null;
  /** Signal name without SIG (e.g. 'TERM'), or null. */
  signal: string | null;
}

/** A remote command's channel: a process-like handle (stdin/stdout/stderr + exit). */
export interface RemoteProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Resolves when the channel closes, i.e. after the command exited and all its output was
   * delivered; rejects with SshError('ssh-disconnected') if the connection drops first. As with
   * child_process pipes, stdout and stderr must be read (or resume()d) for this to happen.
   */
  readonly exit: Promise<ExitStatus>;
  /**
   * Best effort: sends an SSH signal request and closes the channel. OpenSSH's sshd does not
   * reliably deliver signal requests (9.2 here ignores them), so a remote process that must die
   * should watch its stdin for EOF (or be killed by pid with a second command).
   */
  kill(signal?: string): void;
  /**
   * Closes the channel (the remote side sees stdin EOF). Idempotent. sshd still keeps the channel
   * until the command exits, so `exit` resolves only then.
   */
  close(): void;
}

export interface RunResult extends ExitStatus {
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /**
   * Exported before the command runs. The values travel over the channel's stdin (read by a short
   * shell prelude, `export "$line"`, never evaluated), not on the command line: a command line is
   * visible to every user of the host in `ps`, and env often holds secrets (API keys). sshd's
   * AcceptEnv usually drops SSH env requests, so those are no option either. The caller's own stdin
   * follows the env lines unchanged.
   */
  env?: Record<string, string>;
  signal?: AbortSignal;
}

export interface UploadOptions {
  /** File mode for the uploaded file (e.g. 0o755). */
  mode?: number;
  /** Called as bytes go out (bytes sent, total). */
  onProgress?: (sent: number, total: number) => void;
  /** Skip the transfer when the remote file already has this content (compared by sha256). Default true. */
  skipIfSame?: boolean;
  /**
   * Check the uploaded bytes' sha256 on the host before renaming into place. Default true; a
   * caller that verifies a whole directory itself can turn it off to save one round trip per file.
   */
  verify?: boolean;
  /**
   * Create the remote file's directory first (`mkdir -p`, one command on the host). Default true; a
   * caller that made every directory itself (deploy.ts: one `mkdir -p` for the whole bundle) turns it
   * off: one command per file was ~45 sshd sessions per host per deploy.
   */
  makeDir?: boolean;
  signal?: AbortSignal;
}

export interface UploadResult {
  bytes: number;
  sha256: string;
  /** True when the remote file already matched and nothing was sent. */
  skipped: boolean;
}

export type HostSessionOptions = SshConnectOptions;

export class HostSession extends DisposableBase {
  private readonly pending = new Set<(err: SshError) => void>();
  private readonly closeEvents = new Emitter<SshError | undefined>();
  private readonly channels = new Set<ClientChannel>();
  private sftpP: Promise<SFTPWrapper> | undefined;
  private closedWith: SshError | undefined;

  /** Connects (through opts.jump hops if any), verifying every host key. */
  static async connect(endpoint: SshEndpoint, opts: HostSessionOptions): Promise<HostSession> {
    return new HostSession(await connectChain(endpoint, opts));
  }

  private constructor(private readonly chain: ConnectedClient[]) {
    super();
    // Any hop closing takes the target's transport with it; listen on all so the error names the hop that died.
    for (const c of chain) {
      c.client.on('close', () => this.onConnectionClosed(c));
      c.client.on('error', () => undefined); // recorded by connectOne's lastError; never an unhandled 'error'
    }
  }

  private get target(): ConnectedClient {
    return this.chain[this.chain.length - 1];
  }

  get endpoint(): SshEndpoint {
    return this.target.endpoint;
  }
  get name(): string {
    return this.target.endpoint.name;
  }
  get hostKey(): HostKeyInfo {
    return this.target.hostKey;
  }
  /** Names of the jump hosts this session goes through, outermost first. */
  get via(): string[] {
    return this.chain.slice(0, -1).map((c) => c.endpoint.name);
  }
  get closed(): boolean {
    return this.isDisposed || this.closedWith !== undefined;
  }

  /** Called once when the connection ends (err undefined after dispose()). Returns a disposer. */
  onClose(listener: (err: SshError | undefined) => void): () => void {
    return this.closeEvents.event(listener);
  }

  /** Starts `command` in the user's login shell on the host. */
  exec(command: string, opts: ExecOptions = {}): Promise<RemoteProcess> {
    let env: string;
    try {
      env = envLines(this.name, opts.env);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    const full = env ? ENV_PRELUDE + command : command;
    return this.track<RemoteProcess>(opts.signal, (resolve, reject) => {
      this.target.client.exec(full, (err, ch) => {
        if (err) {
          reject(new SshError('ssh-channel', this.name, `${describeHost(this.endpoint)}: cannot start a command: ${err.message}`, 'sshd may limit sessions (MaxSessions)', { cause: err }));
          return;
        }
        const proc = this.wrapChannel(ch);
        if (env) proc.stdin.write(env);
        resolve(proc);
      });
    });
  }

  /** Runs `command` to completion and collects its output (capped at maxOutputBytes per stream). */
  async run(command: string, opts: ExecOptions & { stdin?: string | Uint8Array; maxOutputBytes?: number } = {}): Promise<RunResult> {
    const proc = await this.exec(command, opts);
    const cap = opts.maxOutputBytes ?? 16 << 20;
    const collect = (r: Readable) => {
      const chunks: Buffer[] = [];
      let size = 0;
      r.on('data', (b: Buffer) => {
        if (size < cap) chunks.push(b.subarray(0, cap - size));
        size += b.length;
      });
      return () => Buffer.concat(chunks).toString('utf8');
    };
    const out = collect(proc.stdout);
    const err = collect(proc.stderr);
    proc.stdin.end(opts.stdin ?? '');
    try {
      // On abort, give up at once: sshd keeps a channel open until its command exits, and a
      // signal request is not reliably delivered, so waiting for `exit` could take forever.
      const status = await this.track<ExitStatus>(opts.signal, (resolve, reject) => proc.exit.then(resolve, reject));
      return { ...status, stdout: out(), stderr: err() };
    } catch (e) {
      proc.close();
      throw e;
    }
  }

  /** sha256 (hex) of a remote file, or null if it does not exist. Uses sha256sum, or shasum on macOS/BSD. */
  async remoteSha256(remotePath: string, opts: { signal?: AbortSignal } = {}): Promise<string | null> {
    const q = shQuote(remotePath);
    const r = await this.run(`if [ ! -e ${q} ]; then exit 3; fi; if command -v sha256sum >/dev/null 2>&1; then sha256sum -- ${q}; else shasum -a 256 -- ${q}; fi`, opts);
    if (r.code === 3) return null;
    const hex = /^([0-9a-f]{64})\b/.exec(r.stdout)?.[1];
    if (r.code !== 0 || !hex) {
      throw new SshError('ssh-remote-command', this.name, `${this.name}: cannot checksum ${remotePath}: ${r.stderr.trim() || `exit ${r.code}`}`, 'the host needs sha256sum (coreutils) or shasum');
    }
    return hex;
  }

  /** mkdir -p on the host. */
  async mkdirp(remotePath: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const r = await this.run(`mkdir -p -- ${shQuote(remotePath)}`, opts);
    if (r.code !== 0) throw new SshError('ssh-remote-command', this.name, `${this.name}: cannot create ${remotePath}: ${r.stderr.trim()}`, 'check the workdir in the profile and its permissions');
  }

  /** The SFTP session (opened on first use, shared). */
  sftp(opts: { signal?: AbortSignal } = {}): Promise<SFTPWrapper> {
    if (!this.sftpP) {
      const p = this.track<SFTPWrapper>(opts.signal, (resolve, reject) => {
        this.target.client.sftp((err, sftp) => {
          if (err) {
            reject(new SshError('ssh-channel', this.name, `${describeHost(this.endpoint)}: cannot open SFTP: ${err.message}`, 'sshd needs an sftp Subsystem', { cause: err }));
            return;
          }
          sftp.on('close', () => {
            if (this.sftpP === p) this.sftpP = undefined;
          });
          resolve(sftp);
        });
      });
      this.sftpP = p;
      p.catch(() => {
        if (this.sftpP === p) this.sftpP = undefined;
      });
    }
    return this.sftpP;
  }

  /**
   * Uploads a local file: to `<remote>.part-<pid>` first, then checks the remote sha256 and renames
   * into place, so a reader never sees a half file and a corrupted transfer is caught.
   */
  async upload(localPath: string, remotePath: string, opts: UploadOptions = {}): Promise<UploadResult> {
    const [{ size }, sha256] = await Promise.all([stat(localPath), sha256File(localPath)]);
    if (opts.skipIfSame !== false && (await this.remoteSha256(remotePath, opts)) === sha256) {
      opts.onProgress?.(size, size);
      return { bytes: size, sha256, skipped: true };
    }
    const dir = posix.dirname(remotePath);
    if (opts.makeDir !== false && dir !== '.' && dir !== '/') await this.mkdirp(dir, opts);
    const sftp = await this.sftp(opts);
    const part = `${remotePath}.part-${process.pid}-${Date.now().toString(36)}`;
    await this.track<void>(opts.signal, (resolve, reject) => {
      sftp.fastPut(localPath, part, { step: (sent) => opts.onProgress?.(sent, size), ...(opts.mode === undefined ? {} : { mode: opts.mode }) }, (err) => {
        if (err) reject(new SshError('ssh-channel', this.name, `${this.name}: upload of ${localPath} to ${part} failed: ${err.message}`, 'check free space and permissions on the host', { cause: err }));
        else resolve();
      });
    }).catch(async (err: unknown) => {
      if (!this.closed) await this.run(`rm -f -- ${shQuote(part)}`).catch(() => undefined);
      throw err;
    });
    const remoteSum = opts.verify === false ? sha256 : await this.remoteSha256(part, opts);
    if (remoteSum !== sha256) {
      await this.run(`rm -f -- ${shQuote(part)}`).catch(() => undefined);
      throw new SshError('ssh-remote-command', this.name, `${this.name}: ${remotePath} arrived corrupted (sha256 ${remoteSum} ≠ local ${sha256})`, 'retry the upload; check the disk on the host');
    }
    await this.track<void>(opts.signal, (resolve, reject) => {
      // posix-rename replaces an existing file atomically (plain SFTP rename refuses to).
      sftp.ext_openssh_rename(part, remotePath, (err) => {
        if (err) reject(new SshError('ssh-channel', this.name, `${this.name}: cannot move ${part} to ${remotePath}: ${err.message}`, '', { cause: err }));
        else resolve();
      });
    });
    if (opts.mode !== undefined) {
      const mode = opts.mode;
      await this.track<void>(opts.signal, (resolve, reject) => sftp.chmod(remotePath, mode, (err) => (err ? reject(new SshError('ssh-channel', this.name, `${this.name}: chmod ${remotePath}: ${err.message}`, '')) : resolve())));
    }
    return { bytes: size, sha256, skipped: false };
  }

  /** Closes every channel and the connection (and its jump hosts). Idempotent. */
  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    const err = new SshError('ssh-disconnected', this.name, `${this.name}: the session was closed`, '', { fatal: false });
    this.rejectPending(err);
    for (const ch of this.channels) ch.close();
    // end() waits for the server; closeClient makes sure the sockets go even if it never answers.
    for (const c of [...this.chain].reverse()) closeClient(c.client);
    this.fireClose(undefined);
  }

  private wrapChannel(ch: ClientChannel): RemoteProcess {
    this.channels.add(ch);
    let status: ExitStatus = { code: null, signal: null };
    ch.on('exit', (code: number | null, signal?: string) => {
      // ssh2 reports signals as 'SIGKILL'; ExitStatus uses the bare name like SSH does ('KILL').
      status = { code: typeof code === 'number' ? code : null, signal: signal ? signal.replace(/^SIG/, '') : null };
    });
    const exit = this.track<ExitStatus>(undefined, (resolve) => {
      ch.on('close', () => {
        this.channels.delete(ch);
        resolve(status);
      });
    });
    exit.catch(() => undefined); // callers that never await exit must not crash the process
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      ch.close();
    };
    return {
      stdin: ch,
      stdout: ch,
      stderr: ch.stderr,
      exit,
      kill: (signal = 'TERM') => {
        try {
          ch.signal(signal);
        } catch {
          /* channel already gone */
        }
        close();
      },
      close,
    };
  }

  /** A promise that is rejected when the connection drops or `signal` aborts, whatever else happens. */
  private track<T>(signal: AbortSignal | undefined, executor: (resolve: (v: T) => void, reject: (e: unknown) => void) => void): Promise<T> {
    if (this.closedWith || this.isDisposed) {
      return Promise.reject(this.closedWith ?? new SshError('ssh-disconnected', this.name, `${this.name}: the session was closed`, 'connect again'));
    }
    if (signal?.aborted) return Promise.reject(new SshError('ssh-aborted', this.name, `${this.name}: cancelled`, '', { fatal: false }));
    return new Promise<T>((resolve, reject) => {
      const cleanup = () => {
        this.pending.delete(onDrop);
        signal?.removeEventListener('abort', onAbort);
      };
      const onDrop = (err: SshError) => {
        cleanup();
        reject(err);
      };
      const onAbort = () => {
        cleanup();
        reject(new SshError('ssh-aborted', this.name, `${this.name}: cancelled`, '', { fatal: false }));
      };
      this.pending.add(onDrop);
      signal?.addEventListener('abort', onAbort, { once: true });
      executor(
        (v) => {
          cleanup();
          resolve(v);
        },
        (e) => {
          cleanup();
          reject(e);
        },
      );
    });
  }

  private onConnectionClosed(c: ConnectedClient): void {
    if (this.closedWith || this.isDisposed) return;
    const last = c.lastError();
    const base = classifySshError(last ?? new Error('the server closed the connection'), { host: c.endpoint, connected: true, ready: true, timeoutMs: 0 });
    this.closedWith =
      c === this.target
        ? base
        : new SshError('ssh-disconnected', this.name, `${describeHost(this.endpoint)}: connection lost because jump host ${c.endpoint.name} went away (${base.message})`, base.hint ?? '', { cause: base });
    this.rejectPending(this.closedWith);
    for (const other of this.chain) closeClient(other.client);
    this.fireClose(this.closedWith);
  }

  private rejectPending(err: SshError): void {
    const all = [...this.pending];
    this.pending.clear();
    for (const reject of all) reject(err);
  }

  /** Once: every close listener hears it, then they are dropped. */
  private fireClose(err: SshError | undefined): void {
    this.closeEvents.fire(err);
    this.closeEvents.dispose();
  }
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}
