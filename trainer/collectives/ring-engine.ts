// The data plane of the tcp-ring backend: ring allreduce (reduce-scatter then all-gather) and a
// pipelined chain broadcast over two sockets, `left` (we read) and `right` (we write).
//
// Why it is shaped like this:
// - Receiving uses net's `onread` with a buffer *generator*: Node asks for the destination right
//   before each read(2), so bytes land where they belong with no per-chunk allocation. All-gather
//   (f32) reads straight into the caller's array; reduce-scatter reads into a staging piece that
//   lives in the SIMD kernel's memory and is added from there.
// - Each segment is processed in pieces; as soon as piece k of a step is reduced it is written
//   to the right neighbour as piece k of the next step, so sending overlaps receiving and
//   reducing (the pipelining the issue asks for). f32 pieces are written straight from the
//   caller's array (zero copy); f16 pieces are encoded into pooled send slots.
// - Which segment each step carries (the ring schedule) is plain arithmetic, in ring-schedule.ts.
// - The final owner of each reduced segment applies `average` and (for fp16) rounds its own
//   copy through f16 before passing it on, so every rank ends with bit-identical values.
import type { Socket } from 'node:net';
import { CollectiveError } from './errors';
import { describeHeader, Dtype, encodeHeader, HEADER_BYTES, Kind, readHeader, type DataHeader } from './data-frames';
import { createReduceKernel, type ReduceHome, type ReduceKernel } from './reduce-kernel';
import { broadcastSchedule, ringOpSchedule, ringSegment, type RecvStep } from './ring-schedule';

/** Elements per pipeline piece: 256 KiB of f32 stays in L2 while it is added and forwarded. */
export const PIECE_ELEMS = 64 * 1024;

interface Op {
  header: DataHeader;
  /** What the reduce-scatter adds into. */
  buf: Float32Array;
  /** What the all-gather carries: `buf` for an allreduce, the updated values for a sharded update. */
  gather: Float32Array;
  gatherBytes: Uint8Array;
  /** Sharded update: called with each fully reduced piece this rank owns, before that piece of `gather` is sent. */
  onOwned: ((start: number, end: number) => void) | undefined;
  /** The reduce kernel for this buffer: one homed on its memory when registered (in-place adds). */
  kernel: ReduceKernel;
  bytes: Uint8Array;
  f16: boolean;
  average: boolean;
  steps: RecvStep[];
  step: number;
  pieceStart: number;
  pieceEnd: number;
  /** Bytes of the current piece received so far. */
  filled: number;
  recvDone: boolean;
  pendingWrites: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Slot {
  bytes: Uint8Array;
  halves: Uint16Array;
}

function newSlot(): Slot {
  const halves = new Uint16Array(PIECE_ELEMS);
  return { halves, bytes: new Uint8Array(halves.buffer) };
}

export interface RingEngineHooks {
  /** The left neighbour announced it is leaving (`lostRank` = the rank whose loss made it leave). */
  onLeftBye(lostRank: number | undefined): void;
  /** The data stream is unusable (protocol violation or a write failed). */
  onFatal(err: CollectiveError): void;
}

export class RingEngine {
  readonly kernel: ReduceKernel;
  bytesSent = 0;
  private left: Socket | undefined;
  private right: Socket | undefined;
  private op: Op | undefined;
  private seq = 0;
  private failed: Error | undefined;
  private phase: 'header' | 'held' | 'body' = 'header';
  private readonly hdr = new Uint8Array(HEADER_BYTES);
  private hdrFilled = 0;
  private heldHeader: DataHeader | undefined;
  /** Target of the read in flight, to tell in-place reads from spilled ones. */
  private lastTarget: Uint8Array | undefined;
  private readonly spill = new Uint8Array(64 * 1024);
  private spilled: Uint8Array[] = [];
  private readonly freeSlots: Slot[] = [];

  constructor(
    readonly rank: number,
    readonly worldSize: number,
    private readonly leftRank: number,
    private readonly leftHost: string,
    private readonly hooks: RingEngineHooks,
  ) {
    this.kernel = createReduceKernel(PIECE_ELEMS);
  }

