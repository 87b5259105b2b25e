// Which part of the buffer each step of a ring op carries, for each rank: the schedule of the
// tcp-ring backend's allreduce / sharded update (reduce-scatter then all-gather) and of its chain
// broadcast. Pure arithmetic on (rank, world size, length); ring-engine.ts moves the bytes. Apart
// so the schedule can be read on its own, without the socket and pipelining machinery around it.

/** One step of receiving from the left neighbour. */
export interface RecvStep {
  start: number;
  end: number;
  mode: 'add' | 'copy';
  forward: boolean;
  /** Last reduce-scatter step: this rank now owns the fully reduced segment. */
  finalize: boolean;
}

/**
 * Segment k of a ring op over `len` elements: [k·len/n, (k+1)·len/n) with inner boundaries rounded
 * down to a multiple of 4, so every segment (and every piece of one) starts on a 16-byte boundary
 * and the SIMD optimizer can update an owned segment exactly (see RingEngine.shardedUpdate).
 */
export function ringSegment(i: number, len: number, n: number): [number, number] {
  const k = ((i % n) + n) % n;
  const at = (j: number): number => {
    if (j === n) return len;
    const x = Math.floor((j * len) / n);
    return x - (x % 4);
  };
  return [at(k), at(k + 1)];
}

/** A ring op's steps on rank r (n-1 reduce-scatter adds, then n-1 all-gather copies) and the
 *  segment it sends first. */
export function ringOpSchedule(r: number, n: number, len: number): { steps: RecvStep[]; sendStart: number; sendEnd: number } {
  const seg = (i: number): [number, number] => ringSegment(i, len, n);
  const steps: RecvStep[] = [];
  for (let s = 0; s < n - 1; s++) {
    const [start, end] = seg(r - s - 1);
    steps.push({ start, end, mode: 'add', forward: true, finalize: s === n - 2 });
  }
  for (let s = 0; s < n - 1; s++) {
    const [start, end] = seg(r - s);
    steps.push({ start, end, mode: 'copy', forward: s < n - 2, finalize: false });
  }
  const [sendStart, sendEnd] = seg(r);
  return { steps, sendStart, sendEnd };
}

/** A chain broadcast from `root`: every other rank receives the whole buffer once and passes it on
 *  unless its right neighbour is the root. */
export function broadcastSchedule(rank: number, n: number, root: number, len: number): RecvStep[] {
  const rightRank = (rank + 1) % n;
  return rank === root ? [] : [{ start: 0, end: len, mode: 'copy', forward: rightRank !== root, finalize: false }];
}
