// One authenticated ssh2 connection to one endpoint (optionally over a stream a jump host opened),
// and jump chains built from them. The host key is checked against known_hosts before
// authentication; every failure comes back as an SshError naming the host and what failed.
import type { Duplex } from 'node:stream';
import type { AuthHandlerMiddleware, AuthenticationType, Client, ClientChannel, ParsedKey } from 'ssh2';
import { loadSsh2 } from '../lazy-packages';
import { access } from 'node:fs/promises';
import { KeyRing, agentPublicBlobs, inspectIdentity, type IdentityInfo } from './keys';
import { addKnownHost, checkHostKey, fingerprintSha256, keyTypeOf, knownHostsName, knownKeyTypes, preferredHostKeyAlgorithms, readKnownHosts } from './known-hosts';
import { SshError, classifySshError, describeHost } from './ssh-error';
import { DEFAULT_TIMINGS, SSH_KEEPALIVE_COUNT } from '../../../trainer/protocol';

export interface SshEndpoint {
  /** Profile host name (or the hop as written in ProxyJump). */
  name: string;
  address: string;
  port: number;
  user: string;
  /** Private key path; without it ssh-agent and the default identities are tried (as OpenSSH does). */
  identityFile?: string;
}

export interface HostKeyInfo {
  keyType: string;
  fingerprint: string;
  /** The known_hosts line that vouches for the key. */
  knownHostsLine: number;
  /** True when the key was unknown and recorded during this connect (accept-new). */
  added: boolean;
}

export interface SshConnectOptions {
  /** known_hosts to verify against (paths.ts: COHORT_KNOWN_HOSTS ?? ~/.ssh/known_hosts). */
  knownHostsPath: string;
  /** Unknown host keys are refused unless this is set; then they are recorded (OpenSSH accept-new). A changed key is always refused. */
  acceptNewHostKey?: boolean;
  /** Write accepted keys hashed (`|1|salt|hash`), like HashKnownHosts yes. Default false. */
  hashKnownHosts?: boolean;
  /** ssh-agent socket (the composition root passes SSH_AUTH_SOCK); undefined = no agent. */
  agentSocket?: string;
  /** Tried when an endpoint has no identityFile, in order, skipping missing ones (sshOptionsFromEnv: ~/.ssh/id_ed25519, id_ecdsa, id_rsa). */
  defaultIdentityFiles?: string[];
  /** Decrypted-key cache and passphrase prompt; default: a KeyRing that cannot prompt. */
  keys?: KeyRing;
  /** TCP connect + handshake + authentication budget per hop. Default 10 s (Timings.sshConnectTimeoutMs, trainer/protocol/timings.ts). */
  connectTimeoutMs?: number;
  /** SSH keepalive: a ping every interval, the connection is declared dead after countMax unanswered. Default 5 s × 3 (Timings.sshKeepaliveMs × SSH_KEEPALIVE_COUNT). */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** ProxyJump hops, outermost first; each hop is verified and authenticated like a target. */
  jump?: SshEndpoint[];
  signal?: AbortSignal;
  /** Told about every key recorded in known_hosts (the CLI prints "Permanently added ..."). */
  onHostKeyAdded?: (e: { host: string; knownHostsName: string; keyType: string; fingerprint: string; line: number; path: string }) => void;
}

export interface ConnectedClient {
  client: Client;
  endpoint: SshEndpoint;
  hostKey: HostKeyInfo;
  /** The last error ssh2 emitted after `ready` (read by the session when the connection closes). */
  lastError(): unknown;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = DEFAULT_TIMINGS.sshConnectTimeoutMs;

/**
 * Ends a connection politely (SSH disconnect, then FIN) and, if the server has not closed it within
 * `graceMs`, destroys its socket. ssh2's own `destroy()` cannot be used for that: it only destroys a
 * socket that is still writable, and `end()` has made it not writable, so a connection to a host
 * that stopped answering (link down, host dead) stayed half-closed for as long as the kernel
 * retransmits its FIN (many minutes), keeping the process alive: `cohort attach` got `done` and
 * never exited (issue 24). ssh2 keeps the socket as `_sock` (its keepalive stops after `end()` too).
 */
export function closeClient(client: Client, graceMs = 2_000): void {
  client.end();
  const sock = (client as unknown as { _sock?: { destroyed?: boolean; destroy(): void } })._sock;
  if (!sock || sock.destroyed) return;
  setTimeout(() => {
    if (!sock.destroyed) sock.destroy();
  }, graceMs).unref();
}

interface AuthAttempt {
  label: string;
  method: AuthenticationType;
  build: (username: string) => Parameters<Parameters<AuthHandlerMiddleware>[2]>[0];
}

/** Connects and authenticates one hop. `sock` is a stream from the previous hop's forwardOut. */
export async function connectOne(endpoint: SshEndpoint, opts: SshConnectOptions, sock?: Duplex, via?: string): Promise<ConnectedClient> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const who = describeHost(endpoint) + (via ? ` ${via}` : '');
  const keys = opts.keys ?? new KeyRing();
  if (opts.signal?.aborted) throw aborted(endpoint, who);