  /** Kernels homed on registered memories (see Collective.registerMemory). */
  private readonly homed: ReduceKernel[] = [];

  registerMemory(home: ReduceHome): void {
    if (!this.homed.some((k) => k.home === home.memory.buffer)) this.homed.push(createReduceKernel(PIECE_ELEMS, home));
  }

  /** Pass as `onread` when connecting to the left neighbour. */
  readonly onread = {
    buffer: (): Uint8Array => (this.lastTarget = this.target()),
    callback: (nread: number, buf: Uint8Array): boolean => this.received(nread, buf),
  };

  attach(left: Socket, right: Socket): void {
    this.left = left;
    this.right = right;
  }

  /** The segment whose fully reduced values this rank produces in allreduce and shardedUpdate. */
  ownedRange(len: number): [number, number] {
    return ringSegment(this.rank + 1, len, this.worldSize);
  }

  allreduce(buf: Float32Array, average: boolean, f16: boolean): Promise<void> {
    const header = { kind: Kind.Allreduce, dtype: f16 ? Dtype.F16 : Dtype.F32, aux: 0, seq: this.seq++, count: buf.length };
    return this.ringOp(header, buf, buf, average, f16, undefined);
  }

  /**
   * Reduce-scatter `grads` (f32), then for the segment this rank owns call `update(start, end)` piece
   * by piece as each piece is fully reduced (and averaged): it must write `params[start, end)`; then
   * all-gather `params`. Afterwards every rank's `params` holds each owner's update, and `grads` is
   * fully reduced only on the owned segment. The optimizer's work is split across the ranks instead
   * of repeated on each (ZeRO stage 1's sharding, over the same bytes as an allreduce).
   */
  shardedUpdate(grads: Float32Array, params: Float32Array, average: boolean, update: (start: number, end: number) => void): Promise<void> {
    const header = { kind: Kind.ShardedUpdate, dtype: Dtype.F32, aux: 0, seq: this.seq++, count: grads.length };
    return this.ringOp(header, grads, params, average, false, update);
  }

  private ringOp(header: DataHeader, buf: Float32Array, gather: Float32Array, average: boolean, f16: boolean, onOwned: Op['onOwned']): Promise<void> {
    const { steps, sendStart: s0, sendEnd: e0 } = ringOpSchedule(this.rank, this.worldSize, buf.length);
    return this.run(header, buf, average, f16, steps, s0, e0, gather, onOwned);
  }

  broadcast(buf: Float32Array, root: number): Promise<void> {
    const steps = broadcastSchedule(this.rank, this.worldSize, root, buf.length);
    const header = { kind: Kind.Broadcast, dtype: Dtype.F32, aux: root, seq: this.seq++, count: buf.length };
    return this.run(header, buf, false, false, steps, 0, this.rank === root ? buf.length : 0);
  }

  /** True when the outgoing stream sits between ops, so a Bye frame can follow. */
  get idle(): boolean {
    return this.op === undefined && !this.brokenStream;
  }
  private brokenStream = false;

  /** An op is still waiting for bytes from the left neighbour. */
  get awaitingLeft(): boolean {
    return this.op !== undefined && !this.op.recvDone;
  }

  /** Rejects the current and every later op; sockets stay with the owner. */
  fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    const op = this.op;
    if (op) this.brokenStream = true;
    this.op = undefined;
    op?.reject(err);
  }

