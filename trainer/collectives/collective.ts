// The one collective interface the rank loop sees (Horovod's shape, STYLE.md §2/§10): backends
// implement it, are tried in order by connectCollective, and nothing outside this folder names one.
import type { PeerLostError } from './errors';
import type { ReduceHome } from './reduce-kernel';

export interface AllreduceOptions {
  /** Divide the sum by worldSize (done once, by the rank that owns each reduced segment). */
  average?: boolean;
  /** Values travel as IEEE half (bytes halve); sums accumulate in f32. Every rank ends with identical values. */
  fp16?: boolean;
  signal?: AbortSignal;
}

export interface OpOptions {
  signal?: AbortSignal;
}

export interface ShardedUpdateOptions {
  /** Divide the gradient sum by worldSize before `update` sees it. */
  average?: boolean;
  /**
   * Called on this rank's segment (see ownedRange), piece by piece as each is fully reduced:
   * reads `grads[start, end)` and must write `params[start, end)`. `start` is a multiple of 4.
   */
  update(start: number, end: number): void;
  signal?: AbortSignal;
}

export type BackendName = 'loopback' | 'tcp-ring';

export interface Collective {
  readonly rank: number;
  readonly worldSize: number;
  readonly backend: BackendName;
  /** How data reaches the ring neighbours: 'tcp', 'unix' (same-machine neighbours), 'left unix, right tcp'…, or 'none' (loopback). */
  readonly transport: string;
  /**
   * Lets allreduce add in place into arrays that live on `home.memory` (a fixed-size wasm memory,
   * e.g. the optimizer's), using `COLLECTIVE_SCRATCH_BYTES` of it at `home.scratchOffset`, instead
   * of copying each piece through the collective's own memory. Other arrays work as before.
   */
  registerMemory(home: ReduceHome): void;
  /** In-place sum across ranks (then divided if `average`). Operations run in call order. */
  allreduce(buf: Float32Array, opts?: AllreduceOptions): Promise<void>;
  /**
   * The data-parallel step with the optimizer sharded across ranks (ZeRO stage 1): gradients are
   * reduce-scattered, each rank updates only the parameters of the segment it owns
   * (`ownedRange(grads.length)`) through `opts.update`, and the updated parameters are all-gathered.
   * Same bytes on the wire as an f32 allreduce; the update costs 1/worldSize per rank. Afterwards
   * `params` is identical everywhere; `grads` is fully reduced only on the owned segment.
   */
  shardedUpdate(grads: Float32Array, params: Float32Array, opts: ShardedUpdateOptions): Promise<void>;
  /** [start, end) of a `len`-element buffer whose update this rank owns in shardedUpdate (all of it at world size 1). */
  ownedRange(len: number): [number, number];
  /** Every rank's `buf` (same length everywhere) becomes root's. */
  broadcast(buf: Float32Array, root: number, opts?: OpOptions): Promise<void>;
  /** Small JSON values to root: all ranks' values (index = rank) on root, undefined elsewhere. */
  gather<T>(value: T, root: number, opts?: OpOptions): Promise<T[] | undefined>;
  barrier(opts?: OpOptions): Promise<void>;
  /**
   * The step phase this rank enters (`data`, `compute`, `exchange`, `optimizer`) at `step`: kept for
   * a hang report, which names every rank's last phase. Optional: backends without peers ignore it.
   */
  notePhase?(phase: string, step: number): void;
  /** Cumulative payload bytes this rank sent on the data ring. */
  readonly bytesSent: number;
  /** Fires once when a peer is lost; afterwards every pending and later op rejects with that error. Returns a disposer. */
  onFailure(listener: (err: PeerLostError) => void): () => void;
  /** Idempotent: rejects pending ops, tells peers this rank is leaving, closes every socket. */
  dispose(): void;
}

export interface ConnectOptions {
  /** Whole rendezvous (register, table, ring connections). Default 60 000. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Address for this rank's data listener. Default: the local address this rank reaches the master from. */
  bindAddr?: string;
  /** Address rank 0 binds MASTER_PORT on. Default: MASTER_ADDR when it is an IP literal, else 0.0.0.0. */
  masterBindAddr?: string;
  /**
   * A peer whose control connection is silent this long is declared lost. Default 30 000: heartbeats
   * come from the JS thread, so a rank inside a long synchronous compute step cannot answer; a dead
   * process or closed socket is detected at once regardless of this value.
   */
  peerTimeoutMs?: number;
  /** A peer silent this long at least (more when its steps are long: hang.ts) is taken for hung. Default HANG.floorMs (10 000; Timings.hangFloorMs). */
  hangFloorMs?: number;
  /**
   * Ring neighbours on the same machine (same COHORT_HOST and boot id) exchange data over a Unix
   * socket ('unix', default: half the CPU per byte of loopback TCP) or over loopback TCP ('tcp').
   */
  sameHostTransport?: 'unix' | 'tcp';
  /** Backends to try, in order. Default ['loopback', 'tcp-ring']. */
  backends?: BackendName[];
}