  const { attempts, notes } = await authAttempts(endpoint, opts, keys, who);

  // Ask for the key type known_hosts already vouches for (OpenSSH's order_hostkeyalgs).
  const hostKeyAlgorithms = preferredHostKeyAlgorithms(knownKeyTypes(await readKnownHosts(opts.knownHostsPath), knownHostsName(endpoint.address, endpoint.port)));
  const client = new (loadSsh2().Client)();
  const state = { connected: false, ready: false, hostKeyError: undefined as SshError | undefined, agentError: undefined as unknown, lastError: undefined as unknown };
  const tried: string[] = [];
  let serverMethods: string[] = [];
  let hostKey: HostKeyInfo | undefined;
  let next = 0;

  const authHandler: AuthHandlerMiddleware = (methodsLeft, _partial, nextAuth) => {
    if (methodsLeft === null) return nextAuth({ type: 'none', username: endpoint.user }); // learn what the server accepts
    serverMethods = methodsLeft;
    while (next < attempts.length) {
      const a = attempts[next++];
      if (!methodsLeft.includes(a.method)) continue;
      tried.push(a.label);
      return nextAuth(a.build(endpoint.user));
    }
    // ssh2 takes `false` for "no more methods"; its typings omit it.
    return nextAuth(false as unknown as AuthenticationType);
  };

  const hostVerifier = (key: Buffer, verify: (ok: boolean) => void): void => {
    verifyHostKey(endpoint, key, opts, who).then(
      (info) => {
        hostKey = info;
        verify(true);
      },
      (err: unknown) => {
        state.hostKeyError = err instanceof SshError ? err : new SshError('ssh-protocol', endpoint.name, `${who}: cannot check the host key: ${String(err)}`, `check ${opts.knownHostsPath}`, { cause: err });
        verify(false);
      },
    );
  };

  return new Promise<ConnectedClient>((resolve, reject) => {
    let settled = false;
    const fail = (err: SshError) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      client.removeAllListeners('ready');
      closeClient(client, 0); // giving up: the socket goes now, connecting or not
      reject(err);
    };
    const onAbort = () => fail(aborted(endpoint, who));
    // An abort during the awaits above (reading keys and known_hosts: slow on a loaded machine) fired
    // before this listener existed: honour it now, or the connect would go on to its timeout.
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    client.on('connect', () => {
      state.connected = true;
    });
    client.on('ready', () => {
      if (settled) return;
      settled = true;
      state.ready = true;
      opts.signal?.removeEventListener('abort', onAbort);
      if (!hostKey) {
        // Unreachable with ssh2's handshake order; refuse rather than trust an unverified host.
        closeClient(client);
        reject(new SshError('ssh-protocol', endpoint.name, `${who}: connected without a host key check`, ''));
        return;
      }
      resolve({ client, endpoint, hostKey, lastError: () => state.lastError });
    });
    client.on('error', (err: Error & { level?: string }) => {
      if (state.ready) {
        state.lastError = err;
        return;
      }
      // ssh2 reports an unusable agent or a failed signature and then goes on with the next method.
      if (err.level === 'agent') {
        state.agentError = err;
        return;
      }
      if (err.level === 'client-authentication' && !/all configured authentication methods failed/i.test(err.message)) {
        state.lastError = err;
        return;
      }
      if (state.hostKeyError) return fail(state.hostKeyError);
      if (err.level === 'client-authentication') return fail(authError(endpoint, who, tried, serverMethods, state.agentError, notes));
      fail(classifySshError(err, { host: endpoint, connected: state.connected, ready: false, timeoutMs, ...(via ? { via } : {}) }));
    });
    client.on('close', () => {
      if (state.hostKeyError) return fail(state.hostKeyError);
      fail(classifySshError(Object.assign(new Error('No response from server'), { code: 'ECONNRESET' }), { host: endpoint, connected: state.connected, ready: false, timeoutMs }));
    });

    try {
      client.connect({
        host: endpoint.address,
        port: endpoint.port,
        username: endpoint.user,
        ...(sock ? { sock } : {}),
        hostVerifier,
        authHandler,
        ...(hostKeyAlgorithms ? { algorithms: { serverHostKey: hostKeyAlgorithms } } : {}),
        readyTimeout: timeoutMs,
        keepaliveInterval: opts.keepaliveIntervalMs ?? DEFAULT_TIMINGS.sshKeepaliveMs,
        keepaliveCountMax: opts.keepaliveCountMax ?? SSH_KEEPALIVE_COUNT,
      });
    } catch (err) {
      fail(new SshError('ssh-protocol', endpoint.name, `${who}: invalid connection settings: ${(err as Error).message}`, '', { cause: err }));
    }
  });
}

