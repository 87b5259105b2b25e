// The straggler (issue 14 item 15, issue 21 item 2): a rank that stays well slower than its peers
// in one phase of the step (data, compute or optimizer: `step.rankPhases`; older trainers only
// send `step.rankComputeMs`, read as compute) is named once, with its host, the phase and how much
// slower. Step time alone cannot show it (every rank waits for the slowest in the exchange); the
// phases can. Plain TypeScript: the leader's host agent runs it over rank 0's step events and writes
// the warning into the run's record as a `log` event (level warn, code 'slow-rank', `phase`), so
// every client (CLI, dashboard, a later attach) sees the same single warning; the clients also use
// `slowestRank` for the window on screen.
import type { LogEvent, RankStepPhases, StepEvent, StepPhase } from './events';

/** The rule; `windows` is read from the host env where the agent starts (Timings.slowRankWindows, COHORT_SLOW_RANK_WINDOWS). */
export const SLOW_RANK = {
  /** Slow: a phase's time above this multiple of the median of the other ranks' same phase. */
  factor: 1.5,
  /** ... and at least this many ms above it (tiny steps are noise). */
  minExcessMs: 5,
  /** Persistently: in this many consecutive step windows. */
  windows: 3,
} as const;

/** The phases a rank can be slow in by itself: waiting and the exchange are shared by every rank of the ring. */
const OWN_PHASES = ['data', 'compute', 'optimizer'] as const satisfies readonly StepPhase[];

export interface SlowRankReport {
  rank: number;
  host: string;
  phase: StepPhase;
  /** The rank's time in `phase`, ms per step (median over the slow windows). */
  ms: number;
  peersMedianMs: number;
  windows: number;
}

/** One window's slowest rank: the phase where it is furthest above its peers' median. */
export interface WindowStraggler {
  rank: number;
  phase: StepPhase;
  ms: number;
  peersMedianMs: number;
  /** ms / peersMedianMs. */
  ratio: number;
  /** Above the SLOW_RANK rule in this window. */
  slow: boolean;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Per-rank phases of a step window: `rankPhases`, else compute only from `rankComputeMs` (older trainers). */
export function windowPhases(e: StepEvent): RankStepPhases[] | undefined {
  if (e.rankPhases && e.rankPhases.length >= 2) return e.rankPhases;
  if (e.rankComputeMs && e.rankComputeMs.length >= 2) return e.rankComputeMs.map((computeMs, rank) => ({ rank, dataMs: 0, computeMs, waitMs: 0, exchangeMs: 0, optimizerMs: 0 }));
  return undefined;
}

/** Per rank: the phase in which it is furthest above its peers (by ms), and whether that is slow by `rule`. */
export function rankExcess(rows: RankStepPhases[], rule: { factor: number; minExcessMs: number } = SLOW_RANK): WindowStraggler[] {
  return rows.map((mine, i) => {
    const peers = rows.filter((_, j) => j !== i);
    let best: WindowStraggler | undefined;
    for (const phase of OWN_PHASES) {
      const ms = mine[`${phase}Ms`];
      const peersMedianMs = median(peers.map((r) => r[`${phase}Ms`]));
      const cand: WindowStraggler = { rank: mine.rank, phase, ms, peersMedianMs, ratio: ms / Math.max(peersMedianMs, 1e-9), slow: ms > peersMedianMs * rule.factor && ms - peersMedianMs >= rule.minExcessMs };
      if (!best || ms - peersMedianMs > best.ms - best.peersMedianMs) best = cand;
    }
    return best!;
  });
}

/** The slowest rank of one window (largest excess over its peers), slow or not; undefined below 2 ranks. */
export function slowestRank(e: StepEvent): WindowStraggler | undefined {
  const rows = windowPhases(e);
  if (!rows) return undefined;
  return rankExcess(rows).reduce((a, b) => (b.ms - b.peersMedianMs > a.ms - a.peersMedianMs ? b : a));
}

/** Feeds on step events; reports each rank at most once, after `windows` slow windows in a row. */
export class SlowRankWatch {
  private readonly streak = new Map<number, { n: number; ms: number[]; peers: number[]; phase: StepPhase }>();
  private readonly warned = new Set<number>();

  constructor(private readonly rule: { factor: number; minExcessMs: number; windows: number } = SLOW_RANK) {}

  observe(e: StepEvent): SlowRankReport[] {
    const rows = windowPhases(e);
    if (!rows) return [];
    const out: SlowRankReport[] = [];
    for (const x of rankExcess(rows, this.rule)) {
      const st = this.streak.get(x.rank);
      if (!x.slow) {
        this.streak.delete(x.rank);
        continue;
      }
      // a streak is one phase's: a rank slow in compute, then in data, starts again
      const cur = st && st.phase === x.phase ? st : { n: 0, ms: [], peers: [], phase: x.phase };
      cur.n++;
      cur.ms.push(x.ms);
      cur.peers.push(x.peersMedianMs);
      this.streak.set(x.rank, cur);
      if (cur.n >= this.rule.windows && !this.warned.has(x.rank)) {
        this.warned.add(x.rank);
        const host = e.memory.find((m) => m.rank === x.rank)?.host ?? 'unknown host';
        out.push({ rank: x.rank, host, phase: x.phase, ms: median(cur.ms), peersMedianMs: median(cur.peers), windows: cur.n });
      }
    }
    return out;
  }
}

/** "rank 3 on h2: compute 1.8× its peers' median" */
export function stragglerText(r: { rank: number; host: string; phase: StepPhase; ms: number; peersMedianMs: number }): string {
  return `rank ${r.rank} on ${r.host}: ${r.phase} ${(r.ms / Math.max(r.peersMedianMs, 1e-9)).toFixed(1)}× its peers' median`;
}

/** The warning as the run records it. */
export function slowRankEvent(r: SlowRankReport): Omit<LogEvent, 'v' | 'time'> {
  return {
    type: 'log',
    level: 'warn',
    code: 'slow-rank',
    rank: r.rank,
    host: r.host,
    phase: r.phase,
    message: `slow host: ${stragglerText(r)} (${r.ms.toFixed(0)} vs ${r.peersMedianMs.toFixed(0)} ms/step, ${r.windows} step windows in a row); every rank waits for it in the gradient exchange — check that host's load, clocks and thermals`,
  };
}

/** Per rank: exchange time including waiting → wait (beyond the fastest rank's) and exchange (the fastest rank's). */
export function splitWait(rows: { rank: number; dataMs: number; computeMs: number; exchangeMs: number; optimizerMs: number }[]): RankStepPhases[] {
  const fastest = Math.min(...rows.map((r) => r.exchangeMs));
  return rows.map((r) => ({ rank: r.rank, dataMs: r.dataMs, computeMs: r.computeMs, waitMs: Math.max(0, r.exchangeMs - fastest), exchangeMs: Math.min(r.exchangeMs, fastest), optimizerMs: r.optimizerMs }));
}

/** A rank's whole step as its phases tell it (ms). */
export function phasesTotalMs(p: RankStepPhases): number {
  return p.dataMs + p.computeMs + p.waitMs + p.exchangeMs + p.optimizerMs;
}
