// worldSize 1: nothing travels, so every op is local. Kept as a real backend so the rank loop has
// one code path for 1 and N ranks.
import { DisposableBase } from '../protocol/lifecycle';
import type { AllreduceOptions, Collective, OpOptions, ShardedUpdateOptions } from './collective';
import { abortedError, CollectiveError, type PeerLostError } from './errors';

export class LoopbackCollective extends DisposableBase implements Collective {
  readonly rank = 0;
  readonly worldSize = 1;
  readonly backend = 'loopback' as const;
  readonly bytesSent = 0;
  readonly transport = 'none';

  private check(what: string, signal: AbortSignal | undefined, root?: number): void {
    if (this.isDisposed) throw new CollectiveError('disposed', `${what} called on a disposed collective`);
    if (signal?.aborted) throw abortedError(what, signal);
    if (root !== undefined && root !== 0) throw new CollectiveError('bad-argument', `${what}: root ${root} is out of range for world size 1`);
  }

  async allreduce(_buf: Float32Array, opts: AllreduceOptions = {}): Promise<void> {
    this.check('allreduce', opts.signal);
  }

  async shardedUpdate(grads: Float32Array, params: Float32Array, opts: ShardedUpdateOptions): Promise<void> {
    this.check('sharded update', opts.signal);
    if (grads.length !== params.length) throw new CollectiveError('bad-argument', `shardedUpdate: grads and params must have one length (got ${grads.length} and ${params.length})`);
    if (grads.length > 0) opts.update(0, grads.length);
  }

  ownedRange(len: number): [number, number] {
    return [0, len];
  }

  async broadcast(_buf: Float32Array, root: number, opts: OpOptions = {}): Promise<void> {
    this.check('broadcast', opts.signal, root);
  }

  async gather<T>(value: T, root: number, opts: OpOptions = {}): Promise<T[] | undefined> {
    this.check('gather', opts.signal, root);
    return [value];
  }

  async barrier(opts: OpOptions = {}): Promise<void> {
    this.check('barrier', opts.signal);
  }

  onFailure(_listener: (err: PeerLostError) => void): () => void {
    return () => {};
  }

  registerMemory(): void {
    // Nothing travels: nothing to reduce.
  }

}
