// The run shown in "Live run": fed by its own onRunEvent subscription (a running job) or by a history record's events.
// Metrics go into columnar SeriesBuffers (not reactive: charts poll `version` once per frame);
// only the small summary fields are reactive state.
import { PROTOCOL_VERSION, initialRunView, isFinished, stepRunView, type CohortEvent, type ErrorEvent, type HelloEvent, type PlanEvent, type RestartEvent, type RunPhase, type RunView, type SchedulerQueue, type StepEvent } from '../../../trainer/protocol';
import { followRun, type CohortApi, type RunError, type RunMeta } from '../../../electron/common';
import { reloadHistory } from './history.svelte';
import { SeriesBuffer } from '../lib/series-buffer';
import { busyMs, recordRankWindow, resetRankWindows } from './rank-windows.svelte';
import { recordSystem, resetSystem, system } from './system-windows.svelte';

/** The run view's phase (trainer/protocol/run-view.ts), or nothing shown yet. */
export type Phase = 'idle' | RunPhase;

/** Phases in which the run is still going (Stop applies). */
export const isRunningPhase = (p: Phase): boolean => p === 'queued' || p === 'starting' || p === 'warmup' || p === 'training' || p === 'restarting';

/** One restart of the run (the `restart` event) and where it sits on the step axis. */
export interface RestartMark {
  attempt: number;
  host: string;
  rank: number;
  reason: string;
  /** Training resumed from this step (the charts' points after it were redone). */
  resumeStep: number;
  /** The last step reported before the failure. */
  failedAtStep: number;
  /** The end of the warm-up steps after the restart (absolute step), once reported. */
  warmupEnd?: number;
}

export interface LogLine {
  time: number;
  rank: number | undefined;
  host: string | undefined;
  level: string;
  text: string;
}

const MAX_LOG = 2000;
const MAX_RANKS = 64;

/** The series of metrics.steps (x = step), in column order; charts name them, never a bare index. */
export const STEP_SERIES = ['throughput', 'loss', 'stepTimeMs'] as const;
export type StepSeries = (typeof STEP_SERIES)[number];
/** The column of a step series in metrics.steps. */
export const stepColumn = (s: StepSeries): number => STEP_SERIES.indexOf(s);
/**
 * memory.buffer (x = step) holds, per rank, what the rank uses (its own GPU bytes, else the GPU's, else
 * its RSS), its framework's tensor bytes and their peak (NaN when unknown). Totals (the device, the
 * host's RAM) are not charted: they set the scale and flatten what is used (issue 22 item 5); the
 * Memory now table shows them.
 */
export const MEMORY_KINDS = ['used', 'tensor', 'peak'] as const;
export const memoryColumn = (rank: number, which: (typeof MEMORY_KINDS)[number]): number => MEMORY_KINDS.length * rank + MEMORY_KINDS.indexOf(which);
const memoryColumns = (ranks: number): number => MEMORY_KINDS.length * ranks;

/** x = step; series: STEP_SERIES. `ranks`: x = step, one series per rank: compute ms/step. */
export const metrics = { steps: new SeriesBuffer(STEP_SERIES.length), ranks: new SeriesBuffer(0) };
/** x = step (the last reported, 0 before training); series per rank: memoryColumn's. hasTensor: some rank reported tensor bytes. */
export const memory = { buffer: new SeriesBuffer(MEMORY_KINDS.length), ranks: 0, hasTensor: false, step: 0 };

/** x = step; one series per rank: its GPU's utilisation in % (NaN when that rank reported none). */
export const gpuUtil = { buffer: new SeriesBuffer(1) };

/** A phase's stretch of the time axis, in seconds since the run's first event. */
export interface PhaseSpan {
  label: 'compile' | 'warm-up';
  from: number;
  to: number;
}

/** Where the phases lie on the step axis (for the charts' bands): warm-up ends at `warmupEnd`;
 *  each restart resumes at its step and warms up again. On the time axis compile takes time but no
 *  steps, so `spans` holds each compile and warm-up as it happened (from the events' times). */
export const phases = $state({ warmupEnd: 0, compiled: false, restarts: [] as RestartMark[], spans: [] as PhaseSpan[] });

/** The span of a phase that just ended at `e.time` after `durationMs`. */
const spanOf = (label: PhaseSpan['label'], e: { time: number; durationMs: number }): PhaseSpan => ({ label, from: Math.max(0, (e.time - e.durationMs - stepTimes.start) / 1000), to: (e.time - stepTimes.start) / 1000 });

