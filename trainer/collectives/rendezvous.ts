// Rendezvous through rank 0 (torch's MASTER_ADDR:MASTER_PORT), then the ring's data connections.
//
//   every rank k > 0: connect to master (retrying until the deadline) → open a data listener on
//     the local address that reached the master → send hello {rank, worldSize, host, addr, port}
//   rank 0: check world size, duplicates, protocol version → send the full table to everyone
//   every rank: connect to its LEFT neighbour's data listener (the connecting side can read with
//     `onread`, the fast path) and accept its RIGHT neighbour → 'ready' → rank 0 sends 'go'
//
// The control connections stay open for the whole run (gather, barrier, heartbeats, failures).
import { randomBytes } from 'node:crypto';
import net, { type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlChannel } from './control-channel';
import { encodeControl, rejectedError, rejectFrame, PROTOCOL_NAME, PROTOCOL_VERSION, type ControlMessage, type PeerInfo } from './control-frames';
import { Dtype, encodeHeader, HEADER_BYTES, Kind, readHeader } from './data-frames';
import { abortedError, CollectiveError, errnoCode } from './errors';
import type { RendezvousEnv } from './rendezvous-env';
import type { RingEngine } from './ring-engine';
import { readBootId } from '../util/boot-id';

export interface RendezvousOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  bindAddr?: string;
  masterBindAddr?: string;
  /** Ring neighbours on the same machine talk over a Unix socket ('unix', default) or loopback TCP. */
  sameHostTransport?: 'unix' | 'tcp';
  /** Builds the data-plane receiver once the table is known; its `onread` reads the left socket. */
  engineFor: (peers: PeerInfo[]) => RingEngine;
}

export interface RingSetup {
  peers: PeerInfo[];
  /** How this rank reaches its left neighbour and is reached by its right one. */
  transport: { left: 'tcp' | 'unix'; right: 'tcp' | 'unix' };
  /** Rank 0: channels to ranks 1..n-1 by rank. Others: the channel to rank 0, under key 0. */
  control: Map<number, ControlChannel>;
  left: Socket;
  right: Socket;
  /** Bytes the right neighbour sent after its data hello (normally none). */
  rightLeftover: Buffer;
}

const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED']);

/** Everything the rendezvous opened, so a failure at any point closes all of it. */
class Opened {
  readonly sockets = new Set<Socket>();
  readonly servers = new Set<Server>();
  closeAll(): void {
    for (const s of this.servers) s.close();
    // end() first so a pending 'reject' message still reaches the peer; destroy shortly after.
    for (const s of this.sockets) {
      s.end();
      setTimeout(() => s.destroy(), 500).unref();
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function listen(server: Server, host: string, port: number, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    if (signal.aborted) return reject(abortedError('listen', signal));
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', onError);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : port);
    });
  });
}

/** Where to connect: TCP host:port, or a Unix socket path (port 0). */
function connectOnce(host: string, port: number, signal: AbortSignal, onread?: net.OnReadOpts): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const where = port === 0 ? { path: host } : { host, port };
    const sock = onread ? net.connect({ ...where, onread }) : net.connect(where);
    const onAbort = (): void => {
      sock.destroy();
      reject(abortedError('connect', signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    sock.once('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      sock.destroy();
      reject(err);
    });
    sock.once('connect', () => {
      signal.removeEventListener('abort', onAbort);
      sock.removeAllListeners('error');
      resolve(sock);
    });
  });
}

/** Connect, retrying refused/unreachable until `signal` fires; `lastError` records why it keeps failing. */
async function connectRetry(host: string, port: number, signal: AbortSignal, lastError: { code: string }, onread?: net.OnReadOpts): Promise<Socket> {
  for (;;) {
    try {
      return await connectOnce(host, port, signal, onread);
    } catch (err) {
      if (signal.aborted) throw err;
      lastError.code = errnoCode(err);
      if (!RETRYABLE.has(lastError.code)) {
        throw new CollectiveError('connect-failed', `cannot connect to ${host}:${port}: ${lastError.code}`, { cause: err, hint: 'check the address (does the name resolve on this host?)' });
      }
    }
    await sleep(200, signal);
  }
}

/** Accepts data connections and files them by the rank their hello frame names. */
class DataAcceptor {
  private readonly arrived = new Map<number, { socket: Socket; leftover: Buffer }>();
  private wake: (() => void) | undefined;
  error: CollectiveError | undefined;

  constructor(private readonly opened: Opened, private readonly worldSize: number) {}

