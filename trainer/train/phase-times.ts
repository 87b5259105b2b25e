// Where a rank's step time goes, reported once at the end of a run (a `log` line per rank): the
// numbers that say whether compute, the gradient exchange or the update is the bottleneck.
import type { RankPhases } from '../protocol';
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