/** Seconds since the run's first event, by step (the charts' time axis). */
export const stepTimes = { bySteps: new Map<number, number>(), start: NaN };
/** Where a step sits on the time axis (NaN when its time is unknown). */
export const secondsAtStep = (step: number): number => stepTimes.bySteps.get(step) ?? (step === 0 ? 0 : NaN);

export const live = $state({
  runId: '' as string,
  source: 'none' as 'none' | 'live' | 'history',
  phase: 'idle' as Phase,
  hello: null as HelloEvent | null,
  plan: null as PlanEvent | null,
  lastStep: null as StepEvent | null,
  /** The run waits (the `queued` event): for GPU slots (which run holds them, on which host) or in Slurm's queue (`slurm`). */
  queued: null as { behind: string; host: string; slurm?: SchedulerQueue } | null,
  /** Compile / warm-up entries in order (their own phase, never counted in throughput). */
  prep: [] as { kind: 'compile' | 'warmup'; label: string; status: string; durationMs: number; detail: string; index?: number; total?: number }[],
  error: null as ErrorEvent | null,
  /** Slow-host warnings of this run (a `log` with code 'slow-rank': one per slow rank). */
  slowRanks: [] as { rank: number | undefined; host: string | undefined; text: string }[],
  logs: [] as LogLine[],
  median: null as number | null,
  /** Bumps whenever buffers changed (charts also check buffer versions). */
  tick: 0,
  memoryRanks: [] as { rank: number; host: string; used: number; total: number | null; kind: string; tensor: number | null; peak: number | null }[],
  /** Some rank reported its GPU's utilisation (else the chart says why there is none). */
  gpuUtilSeen: false,
  /** Some rank reported GPU memory (a GPU exists even when its utilisation is not reported). */
  gpuSeen: false,
  /** The switches the run asked for (its RunMeta.config), so the view tells only about those; null until known. */
  asked: null as { fp16: boolean; bf16: boolean; compile: boolean } | null,
});

const askedOf = (meta: RunMeta): { fp16: boolean; bf16: boolean; compile: boolean } => ({ fp16: !!meta.config.fp16, bf16: !!meta.config.bf16, compile: !!meta.config.compile });

export function resetLive(runId: string, source: 'live' | 'history'): void {
  pendingStep = null;
  pendingMemory = null;
  live.runId = runId;
  live.source = source;
  view = initialRunView();
  live.phase = view.phase;
  live.hello = null;
  live.plan = null;
  live.lastStep = null;
  live.prep = [];
  live.error = null;
  live.slowRanks = [];
  resetRankWindows();
  live.logs = [];
  live.median = null;
  live.memoryRanks = [];
  metrics.steps = new SeriesBuffer(STEP_SERIES.length);
  metrics.ranks = new SeriesBuffer(0);
  memory.ranks = 0;
  memory.buffer = new SeriesBuffer(MEMORY_KINDS.length);
  gpuUtil.buffer = new SeriesBuffer(1);
  live.gpuUtilSeen = false;
  live.gpuSeen = false;
  live.asked = null;
  memory.step = 0;
  memory.hasTensor = false;
  resetSystem();
  phases.warmupEnd = 0;
  phases.compiled = false;
  phases.restarts = [];
  phases.spans = [];
  live.queued = null;
  stepTimes.bySteps = new Map();
  stepTimes.start = NaN;
  live.tick++;
}

function ensureMemoryRanks(n: number): void {
  if (n <= memory.ranks) return;
  memory.ranks = Math.min(n, MAX_RANKS);
  memory.buffer = new SeriesBuffer(memoryColumns(memory.ranks)); // history before this point is dropped: rank count is fixed per run
  gpuUtil.buffer = new SeriesBuffer(memory.ranks);
}

function pushLog(line: LogLine): void {
  live.logs.push(line);
  if (live.logs.length > MAX_LOG) live.logs.splice(0, live.logs.length - MAX_LOG);
}

