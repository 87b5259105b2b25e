// Seeded, portable pseudo-random numbers: every rank and every host must draw the same values
// for the same (seed, index), so synthetic data and shuffles agree without communication.

/** mulberry32: tiny, fast, good enough for data generation and shuffles (not for crypto). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a 32-bit hash of a string. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Uniform floats in [0, 1) from the stream named `stream` of `seed`: one independent sequence per
 * name (the parameter initialisation draws one per parameter). It refers to nothing but
 * `mulberry32` and `fnv1a` of this module and Math, because worker threads rebuild the three from
 * their source text (engine/tfjs/model/init-rng.ts).
 */
export function streamRng(seed: number, stream: string): () => number {
  return mulberry32((fnv1a(stream) ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0);
}

/** Mixes several integers into one 32-bit seed (splitmix-style avalanche). */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** Fills `out` with standard normal values (Box–Muller) from `rand`. */
export function fillNormal(out: Float32Array, rand: () => number, start = 0, end = out.length): void {
  for (let i = start; i < end; i += 2) {
    const u = 1 - rand();
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < end) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
}

/** Fisher–Yates permutation of 0..n-1. */
export function permutation(n: number, rand: () => number): Uint32Array {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}
