// The per-rank phases of the step windows a run reported (issue 21 item 2): the Live view's split
// table for the window you point at, and its ranks × time heat map. Kept as a plain bounded array
// (the last MAX_WINDOWS windows) with a reactive version, as the metric buffers are.
import { phasesTotalMs, slowestRank, windowPhases, type RankStepPhases, type StepEvent, type WindowStraggler } from '../../../trainer/protocol';

export interface RankWindow {
  step: number;
  phases: RankStepPhases[];
  /** This window's slowest rank (slow or not). */
  slowest: WindowStraggler | undefined;
}

const MAX_WINDOWS = 240;

export const rankWindows = $state({ list: [] as RankWindow[], version: 0 });

export function resetRankWindows(): void {
  rankWindows.list = [];
  rankWindows.version++;
}

export function recordRankWindow(e: StepEvent): void {
  const phases = windowPhases(e);
  if (!phases) return;
  const list = rankWindows.list;
  list.push({ step: e.step, phases, slowest: slowestRank(e) });
  if (list.length > MAX_WINDOWS) list.splice(0, list.length - MAX_WINDOWS);
  rankWindows.version++;
}

/** A rank's step without waiting for its peers: what differs between ranks (everyone's total is the slowest's). */
export function busyMs(p: RankStepPhases): number {
  return phasesTotalMs(p) - p.waitMs;
}
