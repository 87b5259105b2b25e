// The slow-host warning (issue 14 item 15): a rank whose compute time per step (`step.rankComputeMs`)
// stays well above its peers' is named once, with its host and the numbers. Step time alone cannot
// show it (every rank waits for the slowest in the exchange); compute time can. Plain TypeScript:
// the leader's host agent runs it over rank 0's step events and writes the warning into the run's
// record as a `log` event (level warn, code 'slow-rank'), so every client (CLI, dashboard, a later
// attach) sees the same single warning.
import type { LogEvent, StepEvent } from './events';

export const SLOW_RANK = {
  /** Slow: compute time above this multiple of the median of the other ranks'. */
  factor: 1.5,
  /** ... and at least this many ms above it (tiny steps are noise). */
  minExcessMs: 5,
  /** Persistently: in this many consecutive step windows. */
  windows: 3,
} as const;

export interface SlowRankReport {
  rank: number;
  host: string;
  computeMs: number;
  peersMedianMs: number;
  windows: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Feeds on step events; reports each rank at most once, after `windows` slow windows in a row. */
export class SlowRankWatch {
  private readonly streak = new Map<number, { n: number; ms: number[]; peers: number[] }>();
  private readonly warned = new Set<number>();

  constructor(private readonly rule: { factor: number; minExcessMs: number; windows: number } = SLOW_RANK) {}

  observe(e: StepEvent): SlowRankReport[] {
    const ms = e.rankComputeMs;
    if (!ms || ms.length < 2) return [];
    const out: SlowRankReport[] = [];
    ms.forEach((mine, rank) => {
      const peers = median(ms.filter((_, r) => r !== rank));
      const slow = mine > peers * this.rule.factor && mine - peers >= this.rule.minExcessMs;
      const st = this.streak.get(rank) ?? { n: 0, ms: [], peers: [] };
      if (!slow) {
        this.streak.delete(rank);
        return;
      }
      st.n++;
      st.ms.push(mine);
      st.peers.push(peers);
      this.streak.set(rank, st);
      if (st.n >= this.rule.windows && !this.warned.has(rank)) {
        this.warned.add(rank);
        const host = e.memory.find((m) => m.rank === rank)?.host ?? 'unknown host';
        out.push({ rank, host, computeMs: median(st.ms), peersMedianMs: median(st.peers), windows: st.n });
      }
    });
    return out;
  }
}

/** The warning as the run records it. */
export function slowRankEvent(r: SlowRankReport): Omit<LogEvent, 'v' | 'time'> {
  const ratio = r.computeMs / Math.max(r.peersMedianMs, 1e-9);
  return {
    type: 'log',
    level: 'warn',
    code: 'slow-rank',
    rank: r.rank,
    host: r.host,
    message: `slow host: rank ${r.rank} on ${r.host} computes ${r.computeMs.toFixed(0)} ms/step, ${ratio.toFixed(1)}× its peers' ${r.peersMedianMs.toFixed(0)} ms (${r.windows} step windows in a row); every rank waits for it in the gradient exchange — check that host's load, clocks and thermals`,
  };
}
