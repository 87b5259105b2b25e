// The run shown in "Live run": fed by onRunEvent (a running job) or by a history record's events.
// Metrics go into columnar SeriesBuffers (not reactive: charts poll `version` once per frame);
// only the small summary fields are reactive state.
import type { CohortEvent, ErrorEvent, HelloEvent, PlanEvent, StepEvent } from '../../../trainer/protocol';
import type { RunMeta } from '../../../electron/common';
import { SeriesBuffer } from '../lib/series-buffer';

export type Phase = 'idle' | 'starting' | 'warmup' | 'training' | 'ok' | 'failed' | 'cancelled';

export interface LogLine {
  time: number;
  rank: number | undefined;
  host: string | undefined;
  level: string;
  text: string;
}

const MAX_LOG = 2000;
const MAX_RANKS = 64;

/** x = step; series: throughput, loss, stepTimeMs. */
export const metrics = { steps: new SeriesBuffer(3) };
/** x = seconds since run start; series per rank: used bytes, total bytes (NaN when unknown). */
export const memory = { buffer: new SeriesBuffer(2), ranks: 0, t0: 0, hasTotal: false };

export const live = $state({
  runId: '' as string,
  source: 'none' as 'none' | 'live' | 'history',
  phase: 'idle' as Phase,
  hello: null as HelloEvent | null,
  plan: null as PlanEvent | null,
  lastStep: null as StepEvent | null,
  /** Compile / warm-up entries in order (their own phase, never counted in throughput). */
  prep: [] as { kind: 'compile' | 'warmup'; label: string; status: string; durationMs: number; detail: string }[],
  error: null as ErrorEvent | null,
  logs: [] as LogLine[],
  median: null as number | null,
  /** Bumps whenever buffers changed (charts also check buffer versions). */
  tick: 0,
  memoryRanks: [] as { rank: number; host: string; used: number; total: number | null; kind: string }[],
});

export function resetLive(runId: string, source: 'live' | 'history'): void {
  pendingStep = null;
  pendingMemory = null;
  live.runId = runId;
  live.source = source;
  live.phase = 'starting';
  live.hello = null;
  live.plan = null;
  live.lastStep = null;
  live.prep = [];
  live.error = null;
  live.logs = [];
  live.median = null;
  live.memoryRanks = [];
  metrics.steps = new SeriesBuffer(3);
  memory.ranks = 0;
  memory.buffer = new SeriesBuffer(2);
  memory.t0 = 0;
  memory.hasTotal = false;
  live.tick++;
}

function ensureMemoryRanks(n: number): void {
  if (n <= memory.ranks) return;
  memory.ranks = Math.min(n, MAX_RANKS);
  memory.buffer = new SeriesBuffer(memory.ranks * 2); // history before this point is dropped: rank count is fixed per run
}

function pushLog(line: LogLine): void {
  live.logs.push(line);
  if (live.logs.length > MAX_LOG) live.logs.splice(0, live.logs.length - MAX_LOG);
}

// High-rate fields (the latest step, memory rows) are coalesced: buffers take every event at
// once, the reactive copies change at most once per animation frame, so 1,000 events/s cost
// one DOM update per frame, not 1,000.
let pendingStep: StepEvent | null = null;
let pendingMemory: typeof live.memoryRanks | null = null;
let flushScheduled = false;

function scheduleFlush(): void {
  if (flushScheduled) return;
  flushScheduled = true;
  requestAnimationFrame(flushLive);
}

/** Copies coalesced values into reactive state (called per frame, and after bulk loads). */
export function flushLive(): void {
  flushScheduled = false;
  if (pendingStep) live.lastStep = pendingStep;
  if (pendingMemory) live.memoryRanks = pendingMemory;
  pendingStep = null;
  pendingMemory = null;
}

export function applyEvent(e: CohortEvent): void {
  switch (e.type) {
    case 'hello':
      live.hello = e;
      if (live.phase === 'starting') live.phase = 'warmup';
      break;
    case 'plan':
      live.plan = e;
      ensureMemoryRanks(e.worldSize);
      if (live.phase === 'starting') live.phase = 'warmup';
      break;
    case 'compile':
      live.prep.push({ kind: 'compile', label: e.name, status: e.status, durationMs: e.durationMs, detail: e.detail });
      break;
    case 'warmup':
      live.prep.push({ kind: 'warmup', label: `${e.steps} warm-up step(s)`, status: 'ok', durationMs: e.durationMs, detail: e.detail });
      break;
    case 'step': {
      if (live.phase === 'starting' || live.phase === 'warmup') live.phase = 'training';
      pendingStep = e;
      metrics.steps.push(e.step, e.globalSamplesPerSec, e.loss ?? NaN, e.stepTimeMs);
      recordMemory(e.time, e.memory);
      scheduleFlush();
      return;
    }
    case 'memory':
      recordMemory(e.time, e.memory);
      scheduleFlush();
      return;
    case 'log':
      pushLog({ time: e.time, rank: e.rank, host: e.host, level: e.level, text: e.message });
      break;
    case 'error':
      if (!live.error) live.error = e;
      pushLog({ time: e.time, rank: e.rank >= 0 ? e.rank : undefined, host: e.host, level: 'error', text: e.message });
      break;
    case 'done':
      live.phase = e.status;
      live.median = e.medianGlobalSamplesPerSec;
      break;
    default:
      break;
  }
  live.tick++;
}

function recordMemory(time: number, mem: StepEvent['memory']): void {
  if (!mem.length) return;
  ensureMemoryRanks(Math.max(...mem.map((m) => m.rank)) + 1);
  if (!memory.t0) memory.t0 = time;
  const ys: number[] = new Array(memory.ranks * 2).fill(NaN);
  const rows: typeof live.memoryRanks = [];
  for (const m of mem) {
    if (m.rank >= memory.ranks) continue;
    const gpu = m.gpuUsedBytes !== undefined;
    const used = gpu ? m.gpuUsedBytes! : m.rssBytes;
    const total = gpu ? (m.gpuTotalBytes ?? null) : null;
    ys[m.rank * 2] = used;
    ys[m.rank * 2 + 1] = total ?? NaN;
    if (total !== null) memory.hasTotal = true;
    rows.push({ rank: m.rank, host: m.host, used, total, kind: gpu ? 'GPU' : 'RSS' });
  }
  memory.buffer.push((time - memory.t0) / 1000, ...ys);
  pendingMemory = rows.sort((a, b) => a.rank - b.rank);
}

/** Shows a finished run from history (same view, same buffers). */
export function loadHistory(meta: RunMeta, events: CohortEvent[]): void {
  resetLive(meta.id, 'history');
  for (const e of events) applyEvent(e);
  flushLive();
  if (live.phase === 'starting' || live.phase === 'warmup' || live.phase === 'training') {
    live.phase = meta.status === 'running' ? live.phase : meta.status;
  }
  if (live.median === null) live.median = meta.medianGlobalSamplesPerSec ?? null;
}
