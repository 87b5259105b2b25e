// What the ranks of a run exchange besides gradients: a small JSON value sent from one rank to all
// (rank 0's compile plan, so every rank runs the same kernels) and the checksum of the weights that
// rank 0 reports in its done event (the same weights give the same checksum, so two runs can be
// compared). Kept apart from rank.ts, which is the training loop itself.
import { createHash } from 'node:crypto';
import type { Collective } from '../collectives';

/** sha256 of the parameters' bytes, hex. */
export function paramChecksum(params: Float32Array): string {
  return createHash('sha256').update(new Uint8Array(params.buffer, params.byteOffset, params.byteLength)).digest('hex');
}

/** Sends a small JSON value from `root` to every rank (as UTF-16 code units in float32, exact below 2^24). */
export async function broadcastJson<T>(c: Collective, value: T, root: number): Promise<T> {
  const text = c.rank === root ? JSON.stringify(value) : '';
  const len = Float32Array.of(text.length);
  await c.broadcast(len, root);
  const buf = new Float32Array(len[0]!);
  if (c.rank === root) for (let i = 0; i < text.length; i++) buf[i] = text.charCodeAt(i);
  await c.broadcast(buf, root);
  return c.rank === root ? value : (JSON.parse(String.fromCharCode(...buf)) as T);
}