async function verifyHostKey(endpoint: SshEndpoint, key: Buffer, opts: SshConnectOptions, who: string): Promise<HostKeyInfo> {
  const name = knownHostsName(endpoint.address, endpoint.port);
  const keyType = keyTypeOf(key);
  const fingerprint = fingerprintSha256(key);
  const check = checkHostKey(await readKnownHosts(opts.knownHostsPath), name, key);
  const details = { keyType, fingerprint, knownHostsPath: opts.knownHostsPath, knownHostsName: name };
  switch (check.status) {
    case 'known':
      return { keyType, fingerprint, knownHostsLine: check.line, added: false };
    case 'revoked':
      throw new SshError('ssh-host-key-revoked', endpoint.name, `${who}: the host key ${keyType} ${fingerprint} is marked @revoked on line ${check.line} of ${opts.knownHostsPath}`, 'refusing to connect', {
        details: { ...details, line: check.line },
      });
    case 'changed':
      throw new SshError(
        'ssh-host-key-changed',
        endpoint.name,
        `${who}: REMOTE HOST IDENTIFICATION HAS CHANGED for ${name}: ${opts.knownHostsPath} line ${check.line} has ${check.keyType} ${check.knownFingerprint}, but the server presented ${keyType} ${fingerprint}. ` +
          'Someone could be intercepting the connection, or the host was reinstalled',
        `If you trust the new key, remove line ${check.line} (ssh-keygen -R ${shellWord(name)} -f ${shellWord(opts.knownHostsPath)}) and connect again with --accept-new-host-key`,
        { details: { ...details, line: check.line, knownFingerprint: check.knownFingerprint } },
      );
    case 'unknown': {
      if (!opts.acceptNewHostKey) {
        throw new SshError(
          'ssh-host-key-unknown',
          endpoint.name,
          `${who}: unknown host key for ${name}: ${keyType} ${fingerprint}`,
          `Verify the fingerprint (on the host: ssh-keygen -lf /etc/ssh/ssh_host_${keyType.replace(/^ssh-/, '')}_key.pub), then connect with --accept-new-host-key to record it in ${opts.knownHostsPath}`,
          { details },
        );
      }
      const line = await addKnownHost(opts.knownHostsPath, name, key, { hash: opts.hashKnownHosts ?? false });
      opts.onHostKeyAdded?.({ host: endpoint.name, knownHostsName: name, keyType, fingerprint, line, path: opts.knownHostsPath });
      return { keyType, fingerprint, knownHostsLine: line, added: true };
    }
  }
}

/**
 * What to offer the server, in OpenSSH's order: ssh-agent first, then the identity file (or, with
 * none set, the default identities that exist). An encrypted key the agent holds is left to the
 * agent (no passphrase asked); one that cannot be decrypted without a prompt is skipped when
 * something else can still be tried, and said in `notes`.
 */
async function authAttempts(endpoint: SshEndpoint, opts: SshConnectOptions, keys: KeyRing, who: string): Promise<{ attempts: AuthAttempt[]; notes: string[] }> {
  const attempts: AuthAttempt[] = [];
  const notes: string[] = [];
  const agent = opts.agentSocket;
  if (agent) attempts.push({ label: `agent (${agent})`, method: 'publickey', build: (username) => ({ type: 'agent', username, agent }) });
  const explicit = endpoint.identityFile !== undefined;
  const files = endpoint.identityFile !== undefined ? [endpoint.identityFile] : (opts.defaultIdentityFiles ?? []);
  let agentBlobs: Buffer[] | undefined;
  for (const path of files) {
    if (!explicit && !(await access(path).then(() => true, () => false))) continue; // OpenSSH skips missing defaults quietly
    let info: IdentityInfo;
    try {
      info = await inspectIdentity(path, endpoint.name);
    } catch (err) {
      if (explicit) throw err;
      notes.push(`skipped ${path}: ${(err as Error).message.replace(`${endpoint.name}: `, '')}`);
      continue;
    }
    if (info.encrypted) {
      const blob = info.publicBlob;
      if (agent && blob) {
        agentBlobs ??= await agentPublicBlobs(agent);
        if (agentBlobs.some((b) => b.equals(blob))) {
          notes.push(`${path} is encrypted; ssh-agent holds it`);
          continue;
        }
      }
      if (!keys.canPrompt && (agent || !explicit)) {
        notes.push(`skipped ${path}: encrypted, no terminal to ask its passphrase on, and ssh-agent does not hold it (ssh-add ${path})`);
        continue;
      }
    }
    let key: ParsedKey;
    try {
      key = await keys.load(path, endpoint.name);
    } catch (err) {
      if (explicit && !agent) throw err;
      notes.push(`skipped ${path}: ${(err as Error).message.replace(`${endpoint.name}: `, '')}`);
      continue;
    }
    attempts.push({ label: `publickey (${path})`, method: 'publickey', build: (username) => ({ type: 'publickey', username, key }) });
  }
  if (attempts.length === 0) {
    const looked = explicit ? '' : `; no identityFile set and no default identity usable (${files.length ? files.join(', ') : 'none configured'})`;
    throw new SshError(
      'ssh-auth',
      endpoint.name,
      `${who}: no authentication method to try${looked}${notes.length ? `; ${notes.join('; ')}` : ''}`,
      'give the host an identityFile in the profile, or start ssh-agent and set SSH_AUTH_SOCK',
      { details: { notes } },
    );
  }
  return { attempts, notes };
}

