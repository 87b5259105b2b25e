// The tcp-ring backend: data over the ring (ring-engine.ts), small ops and liveness over the
// rank-0 star of control connections. Operations run strictly in call order (one queue), which is
// what lets every rank derive the same sequence numbers without negotiating them.
import type { Socket } from 'node:net';
import { DisposableBase, Emitter } from '../protocol/lifecycle';
import type { AllreduceOptions, Collective, OpOptions, ShardedUpdateOptions } from './collective';
import type { ControlChannel } from './control-channel';
import type { ControlMessage, PeerInfo } from './control-frames';
import { Dtype, encodeHeader, HEADER_BYTES, Kind, readHeader } from './data-frames';
import { abortedError, CollectiveError, PeerLostError, type HangReport } from './errors';
import { Progress, heartbeat, type HangBounds } from './hang';
import type { RendezvousEnv } from './rendezvous-env';
import { rendezvous } from './rendezvous';
import type { ReduceHome } from './reduce-kernel';
import { RingEngine } from './ring-engine';

export interface TcpRingOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  bindAddr?: string;
  masterBindAddr?: string;
  sameHostTransport?: 'unix' | 'tcp';
  hang: HangBounds;
}

interface Waiter {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

interface Collect {
  kind: 'barrier' | 'gather';
  root: number;
  values: Map<number, unknown>;
}

export class TcpRingCollective extends DisposableBase implements Collective {
  readonly backend = 'tcp-ring' as const;
  readonly rank: number;
  readonly worldSize: number;
  readonly transport: string;
  private readonly peers: PeerInfo[];
  private readonly control: Map<number, ControlChannel>;
  private readonly left: Socket;
  private readonly right: Socket;
  private readonly engine: RingEngine;
  private tail: Promise<unknown> = Promise.resolve();
  private failure: CollectiveError | undefined;
  /** Set when a peer left gracefully: the op in flight may still finish, later ops cannot. */
  private gone: PeerLostError | undefined;
  private readonly leftRanks = new Set<number>();
  /** A ring socket that delivered a Bye frame may close quietly; any other close is a loss. */
  private readonly byeOn = { left: false, right: false };
  private readonly failures = this.register(new Emitter<PeerLostError>());
  private currentReject: ((e: Error) => void) | undefined;
  private ctlSeq = 0;
  private readonly waiters = new Map<string, Waiter>();
  private readonly collects = new Map<number, Collect>();
  private readonly heartbeat: NodeJS.Timeout;
  /** The op in flight and every rank's last phase, for a hang report (hang.ts). */
  private readonly progress = new Progress();

  static async connect(env: RendezvousEnv, opts: TcpRingOptions): Promise<TcpRingCollective> {
    let engine: RingEngine | undefined;
    const ref: { self?: TcpRingCollective } = {};
    const n = env.worldSize;
    const early: Array<() => void> = [];
    const setup = await rendezvous(env, {
      ...opts,
      engineFor: (peers) => {
        const l = peers[(env.rank - 1 + n) % n]!;
        engine = new RingEngine(env.rank, n, l.rank, l.host, {
          // Events during the rendezvous are replayed once the collective exists.
          onLeftBye: (lost) => void (ref.self ? ref.self.onBye(l.rank, 'left', lost) : early.push(() => ref.self!.onBye(l.rank, 'left', lost))),
          onFatal: (err) => {
            // A failed write to the right neighbour means that rank is gone: name it, like a closed socket would.
            const right = (env.rank + 1) % n;
            const apply = () => (err.code === 'peer-lost' && !(err instanceof PeerLostError) ? ref.self!.departed(right, err.message) : ref.self!.setFailure(err, false));
            void (ref.self ? apply() : early.push(apply));
          },
        });
        return engine;
      },
    });
    const t = setup.transport;
    const transport = t.left === t.right ? t.left : `left ${t.left}, right ${t.right}`;
    const self = new TcpRingCollective(env, transport, setup.peers, setup.control, setup.left, setup.right, engine!, setup.rightLeftover, opts.hang);
    ref.self = self;
    for (const f of early) f();
    return self;
  }

