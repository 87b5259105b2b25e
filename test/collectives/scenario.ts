// What a test asks a rank-worker process to do, and the deterministic data each rank holds.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Op =
  | { op: 'allreduce'; len: number; seed: number; average?: boolean; fp16?: boolean }
  | { op: 'broadcast'; len: number; seed: number; root: number }
  /** shardedUpdate of rankData(seed, rank) gradients onto params rankData(seed + 1000, 0) (the same on every rank), averaged, with shardedStep. */
  | { op: 'sharded'; len: number; seed: number }
  | { op: 'gather'; root: number }
  | { op: 'barrier' }
  /** Like allreduce, but rank `rank` uses `len + 1` elements (a caller bug the ring must catch). */
  | { op: 'mismatch'; len: number; rank: number };

export type Scenario =
  | { kind: 'ops'; ops: Op[]; outDir: string; timeoutMs: number; peerTimeoutMs: number }
  | { kind: 'loop'; len: number; timeoutMs: number; peerTimeoutMs: number }
  /** Rank 0 aborts its allreduce after abortMs; the others start theirs only after delayMs. */
  | { kind: 'abort'; len: number; abortMs: number; delayMs: number; timeoutMs: number; peerTimeoutMs: number };

export function decodeScenario(v: unknown): Scenario {
  // Written by the test itself in the same repo: a shape check is enough.
  if (typeof v !== 'object' || v === null || !('kind' in v)) throw new Error(`bad scenario ${JSON.stringify(v)}`);
  return v as Scenario;
}

export function newOutDir(): string {
  return mkdtempSync(join(tmpdir(), 'cohort-coll-'));
}

/** Values in roughly [-4, 4), different per (seed, rank), reproducible in the test process. */
export function rankData(seed: number, rank: number, len: number): Float32Array {
  let s = (seed * 7919 + rank * 104729 + 1) >>> 0;
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32 - 0.5) * 8;
  }
  return out;
}

/** The update the sharded test applies to [start, end): p ← p − 0.5·g (f32, as a rank computes it). */
export function shardedStep(params: Float32Array, grads: Float32Array, start: number, end: number): void {
  for (let i = start; i < end; i++) params[i] = Math.fround(params[i]! - Math.fround(0.5 * grads[i]!));
}