function authError(endpoint: SshEndpoint, who: string, tried: string[], serverMethods: string[], agentError: unknown, notes: string[]): SshError {
  const triedText = tried.length ? `tried ${tried.join(', ')}` : 'no method could be tried';
  const agentNote = (agentError ? `; ssh-agent failed: ${(agentError as Error).message}` : '') + (notes.length ? `; ${notes.join('; ')}` : '');
  return new SshError(
    'ssh-auth',
    endpoint.name,
    `${who}: authentication failed for user "${endpoint.user}": ${triedText}${agentNote}; the server accepts: ${serverMethods.join(', ') || 'nothing'}`,
    `Check the user name and that the matching public key is in ~${endpoint.user}/.ssh/authorized_keys on the host`,
    { details: { tried, serverMethods, ...(notes.length ? { notes } : {}) } },
  );
}

function aborted(endpoint: SshEndpoint, who: string): SshError {
  return new SshError('ssh-aborted', endpoint.name, `${who}: connect cancelled`, '', { fatal: false });
}

function shellWord(s: string): string {
  return /^[\w@%+=:,./[\]-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Connects through `opts.jump` hops (outermost first) to `target`. Each hop is verified against
 * known_hosts and authenticated; the next hop rides a direct-tcpip channel of the previous one.
 * Returns every client, target last; on failure the hops already up are closed.
 */
export async function connectChain(target: SshEndpoint, opts: SshConnectOptions): Promise<ConnectedClient[]> {
  const hops = [...(opts.jump ?? []), target];
  const chain: ConnectedClient[] = [];
  try {
    for (const hop of hops) {
      const prev = chain.at(-1);
      if (!prev) {
        chain.push(await connectOne(hop, opts));
        continue;
      }
      const via = `via jump host ${prev.endpoint.name}`;
      const stream = await forwardOut(prev, hop, opts);
      chain.push(await connectOne(hop, opts, stream, via));
    }
    return chain;
  } catch (err) {
    for (const c of chain.reverse()) closeClient(c.client);
    throw err;
  }
}

function forwardOut(jump: ConnectedClient, hop: SshEndpoint, opts: SshConnectOptions): Promise<ClientChannel> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const jumpWho = describeHost(jump.endpoint);
  return new Promise((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new SshError('ssh-timeout', hop.name, `jump host ${jumpWho} could not reach ${hop.address}:${hop.port} within ${timeoutMs} ms`, `check that ${hop.name} is up and reachable from ${jump.endpoint.name}`));
    }, timeoutMs);
    const onAbort = () => {
      clearTimeout(timer);
      done = true;
      reject(new SshError('ssh-aborted', hop.name, `${hop.name}: connect cancelled`, '', { fatal: false }));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    jump.client.forwardOut('127.0.0.1', 0, hop.address, hop.port, (err, stream) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (done) {
        stream?.close(); // gave up already (timeout / abort): do not leak the channel
        return;
      }
      done = true;
      if (err) {
        const reason = (err as Error & { reason?: number }).reason;
        const hint =
          reason === 1
            ? `sshd on ${jump.endpoint.name} forbids forwarding (AllowTcpForwarding / PermitOpen)`
            : `check that ${hop.name} (${hop.address}:${hop.port}) is up and reachable from ${jump.endpoint.name}`;
        reject(new SshError('ssh-jump', hop.name, `jump host ${jumpWho} could not open a connection to ${hop.address}:${hop.port}: ${err.message.replace(/^\(SSH\) /, '')}`, hint, { cause: err }));
        return;
      }
      resolve(stream);
    });
  });
}