  private constructor(
    env: RendezvousEnv,
    transport: string,
    peers: PeerInfo[],
    control: Map<number, ControlChannel>,
    left: Socket,
    right: Socket,
    engine: RingEngine,
    rightLeftover: Buffer,
    hangBounds: HangBounds,
  ) {
    super();
    this.rank = env.rank;
    this.worldSize = env.worldSize;
    this.transport = transport;
    this.peers = peers;
    this.control = control;
    this.left = left;
    this.right = right;
    this.engine = engine;
    engine.attach(left, right);
    const n = this.worldSize;
    const leftRank = (this.rank - 1 + n) % n;
    const rightRank = (this.rank + 1) % n;

    for (const [k, ch] of control) {
      ch.maxGapMs = 0; // the rendezvous' waits (ranks starting minutes apart) say nothing about step lengths
      ch.listen(
        (m) => this.onControl(k, m),
        (reason) => this.departed(k, reason),
      );
    }
    const watch = (sock: Socket, peer: number, which: 'left' | 'right'): void => {
      // Forced even if `peer` said bye on the control connection: a ring stream that ends without
      // its own Bye frame was cut mid-operation.
      const lost = (why: string) => () => void (this.byeOn[which] || this.departed(peer, `${which} ring connection ${why}`, undefined, true));
      sock.on('error', (err: Error & { code?: string }) => lost(`failed (${err.code ?? err.message})`)());
      sock.on('end', lost('closed by the peer'));
      sock.on('close', lost('closed'));
    };
    watch(left, leftRank, 'left');
    watch(right, rightRank, 'right');
    // The right neighbour only ever sends us a Bye frame on this socket.
    let pending = rightLeftover;
    const onRight = (chunk: Buffer): void => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= HEADER_BYTES) {
        const h = readHeader(pending);
        pending = pending.subarray(HEADER_BYTES);
        if (h?.kind === Kind.Bye) this.onBye(rightRank, 'right', h.aux === 0 ? undefined : h.aux - 1);
        else this.setFailure(new CollectiveError('protocol', `rank ${rightRank} sent an unexpected frame on the ring's return path`), false);
      }
    };
    right.on('data', onRight);
    right.resume();
    if (rightLeftover.length) onRight(Buffer.alloc(0));

