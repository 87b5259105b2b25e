// Deterministic parameter initialisation: the same seed gives bit-identical parameters in every
// process (ranks start equal without a broadcast). One independent stream per parameter name, so
// adding a layer never shifts another layer's values. Only integer ops and V8's fdlibm-based
// Math.log/cos/sqrt are used, which are the same on every host.

/** FNV-1a 32-bit hash of a string. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, fast 32-bit generator; returns uniform floats in [0, 1). */
export function rng(seed: number, stream: string): () => number {
  let a = (hash(stream) ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