  attach(server: Server): void {
    const opened = this.opened;
    server.on('connection', (socket) => {
      opened.sockets.add(socket);
      let got = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        got = Buffer.concat([got, chunk]);
        if (got.length < HEADER_BYTES) return;
        socket.off('data', onData);
        socket.pause();
        const h = readHeader(got);
        if (!h || h.kind !== Kind.Hello) return void socket.destroy(); // not a Cohort rank
        if (h.seq !== PROTOCOL_VERSION || h.count !== this.worldSize) {
          this.error = new CollectiveError('rendezvous-mismatch', `rank ${h.aux} opened a data connection with protocol v${h.seq} and world size ${h.count}, this rank has v${PROTOCOL_VERSION} and world size ${this.worldSize}`);
        } else this.arrived.set(h.aux, { socket, leftover: got.subarray(HEADER_BYTES) });
        this.wake?.();
      };
      socket.on('data', onData);
      socket.on('error', () => socket.destroy());
    });
  }

  async take(rank: number, signal: AbortSignal): Promise<{ socket: Socket; leftover: Buffer }> {
    for (;;) {
      if (this.error) throw this.error;
      const got = this.arrived.get(rank);
      if (got) return got;
      if (signal.aborted) throw abortedError('accept', signal);
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.wake = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

function expectMessage<T extends ControlMessage['t']>(m: ControlMessage, t: T, from: string): Extract<ControlMessage, { t: T }> {
  if (m.t === 'reject') throw rejectedError(m);
  if (m.t !== t) throw new CollectiveError('protocol', `expected '${t}' from ${from} during the rendezvous, got '${m.t}'`);
  return m as Extract<ControlMessage, { t: T }>;
}

/** Identifies this machine (boot id) for this host name; equal ids can share Unix sockets. */
function machineId(host: string): string {
  return `${host}|${readBootId() ?? 'no-boot-id'}`;
}

export async function rendezvous(env: RendezvousEnv, opts: RendezvousOptions): Promise<RingSetup> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const opened = new Opened();
  const secs = `${Math.round(opts.timeoutMs / 100) / 10} s`;
  const master = `${env.masterAddr}:${env.masterPort}`;
  const lastError = { code: '' };
  // What this rank is waiting for, for the timeout message.
  let waiting = (): string => `rank ${env.rank} timed out after ${secs} in the rendezvous`;
  try {
    const setup = env.rank === 0 ? await asMaster() : await asWorker();
    for (const s of opened.servers) s.close();
    return setup;
  } catch (err) {
    opened.closeAll();
    if (opts.signal?.aborted) throw abortedError(`rank ${env.rank}'s rendezvous`, opts.signal);
    if (timeout.aborted) throw new CollectiveError('rendezvous-timeout', waiting(), { cause: err });
    throw err;
  }

  /** This rank's data listeners: TCP, plus a Unix socket for ring neighbours on the same machine. */
  async function openData(dataHost: string): Promise<{ acceptor: DataAcceptor; port: number; unix?: string; machine?: string }> {
    const acceptor = new DataAcceptor(opened, env.worldSize);
    const data = net.createServer();
    opened.servers.add(data);
    acceptor.attach(data);
    const port = await listen(data, dataHost, 0, signal);
    if (opts.sameHostTransport === 'tcp') return { acceptor, port };
    // Linux: an abstract socket (leading NUL) leaves no file behind when a rank is killed
    // mid-rendezvous; elsewhere a file in tmpdir, removed when the listener closes.
    const name = `cohort-ring-${process.pid}-${randomBytes(4).toString('hex')}`;
    const path = process.platform === 'linux' ? `\0${name}` : join(tmpdir(), `${name}.sock`);
    const local = net.createServer();
    opened.servers.add(local);
    acceptor.attach(local);
    try {
      await new Promise<void>((resolve, reject) => {
        local.once('error', reject);
        local.listen({ path }, () => resolve());
      });
    } catch {
      return { acceptor, port }; // no Unix socket here (read-only tmpdir?): TCP only
    }
    return { acceptor, port, unix: path, machine: machineId(env.host) };
  }

  async function ring(peers: PeerInfo[], acceptor: DataAcceptor, onread: net.OnReadOpts): Promise<{ left: Socket; right: Socket; rightLeftover: Buffer; transport: RingSetup['transport'] }> {
    const n = env.worldSize;
    const me = peers[env.rank]!;
    const l = peers[(env.rank - 1 + n) % n]!;
    const r = peers[(env.rank + 1) % n]!;
    // Unix sockets cost about half the CPU of loopback TCP per byte (measured: 11 vs 22 ms per
    // 100 MB and side), and a local ring is CPU-bound. "Same machine" also needs the same
    // COHORT_HOST, so namespace-emulated hosts on one box still use (shaped) TCP.
    let leftUnix = opts.sameHostTransport !== 'tcp' && l.unix !== undefined && l.machine !== undefined && l.machine === me.machine;
    waiting = () => `rank ${env.rank} waited ${secs} to connect to its left ring neighbour rank ${l.rank} at ${l.addr}:${l.port}${lastError.code ? ` (${lastError.code})` : ''}; data ports are ephemeral, so firewalls between hosts must allow them`;
    lastError.code = '';
    let left: Socket | undefined;
    if (leftUnix) {
      // The listener is up (it registered before the table went out), so one attempt decides;
      // if it fails (say, separate network namespaces), TCP still works.
      left = await connectOnce(l.unix!, 0, signal, onread).catch((err: unknown) => {
        if (signal.aborted) throw err;
        return undefined;
      });
      leftUnix = left !== undefined;
    }
    left ??= await connectRetry(l.addr, l.port, signal, lastError, onread);
    opened.sockets.add(left);
    left.setNoDelay(true);
    left.setKeepAlive(true, 1000);
    left.write(encodeHeader({ kind: Kind.Hello, dtype: Dtype.F32, aux: env.rank, seq: PROTOCOL_VERSION, count: n }));
    waiting = () => `rank ${env.rank} waited ${secs} for its right ring neighbour rank ${r.rank} (${r.host}) to connect to ${peers[env.rank]!.addr}:${peers[env.rank]!.port}`;
    const { socket: right, leftover } = await acceptor.take(r.rank, signal);
    right.setNoDelay(true);
    right.setKeepAlive(true, 1000);
    return { left, right, rightLeftover: leftover, transport: { left: leftUnix ? 'unix' : 'tcp', right: right.remoteAddress === undefined ? 'unix' : 'tcp' } };
  }

  async function asMaster(): Promise<RingSetup> {
    const n = env.worldSize;
    const bindHost = opts.masterBindAddr ?? (net.isIP(env.masterAddr) ? env.masterAddr : '0.0.0.0');
    const server = net.createServer();
    opened.servers.add(server);
    try {
      await listen(server, bindHost, env.masterPort, signal);
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EADDRINUSE') {
        throw new CollectiveError('master-port-in-use', `MASTER_PORT ${env.masterPort} on ${bindHost} is in use; choose another port`, { cause: err, hint: 'another run or a leftover rank 0 may hold it' });
      }
      if (code === 'EADDRNOTAVAIL') {
        throw new CollectiveError('bad-env', `MASTER_ADDR ${env.masterAddr} is not an address of rank 0's host, so rank 0 cannot listen on it`, { cause: err, hint: 'set MASTER_ADDR to an address of the host running rank 0' });
      }
      throw new CollectiveError('connect-failed', `rank 0 cannot listen on ${bindHost}:${env.masterPort}: ${code}`, { cause: err });
    }
    const dataHost = opts.bindAddr ?? bindHost;
    const { acceptor, port: dataPort, unix, machine } = await openData(dataHost);
    const unspecified = dataHost === '0.0.0.0' || dataHost === '::';
    const peers: PeerInfo[] = [{ rank: 0, host: env.host, addr: unspecified ? env.masterAddr : dataHost, port: dataPort, ...(unix ? { unix, machine } : {}) }];
    const control = new Map<number, ControlChannel>();

    waiting = () => {
      const missing = Array.from({ length: n - 1 }, (_, i) => i + 1).filter((k) => !control.has(k));
      return `rank 0 waited ${secs} for rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (world size ${n}) to register at ${bindHost}:${env.masterPort}; are they running with the same MASTER_ADDR/MASTER_PORT, and can they reach it?`;
    };
    await new Promise<void>((resolve, reject) => {
      const fail = (err: CollectiveError): void => {
        for (const ch of control.values()) ch.send(rejectFrame(err));
        reject(err);
      };
      signal.addEventListener('abort', () => reject(abortedError('registration', signal)), { once: true });
      server.on('connection', (sock) => {
        opened.sockets.add(sock);
        const ch = new ControlChannel(sock);
        ch.next(signal).then((m) => {
          if (m.t !== 'hello' || m.proto !== PROTOCOL_NAME) return void sock.destroy(); // not a Cohort rank
          const from = `rank ${m.rank} on ${m.host}`;
          let problem: [string, string] | undefined; // what, and what to do (the error's hint)
          if (m.v !== PROTOCOL_VERSION) problem = [`${from} speaks collective protocol v${m.v} but rank 0 speaks v${PROTOCOL_VERSION}`, 'deploy the same trainer build to every host'];
          else if (m.worldSize !== n) problem = [`${from} has WORLD_SIZE=${m.worldSize} but rank 0 has WORLD_SIZE=${n}`, 'every rank must be launched with the same WORLD_SIZE'];
          else if (m.rank === 0 || m.rank >= n) problem = [`${from} registered with RANK=${m.rank}, outside 1..${n - 1} for WORLD_SIZE=${n}`, `launch the ranks with RANK 0..${n - 1}, each once`];
          else if (control.has(m.rank)) problem = [`RANK=${m.rank} registered twice (from ${peers[m.rank]!.host} and ${m.host})`, 'every rank needs a unique RANK'];
          if (problem) {
            const err = new CollectiveError('rendezvous-mismatch', problem[0], { hint: problem[1] });
            sock.write(encodeControl(rejectFrame(err, { host: m.host, rank: m.rank })));
            return fail(err);
          }
          control.set(m.rank, ch);
          const { t: _t, proto: _p, v: _v, worldSize: _w, ...info } = m;
          peers[m.rank] = info;
          if (control.size === n - 1) resolve();
        }, () => sock.destroy());
      });
    });
    server.close(); // no more registrations; accepted control connections stay open
    for (const ch of control.values()) ch.send({ t: 'table', peers });

    const ringSockets = await Promise.race([ring(peers, acceptor, onreadFor(peers)), lossOf(control, peers)]);
    const notReady = new Set(control.keys());
    waiting = () => `rank 0 waited ${secs} for rank${notReady.size > 1 ? 's' : ''} ${[...notReady].join(', ')} to connect their ring neighbours`;
    await Promise.all(
      [...control].map(async ([k, ch]) => {
        try {
          expectMessage(await ch.next(signal), 'ready', `rank ${k}`);
        } catch (err) {
          if (err instanceof CollectiveError && err.code === 'peer-lost') throw new CollectiveError('peer-lost', `rank ${k} (${peers[k]!.host}) disconnected during the rendezvous`, { cause: err });
          throw err;
        }
        notReady.delete(k);
      }),
    );
    for (const ch of control.values()) ch.send({ t: 'go' });
    return { peers, control, ...ringSockets };
  }

  async function asWorker(): Promise<RingSetup> {
    const n = env.worldSize;
    waiting = () => `rank ${env.rank} waited ${secs} for master ${master}; is rank 0 running and the port reachable?${lastError.code ? ` (last attempt: ${lastError.code})` : ''}`;
    const sock = await connectRetry(env.masterAddr, env.masterPort, signal, lastError);
    opened.sockets.add(sock);
    const ch = new ControlChannel(sock);
    const dataHost = opts.bindAddr ?? sock.localAddress ?? '0.0.0.0';
    const { acceptor, port: dataPort, unix, machine } = await openData(dataHost);
    ch.send({ t: 'hello', proto: PROTOCOL_NAME, v: PROTOCOL_VERSION, rank: env.rank, worldSize: n, host: env.host, addr: dataHost, port: dataPort, ...(unix ? { unix, machine } : {}) });
    waiting = () => `rank ${env.rank} registered with master ${master} but the rank table did not arrive within ${secs}: rank 0 is still waiting for other ranks of world size ${n}`;
    const table = expectMessage(await ch.next(signal).catch(masterGone), 'table', 'rank 0');
    const peers = table.peers;
    if (peers.length !== n || peers.some((p, i) => p.rank !== i)) throw new CollectiveError('protocol', `rank 0 sent a table of ${peers.length} ranks for world size ${n}`);
    const ringSockets = await Promise.race([ring(peers, acceptor, onreadFor(peers)), lossOf(new Map([[0, ch]]), peers)]);
    ch.send({ t: 'ready' });
    waiting = () => `rank ${env.rank} is connected but rank 0 did not start the run within ${secs}: another rank could not connect its ring neighbours`;
    expectMessage(await ch.next(signal).catch(masterGone), 'go', 'rank 0');
    return { peers, control: new Map([[0, ch]]), ...ringSockets };
  }

  /** Rejects as soon as a control connection of the rendezvous closes, instead of waiting out the timeout. */
  function lossOf(control: Map<number, ControlChannel>, peers: PeerInfo[]): Promise<never> {
    return new Promise((_, reject) => {
      for (const [k, ch] of control) {
        const lost = (): void => reject(new CollectiveError('peer-lost', `rank ${k} (${peers[k]?.host ?? 'unknown host'}) disconnected during the rendezvous`, { hint: `see rank ${k}'s log` }));
        if (ch.socket.destroyed) lost();
        ch.socket.once('close', lost);
        signal.addEventListener('abort', () => ch.socket.off('close', lost), { once: true });
      }
    });
  }

  function masterGone(err: unknown): never {
    if (err instanceof CollectiveError && err.code === 'peer-lost') {
      throw new CollectiveError('peer-lost', `rank 0 (master ${master}) closed the rendezvous connection`, { cause: err, hint: 'see rank 0\'s log' });
    }
    throw err;
  }

  function onreadFor(peers: PeerInfo[]): net.OnReadOpts {
    return opts.engineFor(peers).onread;
  }
}
