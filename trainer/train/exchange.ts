// The data-parallel step's gradient exchange and optimizer update, and the optimizer state for a
// checkpoint, over the rank's Collective: the one place that knows the optimizer is sharded across
// ranks (each rank updates, and keeps current state for, only the segment it owns).
import type { Collective } from '../collectives';
import type { Optimizer } from '../optim/optimizer';
import { broadcastJson } from './rank-sync';

/**
 * The gradient exchange and the optimizer step; returns the ms spent in the optimizer itself.
 * f32: Collective.shardedUpdate, each rank updating only the parameters it owns (the update costs
 * 1/worldSize of a full one, and runs on each piece as soon as it is reduced, while it is still in
 * cache). --fp16: an allreduce of f16 gradients, then the full update on every rank, because the
 * all-gather of a sharded update carries parameters, which must stay f32.
 */
export async function exchangeAndUpdate(c: Collective, optimizer: Optimizer, lr: number, fp16: boolean): Promise<number> {
  const { params, grads } = optimizer;
  if (fp16) {
    await c.allreduce(grads, { average: true, fp16: true });
    const u0 = performance.now();
    optimizer.step(params, grads, lr);
    return performance.now() - u0;
  }
  const update = optimizer.beginStep(lr);
  let ms = 0;
  await c.shardedUpdate(grads, params, {
    average: true,
    update(start, end) {
      const u0 = performance.now();
      update(start, end);
      ms += performance.now() - u0;
    },
  });
  return ms;
}

/**
 * The optimizer state for a checkpoint. After shardedUpdate a rank's state is current only on the
 * range it owns, so each buffer is summed across ranks with every rank contributing its own range
 * and zeros elsewhere (x + 0 is exact). Every rank must call this; rank 0 saves the result.
 * (Each rank broadcasting its own range instead moves half the bytes; tried in issue 25 and taken
 * back: under heavy load the ranks then left the checkpoint at different moments and rank 0's
 * synchronous write read as a hang to rank 1, twice in two runs. Unfinished: measured quietly.)
 */
export async function gatherOptimizerState(optimizer: Optimizer, c: Collective): Promise<ReturnType<Optimizer['state']>> {
  const st = optimizer.state();
  if (c.worldSize === 1) return st;
  const [start, end] = c.ownedRange(optimizer.params.length);
  const buffers: Record<string, Float32Array> = {};
  for (const [name, b] of Object.entries(st.buffers)) {
    const full = new Float32Array(b.length);
    full.set(b.subarray(start, end), start);
    await c.allreduce(full);
    buffers[name] = full;
  }
  return { t: st.t, buffers };
}

const rangesOf = new WeakMap<Collective, Map<number, [number, number][]>>();

/** Every rank's owned range of a `len`-element buffer (index = rank), asked once per collective and length (each rank asks the same). */
async function ownedRanges(c: Collective, len: number): Promise<[number, number][]> {
  const known = rangesOf.get(c) ?? new Map<number, [number, number][]>();
  rangesOf.set(c, known);
  let ranges = known.get(len);
  if (!ranges) {
    ranges = await broadcastJson(c, (await c.gather(c.ownedRange(len), 0)) ?? [], 0);
    known.set(len, ranges);
  }
  return ranges;
}

/**
 * A resumed checkpoint's optimizer state from rank 0 (where `buffers` hold it) to the ranks that
 * need it. With the sharded update a rank reads and writes only the segment it owns (its update and
 * gatherOptimizerState touch nothing else), so each other rank's segment goes out in a broadcast of
 * its own and rank 0's stays home: (n−1)/n of each buffer leaves rank 0 instead of all of it (on a
 * chain the later ranks' segments pass through the earlier ones, so the time is what counts, not the
 * bytes). A rank's buffers outside its own segment are left as they are (never read). --fp16 updates
 * every parameter on every rank (exchangeAndUpdate): whole buffers.
 */
export async function sendOptimizerState(buffers: Float32Array[], c: Collective, fp16: boolean): Promise<void> {
  if (fp16 || c.worldSize === 1) {
    for (const b of buffers) await c.broadcast(b, 0);
    return;
  }
  const len = buffers[0]?.length ?? 0;
  const owned = await ownedRanges(c, len);
  for (const b of buffers) {
    if (b.length !== len) throw new Error(`internal: optimizer state buffers of ${b.length} and ${len} elements`);
    for (const [r, [start, end]] of owned.entries()) if (r !== 0 && end > start) await c.broadcast(b.subarray(start, end), 0);
  }
}
