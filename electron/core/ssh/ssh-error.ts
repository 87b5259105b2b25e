// SSH failures as one error type with a stable code, the host it concerns and a next step. ssh2
// reports failures as `err.level` (client-socket, client-timeout, client-authentication,
// protocol, ...) plus socket errno codes; classifySshError maps those to Cohort codes here, so
// nothing above core/ssh ever inspects ssh2's errors.
import { CohortError } from '../../../trainer/protocol';

export type SshErrorCode =
  | 'ssh-resolve' // the name does not resolve
  | 'ssh-refused' // TCP connection refused (nothing listening)
  | 'ssh-timeout' // no answer in time (connect, handshake or keepalive)
  | 'ssh-unreachable' // no route to the host or network
  | 'ssh-auth' // every authentication method failed
  | 'ssh-key' // the identity file cannot be read or parsed
  | 'ssh-key-passphrase' // encrypted key: passphrase missing or wrong
  | 'ssh-agent' // SSH_AUTH_SOCK unusable
  | 'ssh-host-key-unknown'
  | 'ssh-host-key-changed'
  | 'ssh-host-key-revoked'
  | 'ssh-jump' // a jump host could not open the connection onward
  | 'ssh-protocol' // handshake / protocol failure
  | 'ssh-disconnected' // the connection dropped (pending work is rejected with this)
  | 'ssh-channel' // exec/sftp channel could not be opened or failed
  | 'ssh-remote-command' // a remote helper command (sha256sum, mkdir) failed
  | 'ssh-aborted'; // the caller's AbortSignal fired

/** Who the error is about, formatted once so every message names the host the same way. */
export interface SshErrorHost {
  name: string;
  address: string;
  port: number;
  user: string;
}

export class SshError extends CohortError {
  declare readonly code: SshErrorCode;
  constructor(
    code: SshErrorCode,
    /** The profile host name (or jump hop) the failure concerns. */
    readonly host: string,
    message: string,
    hint: string,
    options: { cause?: unknown; fatal?: boolean; details?: Record<string, unknown> } = {},
  ) {
    super(code, hint ? `${message}. ${hint.charAt(0).toUpperCase()}${hint.slice(1)}` : message, { hint, cause: options.cause, fatal: options.fatal ?? true });
    this.name = 'SshError';
    this.details = options.details ?? {};
  }
  /** Structured extras (fingerprints, known_hosts line, methods tried) for the GUI. */
  readonly details: Record<string, unknown>;
}

export function describeHost(h: SshErrorHost): string {
  const target = `${h.user}@${h.address}${h.port === 22 ? '' : `:${h.port}`}`;
  return h.name === h.address ? target : `${h.name} (${target})`;
}

export interface ClassifyContext {
  host: SshErrorHost;
  /** Set once the TCP connection is up (distinguishes connect timeouts from handshake timeouts). */
  connected: boolean;
  /** Set once authenticated: errors after that are drops, not connect failures. */
  ready: boolean;
  timeoutMs: number;
  /** e.g. "via jump host gw" */
  via?: string;
}

interface Ssh2LikeError {
  message?: unknown;
  level?: unknown;
  code?: unknown;
}

/** Maps an error from ssh2 or the socket to an SshError naming the host and what to do. */
export function classifySshError(err: unknown, ctx: ClassifyContext): SshError {
  if (err instanceof SshError) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as Ssh2LikeError;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const level = typeof e.level === 'string' ? e.level : '';
  const errno = typeof e.code === 'string' ? e.code : '';
  const who = describeHost(ctx.host) + (ctx.via ? ` ${ctx.via}` : '');
  const mk = (code: SshErrorCode, what: string, hint: string) => new SshError(code, ctx.host.name, `${who}: ${what}`, hint, { cause: err });

  if (ctx.ready) {
    if (level === 'client-timeout') return mk('ssh-disconnected', `connection lost (${message.toLowerCase()})`, 'the host stopped answering keepalives: check the host and the network');
    return mk('ssh-disconnected', `connection lost: ${message}`, 'reconnect; if it keeps happening check the host and the network');
  }
  if (errno === 'ENOTFOUND' || errno === 'EAI_AGAIN' || errno === 'EAI_NONAME' || level === 'client-dns') {
    return mk('ssh-resolve', `cannot resolve host name "${ctx.host.address}" (${errno || message})`, 'check the address in the profile, or DNS / /etc/hosts');
  }
  if (errno === 'ECONNREFUSED') {
    return mk('ssh-refused', `connection refused on port ${ctx.host.port}`, 'nothing is listening there: is sshd running, and is the port right?');
  }
  if (errno === 'EHOSTUNREACH' || errno === 'ENETUNREACH' || errno === 'EHOSTDOWN') {
    return mk('ssh-unreachable', `no route to ${ctx.host.address} (${errno})`, 'the host is down or not on a network this machine can reach (a ProxyJump may be needed)');
  }
  if (errno === 'ETIMEDOUT' || level === 'client-timeout') {
    return ctx.connected
      ? mk('ssh-timeout', `connected, but the SSH handshake did not finish within ${ctx.timeoutMs} ms`, 'the server is overloaded or something on port ' + ctx.host.port + ' is not an SSH server')
      : mk('ssh-timeout', `no answer from ${ctx.host.address}:${ctx.host.port} within ${ctx.timeoutMs} ms`, 'the host is down, firewalled, or the address is wrong');
  }
  if (errno === 'ECONNRESET' || errno === 'EPIPE' || /no response from server|connection lost/i.test(message)) {
    return mk('ssh-disconnected', `the connection was closed during the handshake (${errno || message})`, 'check sshd on the host (MaxStartups, AllowUsers, its logs)');
  }
  if (level === 'agent') {
    return mk('ssh-agent', `ssh-agent failed: ${message}`, 'check SSH_AUTH_SOCK and that the agent is running (ssh-add -l)');
  }
  if (level === 'protocol' || level === 'handshake') {
    return mk('ssh-protocol', `SSH protocol error: ${message}`, 'the server may be too old or not an SSH server');
  }
  return mk('ssh-protocol', message, '');
}
