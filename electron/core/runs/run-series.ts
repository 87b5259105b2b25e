// A run's curves for History and Compare: one point per measured window (a `step` event), bounded
// to RUN_SERIES_MAX_POINTS by thinning (every other point dropped, the stride doubled), with the
// throughput spread over every window. The recorder keeps one while the run goes and writes it to
// series.json; a record without that file (older Cohort, a write that failed) is rebuilt from
// events.jsonl, which keeps every event.
import type { CohortEvent, StepEvent } from '../../../trainer/protocol';
import { RUN_SERIES_MAX_POINTS, SystemAccumulator, spreadOf, type RunSeries, type ThroughputSpread } from '../../common';

export const SERIES_FILE_VERSION = 1;

export class SeriesAccumulator {
  private step: number[] = [];
  private time: number[] = [];
  private rate: number[] = [];
  private loss: (number | null)[] = [];
  private stepMs: number[] = [];
  /** Every window's rate (spread and median are over all of them, not the kept points). */
  private readonly rates: number[] = [];
  private stride = 1;
  /** Windows since the last kept point. */
  private since = 0;
  private last: StepEvent | undefined;
  private lastKept = true;
  /** The hosts' figures of every window (History and Compare's machine verdict). */
  readonly system = new SystemAccumulator();

  constructor(
    readonly runId: string,
    private readonly maxPoints = RUN_SERIES_MAX_POINTS,
  ) {}

  /** Folds in one event; true when it changed the series (a `step`). */
  add(e: CohortEvent): boolean {
    if (e.type !== 'step') return false;
    this.rates.push(e.globalSamplesPerSec);
    this.system.add(e);
    // A restart resumes from its checkpoint and reports those steps again: the curve goes on from there.
    while (this.step.length && this.step[this.step.length - 1]! >= e.step) this.pop();
    this.last = e;
    this.since++;
    if (this.step.length && this.since < this.stride) {
      this.lastKept = false;
      return true;
    }
    this.push(e);
    return true;
  }

  get windows(): number {
    return this.rates.length;
  }

  spread(): ThroughputSpread {
    return spreadOf(this.rates);
  }

  /** The curves: the kept points, plus the latest window when thinning skipped it. */
  toSeries(): RunSeries {
    const s: RunSeries = { runId: this.runId, windows: this.rates.length, stride: this.stride, step: [...this.step], time: [...this.time], samplesPerSec: [...this.rate], loss: [...this.loss], stepTimeMs: [...this.stepMs], throughput: this.spread() };
    const sys = this.system.summary();
    if (sys) s.system = sys;
    const e = this.last;
    if (e && !this.lastKept && (!s.step.length || s.step[s.step.length - 1]! < e.step)) {
      s.step.push(e.step);
      s.time.push(e.time);
      s.samplesPerSec.push(e.globalSamplesPerSec);
      s.loss.push(e.loss);
      s.stepTimeMs.push(e.stepTimeMs);
    }
    return s;
  }

  private push(e: StepEvent): void {
    this.since = 0;
    this.lastKept = true;
    this.step.push(e.step);
    this.time.push(e.time);
    this.rate.push(e.globalSamplesPerSec);
    this.loss.push(e.loss);
    this.stepMs.push(e.stepTimeMs);
    if (this.step.length <= this.maxPoints) return;
    const even = <T>(a: T[]) => a.filter((_, i) => i % 2 === 0);
    this.step = even(this.step);
    this.time = even(this.time);
    this.rate = even(this.rate);
    this.loss = even(this.loss);
    this.stepMs = even(this.stepMs);
    this.stride *= 2;
  }

  private pop(): void {
    this.step.pop();
    this.time.pop();
    this.rate.pop();
    this.loss.pop();
    this.stepMs.pop();
  }
}

/**
 * The series from events.jsonl's text, reading only `step` lines and only the fields the series
 * uses (each checked): the full event decoder validates every rank's memory of every event, 10× the
 * time on a long run's record, for nothing the curves need. A line that does not check is skipped.
 */
export function seriesFromRecordText(runId: string, text: string): SeriesAccumulator {
  const acc = new SeriesAccumulator(runId);
  for (const line of text.split('\n')) {
    if (!line.includes('"step"')) continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      continue; // a torn last line after a crash
    }
    const e = o as Partial<StepEvent> | null;
    if (!e || e.type !== 'step') continue;
    const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
    if (!num(e.step) || !num(e.time) || !num(e.globalSamplesPerSec) || !num(e.stepTimeMs) || !(e.loss === null || num(e.loss))) continue;
    acc.add(e as StepEvent);
  }
  return acc;
}

export function seriesFromEvents(runId: string, events: Iterable<CohortEvent>): SeriesAccumulator {
  const acc = new SeriesAccumulator(runId);
  for (const e of events) acc.add(e);
  return acc;
}

/** series.json's text. */
export function encodeSeries(s: RunSeries): string {
  return JSON.stringify({ v: SERIES_FILE_VERSION, ...s }) + '\n';
}

/** A series.json read back, or undefined when it is not one this version wrote whole (then it is rebuilt). */
export function decodeSeries(text: string, runId: string): RunSeries | undefined {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const r = o as Record<string, unknown>;
  if (r.v !== SERIES_FILE_VERSION || r.runId !== runId || typeof r.windows !== 'number' || typeof r.stride !== 'number') return undefined;
  const nums = (k: string, nullable = false) => Array.isArray(r[k]) && (r[k] as unknown[]).every((x) => typeof x === 'number' || (nullable && x === null));
  if (!nums('step') || !nums('time') || !nums('samplesPerSec') || !nums('loss', true) || !nums('stepTimeMs')) return undefined;
  const n = (r.step as number[]).length;
  if (['time', 'samplesPerSec', 'loss', 'stepTimeMs'].some((k) => (r[k] as unknown[]).length !== n)) return undefined;
  const t = r.throughput as Record<string, unknown> | null;
  if (typeof t !== 'object' || t === null || typeof t.windows !== 'number') return undefined;
  return {
    runId,
    windows: r.windows,
    stride: r.stride,
    step: r.step as number[],
    time: r.time as number[],
    samplesPerSec: r.samplesPerSec as number[],
    loss: r.loss as (number | null)[],
    stepTimeMs: r.stepTimeMs as number[],
    throughput: t as unknown as ThroughputSpread,
    ...(typeof r.system === 'object' && r.system !== null && Array.isArray((r.system as { hosts?: unknown }).hosts) ? { system: r.system as RunSeries['system'] } : {}),
  };
}
