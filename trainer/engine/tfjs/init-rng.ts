// Deterministic parameter initialisation: the same seed gives bit-identical parameters in every
// process and run (the trainer draws them on rank 0 only and broadcasts them). One independent
// stream per parameter name, so adding a layer never shifts another layer's values. Only integer ops and V8's fdlibm-based
// Math.log/cos/sqrt are used, which are the same on every host.

import { mulberry32 } from '../../data/rng';

/** FNV-1a 32-bit hash of a string. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Uniform floats in [0, 1) from the stream named `stream` of `seed` (mulberry32, as the data uses). */
export function rng(seed: number, stream: string): () => number {
  return mulberry32((hash(stream) ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0);
}

export function fillNormal(out: Float32Array, std: number, seed: number, stream: string): void {
  const u = rng(seed, stream);
  for (let i = 0; i < out.length; i += 2) {
    // Box–Muller; 1 − u keeps log away from 0.
    const r = Math.sqrt(-2 * Math.log(1 - u())) * std;
    const th = 2 * Math.PI * u();
    out[i] = r * Math.cos(th);
    if (i + 1 < out.length) out[i + 1] = r * Math.sin(th);
  }
}

export function fillUniform(out: Float32Array, bound: number, seed: number, stream: string): void {
  const u = rng(seed, stream);
  for (let i = 0; i < out.length; i++) out[i] = (2 * u() - 1) * bound;
}