  private run(header: DataHeader, buf: Float32Array, average: boolean, f16: boolean, steps: RecvStep[], sendStart: number, sendEnd: number, gather = buf, onOwned?: Op['onOwned']): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.op) return Promise.reject(new Error('internal: ring op started while another is running'));
    return new Promise<void>((resolve, reject) => {
      const kernel = this.homed.find((k) => k.home === buf.buffer) ?? this.kernel;
      const op: Op = {
        header, buf, f16, average, steps, kernel, gather, onOwned,
        bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength),
        gatherBytes: new Uint8Array(gather.buffer, gather.byteOffset, gather.byteLength),
        step: -1, pieceStart: 0, pieceEnd: 0, filled: 0, recvDone: false, pendingWrites: 0,
        resolve, reject,
      };
      this.op = op;
      this.write(encodeHeader(header), false);
      if (sendEnd > sendStart) this.sendRange(op, sendStart, sendEnd);
      if (this.phase === 'held') this.begin(this.heldHeader!);
      // Bytes that arrived before this op existed, then let the socket flow again.
      const early = this.spilled;
      this.spilled = [];
      for (const chunk of early) this.consumeCopy(chunk);
      if (!this.failed && this.op === op && this.phase !== 'held') this.left!.resume();
      this.maybeFinish(op);
    });
  }

  // ---- receive side -------------------------------------------------------------------------

  private target(): Uint8Array {
    if (this.phase === 'header') return this.hdr.subarray(this.hdrFilled);
    const op = this.op;
    if (this.phase === 'held' || !op) return this.spill;
    const step = op.steps[op.step]!;
    if (step.mode === 'copy' && !op.f16) return op.gatherBytes.subarray(op.pieceStart * 4 + op.filled, op.pieceEnd * 4);
    return op.kernel.staging.subarray(op.filled, (op.pieceEnd - op.pieceStart) * (op.f16 ? 2 : 4));
  }

  private received(nread: number, buf: Uint8Array): boolean {
    if (this.failed) return false;
    if (buf === this.lastTarget && buf !== this.spill) this.advance(nread);
    else this.consumeCopy(buf.subarray(0, nread));
    // Pause while a complete header waits for the local op: TCP flow control holds the rest.
    return this.phase !== 'held' && !this.failed;
  }

  /** Bytes that landed somewhere other than their destination: copy them where they belong. */
  private consumeCopy(src: Uint8Array): void {
    while (src.length > 0 && !this.failed) {
      if (this.phase === 'held') {
        this.spilled.push(src.slice());
        this.left?.pause();
        return;
      }
      const t = this.target();
      const k = Math.min(t.length, src.length);
      t.set(src.subarray(0, k));
      src = src.subarray(k);
      this.advance(k);
    }
  }

  private advance(n: number): void {
    if (this.phase === 'header') {
      this.hdrFilled += n;
      if (this.hdrFilled === HEADER_BYTES) this.headerComplete();
      return;
    }
    const op = this.op!;
    op.filled += n;
    if (op.filled === (op.pieceEnd - op.pieceStart) * (op.f16 ? 2 : 4)) this.pieceComplete(op);
  }

  private headerComplete(): void {
    this.hdrFilled = 0;
    const h = readHeader(this.hdr);
    if (!h) return this.fatal(`rank ${this.leftRank} on ${this.leftHost} sent bytes that are not a Cohort data frame`);
    if (h.kind === Kind.Bye) {
      this.hooks.onLeftBye(h.aux === 0 ? undefined : h.aux - 1);
      return;
    }
    const op = this.op;
    if (op && op.step === -1) this.begin(h);
    else {
      this.phase = 'held';
      this.heldHeader = h;
    }
  }

  private begin(h: DataHeader): void {
    const op = this.op!;
    const want = op.header;
    if (h.kind !== want.kind || h.dtype !== want.dtype || h.aux !== want.aux || h.seq !== want.seq || h.count !== want.count) {
      return this.fatal(
        `ranks disagree on the collective sequence: left neighbour rank ${this.leftRank} on ${this.leftHost} started ${describeHeader(h)}, ` +
          `this rank ${this.rank} started ${describeHeader(want)}; every rank must call the same collectives in the same order with the same sizes and options`,
      );
    }
    this.phase = 'body';
    this.heldHeader = undefined;
    op.step = -1;
    this.nextStep(op);
  }

  private nextStep(op: Op): void {
    // Empty segments (length < worldSize, or length 0) carry no bytes: skip them.
    do op.step++;
    while (op.step < op.steps.length && op.steps[op.step]!.start === op.steps[op.step]!.end);
    if (op.step >= op.steps.length) {
      op.recvDone = true;
      this.phase = 'header';
      this.maybeFinish(op);
      return;
    }
    const step = op.steps[op.step]!;
    op.pieceStart = step.start;
    op.pieceEnd = Math.min(step.end, step.start + PIECE_ELEMS);
    op.filled = 0;
  }

  private pieceComplete(op: Op): void {
    const step = op.steps[op.step]!;
    const start = op.pieceStart;
    const count = op.pieceEnd - start;
    // Only the final owner divides (once per element, identically for every rank's copy).
    const divisor = step.finalize && op.average ? this.worldSize : 0;
    if (op.f16) {
      if (step.mode === 'add') {
        // One pass over the piece: accumulate, divide, encode what we forward, and (owner)
        // keep exactly what the others will decode.
        const slot = step.forward ? this.takeSlot() : undefined;
        op.kernel.addF16(op.buf, start, count, { divisor, out: slot?.halves, round: step.finalize });
        if (slot) this.write(slot.bytes.subarray(0, count * 2), true, slot);
      } else {
        op.kernel.decodeF16(op.buf, start, count);
        if (step.forward) {
          // The received halves are forwarded as they are: no re-encoding.
          const slot = this.takeSlot();
          const staged = op.kernel.staging;
          slot.halves.set(new Uint16Array(staged.buffer, staged.byteOffset, count));
          this.write(slot.bytes.subarray(0, count * 2), true, slot);
        }
      }
    } else {
      if (step.mode === 'add') op.kernel.addF32(op.buf, start, count, divisor);
      const owned = step.finalize && op.onOwned !== undefined;
      if (owned && !this.runOwned(op, start, start + count)) return;
      // The reduce-scatter forwards partial sums; from the owner on, the all-gather carries `gather`.
      const from = owned || step.mode === 'copy' ? op.gatherBytes : op.bytes;
      if (step.forward) this.write(from.subarray(start * 4, (start + count) * 4), true);
    }
    op.pieceStart = op.pieceEnd;
    op.filled = 0;
    if (op.pieceStart === step.end) this.nextStep(op);
    else op.pieceEnd = Math.min(step.end, op.pieceStart + PIECE_ELEMS);
  }

  /** The sharded update's hook on an owned piece; false (and the op failed) when it threw. */
  private runOwned(op: Op, start: number, end: number): boolean {
    try {
      op.onOwned!(start, end);
      return true;
    } catch (err) {
      this.brokenStream = true;
      this.fail(err instanceof Error ? err : new Error(String(err)));
      return false;
    }
  }

  // ---- send side ----------------------------------------------------------------------------

  /** A send buffer for one f16 piece; returned to the pool when its write completes. */
  private takeSlot(): Slot {
    return this.freeSlots.pop() ?? newSlot();
  }

  /** The op's first send (its own segment, or root's whole buffer). */
  private sendRange(op: Op, start: number, end: number): void {
    if (!op.f16) {
      this.write(op.bytes.subarray(start * 4, end * 4), true);
      return;
    }
    for (let s = start; s < end; s += PIECE_ELEMS) {
      const count = Math.min(PIECE_ELEMS, end - s);
      const slot = this.takeSlot();
      op.kernel.encodeF16(op.buf, s, count, slot.halves);
      this.write(slot.bytes.subarray(0, count * 2), true, slot);
    }
  }

  private write(data: Uint8Array, payload: boolean, slot?: Slot): void {
    const op = this.op;
    if (!op || !this.right) return;
    if (payload) this.bytesSent += data.length;
    op.pendingWrites++;
    this.right.write(data, (err) => {
      if (slot) this.freeSlots.push(slot);
      op.pendingWrites--;
      if (err) {
        this.hooks.onFatal(new CollectiveError('peer-lost', `writing to the right ring neighbour failed: ${err.message}`, { cause: err }));
        return;
      }
      this.maybeFinish(op);
    });
  }

  private maybeFinish(op: Op): void {
    if (this.op !== op || !op.recvDone || op.pendingWrites > 0) return;
    this.op = undefined;
    op.resolve();
  }

  private fatal(message: string): void {
    this.left?.pause();
    this.hooks.onFatal(new CollectiveError('protocol', message));
  }
}
