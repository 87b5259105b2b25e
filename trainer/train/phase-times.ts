// Where a rank's step time goes: per throughput window (each rank's sums, gathered by rank 0 into
// the `step` event's rankPhases) and once at the end of a run (a `log` line per rank, the `done`
// event's phases): the numbers that say whether data, compute, the exchange or the update is the
// bottleneck, and on which rank.
import type { RankMemory, RankPhases } from '../protocol';
import { median } from '../util/stats';

export class PhaseTimes {
  private readonly compute: number[] = [];
  private readonly allreduce: number[] = [];
  private readonly update: number[] = [];

  get count(): number {
    return this.compute.length;
  }

  /** One measured step: forward + backward + gradient readback, allreduce, optimizer + weight upload (ms). */
  add(computeMs: number, allreduceMs: number, updateMs: number): void {
    this.compute.push(computeMs);
    this.allreduce.push(allreduceMs);
    this.update.push(updateMs);
  }

  /** Medians for the `done` event. */
  medians(rank: number, host: string): RankPhases {
    return { rank, host, computeMs: median(this.compute), allreduceMs: median(this.allreduce), updateMs: median(this.update) };
  }

  /** One log line for `medians(...)`. */
  describe(m: RankPhases): string {
    const f = (ms: number): string => ms.toFixed(0);
    return `median ms per step over ${this.count} steps: compute ${f(m.computeMs)}, allreduce (incl. waiting for peers) ${f(m.allreduceMs)}, optimizer + weight upload ${f(m.updateMs)}`;
  }
}

/** What each rank sends rank 0 when a window closes. */
export interface WindowReport {
  samples: number;
  ms: number;
  lossSum: number;
  lossCount: number;
  /** Forward + backward ms summed over the window's steps (where a straggler shows). */
  computeMs: number;
  /** Batch building, exchange (with waiting for peers) and optimizer ms summed over the window's steps. */
  dataMs: number;
  exchangeMs: number;
  optimizerMs: number;
  memory: RankMemory;
}

/** One throughput window: what this rank did since it opened (start 0: opens at its first step). */
export class ThroughputWindow {
  steps = 0;
  samples = 0;
  lossSum = 0;
  lossCount = 0;
  computeMs = 0;
  dataMs = 0;
  exchangeMs = 0;
  optimizerMs = 0;
  constructor(
    public start: number,
    readonly bytes0: number,
  ) {}
}