// High-rate fields (the latest step, memory rows) are coalesced: buffers take every event at
// once, the reactive copies change at most once per animation frame, so 1,000 events/s cost
// one DOM update per frame, not 1,000.
let pendingStep: StepEvent | null = null;
/** Where the run stands, folded from its events by the one run view. */
let view: RunView = initialRunView();
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
  if (Number.isNaN(stepTimes.start)) stepTimes.start = e.time;
  // The one run view (trainer/protocol/run-view.ts) says the phase, the banner error and the queue;
  // a restart or error told already (another host's record) is not told again.
  const told = stepRunView(view, e);
  view = told.view;
  if (!told.told) return;
  switch (e.type) {
    case 'queued':
      live.queued = view.queued;
      live.phase = view.phase;
      break;
    case 'hello':
      live.hello = e;
      live.queued = view.queued;
      live.phase = view.phase;
      break;
    case 'plan':
      live.plan = e;
      live.queued = view.queued;
      ensureMemoryRanks(e.worldSize);
      live.phase = view.phase;
      break;
    case 'restart':
      restart(e);
      break;
    case 'compile': {
      // Progress reports ('running') update one entry in place; the final report replaces it.
      const entry = { kind: 'compile' as const, label: e.name, status: e.status, durationMs: e.durationMs, detail: e.status === 'running' ? (e.stage ?? e.detail) : e.detail, ...(e.index !== undefined ? { index: e.index } : {}), ...(e.total !== undefined ? { total: e.total } : {}) };
      const at = live.prep.findIndex((p) => p.kind === 'compile' && p.label === e.name && p.status === 'running');
      if (at >= 0) live.prep[at] = entry;
      else live.prep.push(entry);
      if (e.status !== 'running') {
        phases.compiled = true;
        phases.spans.push(spanOf('compile', e));
      }
      break;
    }
    case 'warmup': {
      const r = phases.restarts.at(-1);
      live.prep.push({ kind: 'warmup', label: `${e.steps} warm-up step(s)${r ? ` after restart ${r.attempt}` : ''}`, status: 'ok', durationMs: e.durationMs, detail: e.detail });
      // After a restart the warm-up counts from the step resumed from.
      if (r) r.warmupEnd = r.resumeStep + e.steps;
      else phases.warmupEnd = e.steps;
      phases.spans.push(spanOf('warm-up', e));
      break;
    }
    case 'step': {
      live.phase = view.phase;
      stepTimes.bySteps.set(e.step, (e.time - stepTimes.start) / 1000);
      pendingStep = e;
      const row: Record<StepSeries, number> = { throughput: e.globalSamplesPerSec, loss: e.loss ?? NaN, stepTimeMs: e.stepTimeMs };
      metrics.steps.push(e.step, ...STEP_SERIES.map((s) => row[s]));
      // Per rank: its step without waiting for peers when the trainer splits it (rankPhases), else compute.
      const perRank = e.rankPhases?.map(busyMs) ?? e.rankComputeMs;
      if (perRank?.length) {
        if (metrics.ranks.seriesCount !== Math.min(perRank.length, MAX_RANKS)) metrics.ranks = new SeriesBuffer(Math.min(perRank.length, MAX_RANKS));
        metrics.ranks.push(e.step, ...perRank.slice(0, MAX_RANKS));
      }
      recordRankWindow(e);
      memory.step = e.step;
      recordMemory(e.memory);
      recordSystem(e);
      scheduleFlush();
      return;
    }
    case 'log':
      pushLog({ time: e.time, rank: e.rank, host: e.host, level: e.level, text: e.message });
      if (e.code === 'slow-rank') live.slowRanks = [...live.slowRanks, { rank: e.rank, host: e.host, text: e.message }];
      break;
    case 'error':
      live.error = view.error;
      pushLog({ time: e.time, rank: e.rank >= 0 ? e.rank : undefined, host: e.host, level: 'error', text: e.message });
      break;
    case 'done':
      live.phase = view.phase;
      live.median = e.medianGlobalSamplesPerSec;
      break;
    default:
      break;
  }
  live.tick++;
}

/** Every rank restarts from the last checkpoint: the steps after it are redone, so their points go. */
function restart(e: RestartEvent): void {
  const failedAtStep = pendingStep?.step ?? live.lastStep?.step ?? e.resumeStep;
  phases.restarts.push({ attempt: e.attempt, host: e.host, rank: e.rank, reason: e.reason, resumeStep: e.resumeStep, failedAtStep });
  live.phase = view.phase;
  // The failure was handled (it is listed with the restart); a later one shows its own banner.
  live.error = view.error;
  for (const b of [metrics.steps, metrics.ranks, memory.buffer, gpuUtil.buffer, system.buffer]) b.dropAfter(e.resumeStep);
  pushLog({ time: e.time, rank: e.rank >= 0 ? e.rank : undefined, host: e.host, level: 'warn', text: `restart ${e.attempt}: ${e.reason}; resuming from step ${e.resumeStep}${e.waitingFor?.length ? ` once ${e.waitingFor.join(', ')} is back (a client following the run relaunches its agent)` : ''}` });
}