    this.heartbeat = heartbeat(this.control, hangBounds, (k) => this.leftRanks.has(k) || !!this.failure, (k, silentMs, limitMs) => {
      const { reason, hang } = this.progress.describe(this.rank, this.peers, k, silentMs, limitMs, hangBounds.floorMs);
      this.departed(k, reason, undefined, false, hang);
    });
  }

  /** The step phase this rank enters: rank 0 keeps it, the others tell rank 0 (what a hang report names). */
  notePhase(phase: string, step: number): void {
    this.progress.note(this.rank, phase, step);
    if (this.rank !== 0) this.control.get(0)?.send({ t: 'ph', p: phase, s: step });
  }

  get bytesSent(): number {
    return this.engine.bytesSent;
  }

  allreduce(buf: Float32Array, opts: AllreduceOptions = {}): Promise<void> {
    if (!(buf instanceof Float32Array)) return Promise.reject(new CollectiveError('bad-argument', 'allreduce: buf must be a Float32Array'));
    return this.enqueue('allreduce', opts.signal, () => this.engine.allreduce(buf, opts.average === true, opts.fp16 === true));
  }

  shardedUpdate(grads: Float32Array, params: Float32Array, opts: ShardedUpdateOptions): Promise<void> {
    if (!(grads instanceof Float32Array) || !(params instanceof Float32Array) || grads.length !== params.length) {
      return Promise.reject(new CollectiveError('bad-argument', `shardedUpdate: grads and params must be Float32Arrays of one length (got ${grads?.length} and ${params?.length})`));
    }
    return this.enqueue('sharded update', opts.signal, () => this.engine.shardedUpdate(grads, params, opts.average === true, opts.update));
  }

  ownedRange(len: number): [number, number] {
    return this.engine.ownedRange(len);
  }

  broadcast(buf: Float32Array, root: number, opts: OpOptions = {}): Promise<void> {
    const bad = this.checkRoot('broadcast', root);
    if (bad) return Promise.reject(bad);
    return this.enqueue('broadcast', opts.signal, () => this.engine.broadcast(buf, root));
  }

  gather<T>(value: T, root: number, opts: OpOptions = {}): Promise<T[] | undefined> {
    const bad = this.checkRoot('gather', root);
    if (bad) return Promise.reject(bad);
    return this.enqueue('gather', opts.signal, async () => {
      const seq = this.ctlSeq++;
      if (this.rank === 0) {
        const done = root === 0 ? this.wait(`gathered:${seq}`) : undefined;
        this.collect(seq, 'gather', root, 0, value);
        return done ? ((await done) as T[]) : undefined;
      }
      const done = root === this.rank ? this.wait(`gathered:${seq}`) : undefined;
      this.control.get(0)!.send({ t: 'gather', seq, root, value });
      return done ? ((await done) as T[]) : undefined;
    });
  }

  barrier(opts: OpOptions = {}): Promise<void> {
    return this.enqueue('barrier', opts.signal, async () => {
      const seq = this.ctlSeq++;
      const done = this.wait(`release:${seq}`);
      if (this.rank === 0) this.collect(seq, 'barrier', 0, 0, null);
      else this.control.get(0)!.send({ t: 'barrier', seq });
      await done;
    });
  }

  onFailure(listener: (err: PeerLostError) => void): () => void {
    return this.failures.event(listener);
  }

  registerMemory(home: ReduceHome): void {
    this.engine.registerMemory(home);
  }

  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    clearInterval(this.heartbeat);
    const cause = this.failure instanceof PeerLostError ? this.failure : undefined;
    const idle = this.engine.idle;
    this.setFailure(new CollectiveError('disposed', `rank ${this.rank}'s collective was disposed`), false);
    const lost = cause ? { rank: cause.peerRank, host: cause.peerHost, reason: cause.reason } : undefined;
    for (const ch of this.control.values()) {
      ch.send(lost ? { t: 'bye', lost } : { t: 'bye' });
      ch.socket.end();
    }
    // A Bye frame may only follow a complete op: mid-op it would land inside the payload.
    const bye = idle ? encodeHeader({ kind: Kind.Bye, dtype: Dtype.F32, aux: lost ? lost.rank + 1 : 0, seq: 0, count: 0 }) : undefined;
    for (const s of [this.left, this.right]) {
      if (bye && s.writable) s.end(bye);
      else s.end();
    }
    const all = [this.left, this.right, ...[...this.control.values()].map((c) => c.socket)];
    setTimeout(() => all.forEach((s) => s.destroy()), 1000).unref();
  }

  // ---- internals ----------------------------------------------------------------------------

  private checkRoot(what: string, root: number): CollectiveError | undefined {
    if (Number.isInteger(root) && root >= 0 && root < this.worldSize) return undefined;
    return new CollectiveError('bad-argument', `${what}: root ${root} is out of range for world size ${this.worldSize}`);
  }

  private enqueue<T>(what: string, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
    const unusable = this.failure ?? this.gone;
    if (unusable) return Promise.reject(unusable);
    if (signal?.aborted) return Promise.reject(abortedError(what, signal));
    const result = this.tail.then(async () => {
      const now = this.failure ?? this.gone;
      if (now) throw now;
      if (signal?.aborted) throw abortedError(what, signal);
      this.progress.begin(what);
      let onAbort: (() => void) | undefined;
      const interrupted = new Promise<never>((_, reject) => {
        this.currentReject = reject;
        onAbort = () => {
          // The peers are mid-operation with us: the ring cannot be resynchronised, so leave it.
          const err = abortedError(`rank ${this.rank}'s ${what}`, signal);
          reject(err);
          this.setFailure(err, false); // also cuts the ring, so neighbours do not wait for our dispose()
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      try {
        return await Promise.race([run(), interrupted]);
      } finally {
        if (onAbort) signal?.removeEventListener('abort', onAbort);
        this.currentReject = undefined;
        this.progress.end();
      }
    });
    this.tail = result.catch(() => undefined);
    return result;
  }

  private wait(key: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.waiters.set(key, { resolve, reject }));
  }

  private settle(key: string, value: unknown): void {
    const w = this.waiters.get(key);
    this.waiters.delete(key);
    w?.resolve(value);
  }

  /** Rank 0: record one rank's arrival at barrier/gather `seq`; complete it when all have arrived. */
  private collect(seq: number, kind: 'barrier' | 'gather', root: number, from: number, value: unknown): void {
    let c = this.collects.get(seq);
    if (!c) this.collects.set(seq, (c = { kind, root, values: new Map() }));
    if (c.kind !== kind || c.root !== root) {
      const other = `${c.kind}${c.kind === 'gather' ? `(root ${c.root})` : ''}`;
      return this.setFailure(new CollectiveError('protocol', `ranks disagree on control op #${seq}: rank ${from} called ${kind}${kind === 'gather' ? `(root ${root})` : ''}, another rank called ${other}; every rank must call the same collectives in the same order`), false);
    }
    c.values.set(from, value);
    if (c.values.size < this.worldSize) return;
    this.collects.delete(seq);
    if (kind === 'barrier') {
      for (const ch of this.control.values()) ch.send({ t: 'release', seq });
      this.settle(`release:${seq}`, undefined);
      return;
    }
    const values = Array.from({ length: this.worldSize }, (_, i) => c.values.get(i));
    if (root === 0) this.settle(`gathered:${seq}`, values);
    else this.control.get(root)?.send({ t: 'gathered', seq, values });
  }

  private onControl(from: number, m: ControlMessage): void {
    switch (m.t) {
      case 'hb':
        return;
      case 'ph':
        return this.progress.note(from, m.p, m.s);
      case 'barrier':
        if (this.rank === 0) this.collect(m.seq, 'barrier', 0, from, null);
        return;
      case 'gather':
        if (this.rank === 0) this.collect(m.seq, 'gather', m.root, from, m.value);
        return;
      case 'release':
        return this.settle(`release:${m.seq}`, undefined);
      case 'gathered':
        return this.settle(`gathered:${m.seq}`, m.values);
      case 'lost':
        if (m.graceful) return this.leaving(m.rank, 'relay');
        // A relayed hang keeps its words and its finder: this rank's error tells the same story.
        if (m.hang) return this.departed(m.rank, m.reason, m.host, false, m.hang, m.observedBy ?? from);
        return this.departed(m.rank, `${m.reason} (reported by rank ${from})`, m.host);
      case 'bye':
        return this.onBye(from, 'control', m.lost?.rank, m.lost?.reason);
      default:
        return this.setFailure(new CollectiveError('protocol', `unexpected control message '${m.t}' from rank ${from} after the rendezvous`), false);
    }
  }

  private onBye(from: number, via: 'control' | 'left' | 'right', lostRank: number | undefined, reason?: string): void {
    if (via !== 'control') this.byeOn[via] = true;
    if (lostRank === undefined) this.leaving(from, via);
    else this.departed(lostRank, `${reason ?? 'lost'} (reported by rank ${from})`);
  }

  /**
   * `rank` disposed its collective after finishing its ops. Every stream is ordered, so a Bye
   * follows all of that rank's data on the same connection: if we still wait on that connection
   * now, the wait can never end; otherwise the op in flight can finish and only later ops fail.
   */
  private leaving(rank: number, via: 'control' | 'left' | 'right' | 'relay'): void {
    if (this.isDisposed || this.failure || this.leftRanks.has(rank)) return;
    this.leftRanks.add(rank);
    const err = new PeerLostError(rank, this.peers[rank]?.host ?? 'unknown host', 'it left the run (its collective was disposed)', { observedBy: this.rank });
    this.gone ??= err;
    if (this.rank === 0) for (const [k, ch] of this.control) if (k !== rank) ch.send({ t: 'lost', rank, host: err.peerHost, reason: err.reason, graceful: true });
    const stuck =
      (via === 'left' && this.engine.awaitingLeft) ||
      (via === 'control' && this.rank !== 0 && this.waiters.size > 0) ||
      (via === 'control' && this.rank === 0 && [...this.collects.values()].some((c) => !c.values.has(rank)));
    if (stuck) this.setFailure(err, false);
  }

  /** `observedBy`: the rank that found a hang (this one unless the hang was relayed to it). */
  private departed(rank: number, reason: string, host?: string, force = false, hang?: HangReport, observedBy = this.rank): void {
    if (this.isDisposed || this.failure || (this.leftRanks.has(rank) && !force)) return;
    const err = new PeerLostError(rank, host ?? this.peers[rank]?.host ?? 'unknown host', reason, { observedBy, ...(hang ? { hang } : {}) });
    this.setFailure(err, true);
    // Ranks that are not neighbours of the lost one learn it through rank 0.
    const notice: ControlMessage = { t: 'lost', rank, host: err.peerHost, reason, graceful: false, ...(hang ? { hang, observedBy } : {}) };
    if (this.rank === 0) for (const [k, ch] of this.control) if (k !== rank) ch.send(notice);
    if (this.rank !== 0 && rank !== 0) this.control.get(0)?.send(notice);
  }

  /**
   * This rank can no longer take part (protocol disagreement, aborted op): tell everyone why,
   * through rank 0, and cut the ring so neighbours blocked on our stream fail at once.
   */
  private abandon(reason: string): void {
    if (this.isDisposed) return;
    const notice: ControlMessage = { t: 'lost', rank: this.rank, host: this.peers[this.rank]?.host ?? 'unknown host', reason, graceful: false };
    for (const ch of this.control.values()) ch.send(notice);
    this.left.end();
    this.right.end();
  }

  private setFailure(err: CollectiveError, fire: boolean): void {
    if (this.failure) return;
    this.failure = err;
    this.engine.fail(err);
    this.currentReject?.(err);
    for (const w of this.waiters.values()) w.reject(err);
    this.waiters.clear();
    if (err.code === 'protocol' || err.code === 'aborted') this.abandon(err.message);
    // Emitter.fire: a listener's bug does not stop the others from hearing about the failure.
    if (fire && err instanceof PeerLostError) this.failures.fire(err);
  }
}