function recordMemory(mem: StepEvent['memory']): void {
  if (!mem.length) return;
  ensureMemoryRanks(Math.max(...mem.map((m) => m.rank)) + 1);
  const ys: number[] = new Array(memoryColumns(memory.ranks)).fill(NaN);
  const util: number[] = new Array(memory.ranks).fill(NaN);
  const rows: typeof live.memoryRanks = [];
  for (const m of mem) {
    if (m.rank >= memory.ranks) continue;
    // The rank's own process on its GPU when the engine could read it; else the whole device (labelled so); else RSS of the host's RAM.
    const own = m.gpuProcessBytes !== undefined;
    const gpu = own || m.gpuUsedBytes !== undefined;
    const used = own ? m.gpuProcessBytes! : gpu ? m.gpuUsedBytes! : m.rssBytes;
    const total = (gpu ? m.gpuTotalBytes : m.hostTotalBytes) ?? null;
    ys[memoryColumn(m.rank, 'used')] = used;
    ys[memoryColumn(m.rank, 'tensor')] = m.tensorBytes ?? NaN;
    ys[memoryColumn(m.rank, 'peak')] = m.peakTensorBytes ?? NaN;
    if (m.tensorBytes !== undefined) memory.hasTensor = true;
    if (gpu || m.gpuUuid !== undefined) live.gpuSeen ||= true;
    if (m.gpuUtilPercent !== undefined) {
      util[m.rank] = m.gpuUtilPercent;
      live.gpuUtilSeen ||= true;
    }
    rows.push({ rank: m.rank, host: m.host, used, total, kind: own ? 'GPU (this rank)' : gpu ? 'GPU device' : 'RSS', tensor: m.tensorBytes ?? null, peak: m.peakTensorBytes ?? null });
  }
  memory.buffer.push(memory.step, ...ys);
  gpuUtil.buffer.push(memory.step, ...util);
  pendingMemory = rows.sort((a, b) => a.rank - b.rank);
}

/** Shows a finished run from history (same view, same buffers). */
export function loadHistory(meta: RunMeta, events: CohortEvent[]): void {
  unfollow();
  resetLive(meta.id, 'history');
  live.asked = askedOf(meta);
  for (const e of events) applyEvent(e);
  flushLive();
  if (isRunningPhase(live.phase)) {
    const s = meta.status;
    if (isFinished(s)) live.phase = s;
    else if (s === 'lost') live.phase = 'failed';
  }
  if (live.median === null) live.median = meta.medianGlobalSamplesPerSec ?? null;
  // A launch that failed before any host ran it has no events: its record's error is the banner's
  // (the failed launch's link, issue 22, lands here).
  if (!live.error && meta.status === 'failed' && meta.error) live.error = recordedError(meta, meta.error);
}

/** The error a run's record keeps (the one error shape, run-error.ts), as the banner shows an error event (rank -1: the record's message names the rank). */
function recordedError(meta: RunMeta, e: RunError): ErrorEvent {
  return { v: PROTOCOL_VERSION, type: 'error', time: Date.parse(meta.endedAt ?? meta.startedAt) || 0, rank: -1, host: e.host ?? '', message: e.message, logTail: [], ...(e.code ? { code: e.code } : {}), ...(e.hint ? { hint: e.hint } : {}) };
}

// ---- re-attach (issue 12): a reload, a run opened from History, a second client --------------
// followRun subscribes to this run's events only (the server sends no other run's), then attaches:
// the record so far fills the charts and live events continue from its nextSeq, so no step is
// shown twice and none is missing. Showing another run drops the subscription.
let following: { runId: string; dispose: () => void } | undefined;

function unfollow(): void {
  following?.dispose();
  following = undefined;
}

/** Shows a run live from wherever it is: its record, then its live events. */
export async function attachLive(api: Pick<CohortApi, 'attachRun' | 'onRunEvent'>, runId: string): Promise<RunMeta> {
  unfollow();
  resetLive(runId, 'live');
  const mine = () => live.runId === runId && live.source === 'live';
  const f = await followRun(api, runId, (e) => {
    if (!mine()) return;
    applyEvent(e);
    if (e.type === 'done') void reloadHistory();
  });
  if (!mine()) {
    f.dispose(); // another run was opened meanwhile
    return f.attachment.meta;
  }
  following = { runId, dispose: f.dispose };
  live.asked = askedOf(f.attachment.meta);
  flushLive();
  const a = f.attachment;
  if (!a.live) {
    unfollow();
    const st = a.meta.status;
    if (isFinished(st)) live.phase = st;
    else if (st === 'lost') live.phase = 'failed';
  }
  return a.meta;
}

/** Runs the history thinks are still going (the ones a fresh page re-attaches to). */
export const isOpenStatus = (s: RunMeta['status']): boolean => s === 'queued' || s === 'starting' || s === 'running' || s === 'restarting';
