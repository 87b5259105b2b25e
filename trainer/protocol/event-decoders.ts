// The event protocol's per-type field decoders (runtime validation of one parsed event's payload).
// Used by decodeEvent (event-lines.ts); the shapes they check are in event-types.ts.
import {
  DecodeError,
  arr,
  bool,
  num,
  numOrNull,
  obj,
  oneOf,
  optBool,
  optNum,
  optStr,
  str,
  strArr,
  strRecord,
  type Obj,
} from './validate';
import {
  STEP_PHASES,
  type Capability,
  type CohortEvent,
  type EventType,
  type Payload,
  type RankLastPhase,
  type RankMemory,
  type RankPhases,
  type RankStepPhases,
  type SchedulerQueue,
} from './event-types';
import { decodeHostSystem } from './system';


function capability(v: unknown, path: string): Capability {
  const o = obj(v, path);
  return { available: bool(o, 'available', path), detail: str(o, 'detail', path) };
}

function schedulerQueue(v: unknown, path: string): SchedulerQueue {
  const o = obj(v, path);
  return {
    jobId: str(o, 'jobId', path),
    reason: str(o, 'reason', path),
    ...opt('position', optNum(o, 'position', path, { int: true, min: 1 })),
    ...opt('partition', optStr(o, 'partition', path)),
  };
}

function rankMemory(v: unknown, path: string): RankMemory {
  const o = obj(v, path);
  const m: RankMemory = { rank: num(o, 'rank', path, { int: true, min: 0 }), host: str(o, 'host', path), rssBytes: num(o, 'rssBytes', path, { min: 0 }) };
  for (const k of ['tensorBytes', 'peakTensorBytes', 'reservedBytes', 'gpuUsedBytes', 'gpuTotalBytes', 'gpuProcessBytes', 'hostTotalBytes'] as const) {
    const x = optNum(o, k, path, { min: 0 });
    if (x !== undefined) m[k] = x;
  }
  const util = optNum(o, 'gpuUtilPercent', path, { min: 0, max: 100 });
  if (util !== undefined) m.gpuUtilPercent = util;
  const uuid = optStr(o, 'gpuUuid', path);
  if (uuid !== undefined) m.gpuUuid = uuid;
  return m;
}

function record<T>(o: Obj, key: string, path: string, item: (v: unknown, p: string) => T): Record<string, T> {
  const rec = obj(o[key], `${path}${key}`);
  const out: Record<string, T> = {};
  for (const [k, v] of Object.entries(rec)) out[k] = item(v, `${key}.${k}`);
  return out;
}

const p = '';
export const decoders: { [K in EventType]: (o: Obj) => Payload<Extract<CohortEvent, { type: K }>> } = {
  hello: (o) => ({
    type: 'hello',
    engine: str(o, 'engine', p),
    backend: str(o, 'backend', p),
    device: str(o, 'device', p),
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    params: num(o, 'params', p, { int: true, min: 0 }),
    host: str(o, 'host', p),
    capabilities: requireKeys(record(o, 'capabilities', p, capability), ['fp16', 'compile'], 'capabilities'),
    versions: record(o, 'versions', p, (v, path) => {
      if (typeof v !== 'string') throw new DecodeError(path, 'expected a string');
      return v;
    }),
    ...opt('reason', optStr(o, 'reason', p)),
    ...opt('deviceWarning', optStr(o, 'deviceWarning', p)),
  }),
  plan: (o) => ({
    type: 'plan',
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    ranks: arr(o, 'ranks', p, (v, path) => {
      const r = obj(v, path);
      return {
        rank: num(r, 'rank', path, { int: true, min: 0 }),
        host: str(r, 'host', path),
        localRank: num(r, 'localRank', path, { int: true, min: 0 }),
        ...opt('gpu', optNum(r, 'gpu', path, { int: true, min: 0 })),
        ...opt('device', optStr(r, 'device', path)),
        ...opt('gpuUuid', optStr(r, 'gpuUuid', path)),
        ...opt('gpuFellBack', optBool(r, 'gpuFellBack', path)),
      };
    }),
    globalBatch: num(o, 'globalBatch', p, { int: true, min: 1 }),
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    epochs: num(o, 'epochs', p, { int: true, min: 0 }),
    stepsPerEpoch: num(o, 'stepsPerEpoch', p, { int: true, min: 0 }),
    data: str(o, 'data', p),
  }),
  compile: (o) => ({
    type: 'compile',
    name: str(o, 'name', p),
    status: oneOf(o, 'status', p, ['running', 'ok', 'skipped', 'failed'] as const),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    detail: str(o, 'detail', p),
    ...opt('stage', optStr(o, 'stage', p)),
    ...opt('index', optNum(o, 'index', p, { int: true, min: 0 })),
    ...opt('total', optNum(o, 'total', p, { int: true, min: 0 })),
    ...opt('baselineStepMs', optNum(o, 'baselineStepMs', p, { min: 0 })),
    ...opt('compiledStepMs', optNum(o, 'compiledStepMs', p, { min: 0 })),
    ...opt('speedup', optNum(o, 'speedup', p, { min: 0 })),
  }),
  warmup: (o) => ({
    type: 'warmup',
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    detail: str(o, 'detail', p),
  }),
  step: (o) => ({
    type: 'step',
    step: num(o, 'step', p, { int: true, min: 0 }),
    epoch: num(o, 'epoch', p, { int: true, min: 0 }),
    loss: numOrNull(o, 'loss', p),
    globalSamplesPerSec: num(o, 'globalSamplesPerSec', p, { min: 0 }),
    stepTimeMs: num(o, 'stepTimeMs', p, { min: 0 }),
    worldSize: num(o, 'worldSize', p, { int: true, min: 1 }),
    lr: num(o, 'lr', p, { min: 0 }),
    memory: arr(o, 'memory', p, rankMemory),
    ...opt('commBytes', optNum(o, 'commBytes', p, { min: 0 })),
    ...opt('rankComputeMs', o.rankComputeMs === undefined ? undefined : arr(o, 'rankComputeMs', p, (v, at) => num({ v }, 'v', at, { min: 0 }))),
    ...opt('rankPhases', o.rankPhases === undefined ? undefined : arr(o, 'rankPhases', p, rankStepPhases)),
    ...opt('system', o.system === undefined ? undefined : arr(o, 'system', p, decodeHostSystem)),
  }),
  epoch: (o) => ({
    type: 'epoch',
    epoch: num(o, 'epoch', p, { int: true, min: 0 }),
    trainLoss: numOrNull(o, 'trainLoss', p),
    ...opt('valLoss', optNum(o, 'valLoss', p)),
    ...opt('valAccuracy', optNum(o, 'valAccuracy', p, { min: 0, max: 1 })),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
  }),
  checkpoint: (o) => ({
    type: 'checkpoint',
    step: num(o, 'step', p, { int: true, min: 0 }),
    path: str(o, 'path', p),
    action: oneOf(o, 'action', p, ['saved', 'resumed'] as const),
  }),
  log: (o) => ({
    type: 'log',
    level: oneOf(o, 'level', p, ['debug', 'info', 'warn', 'error'] as const),
    message: str(o, 'message', p),
    ...opt('rank', optNum(o, 'rank', p, { int: true, min: 0 })),
    ...opt('host', optStr(o, 'host', p)),
    ...opt('stream', o.stream === undefined ? undefined : oneOf(o, 'stream', p, ['stdout', 'stderr'] as const)),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('phase', o.phase === undefined ? undefined : oneOf(o, 'phase', p, STEP_PHASES)),
    ...opt('runId', optStr(o, 'runId', p)),
  }),
  error: (o) => ({
    type: 'error',
    rank: num(o, 'rank', p, { int: true, min: -1 }),
    host: str(o, 'host', p),
    message: str(o, 'message', p),
    logTail: strArr(o, 'logTail', p),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('hint', optStr(o, 'hint', p)),
    ...opt('reportedBy', o.reportedBy === undefined ? undefined : arr(o, 'reportedBy', p, (v, at) => num({ v }, 'v', at, { int: true, min: 0 }))),
    ...opt('collective', optStr(o, 'collective', p)),
    ...opt('seq', optNum(o, 'seq', p, { int: true, min: 0 })),
    ...opt('lastPhases', o.lastPhases === undefined ? undefined : arr(o, 'lastPhases', p, rankLastPhase)),
  }),
  restart: (o) => ({
    type: 'restart',
    attempt: num(o, 'attempt', p, { int: true, min: 1 }),
    host: str(o, 'host', p),
    rank: num(o, 'rank', p, { int: true, min: -1 }),
    reason: str(o, 'reason', p),
    resumeStep: num(o, 'resumeStep', p, { int: true, min: 0 }),
    ...opt('code', optStr(o, 'code', p)),
    ...opt('waitingFor', o.waitingFor === undefined ? undefined : strArr(o, 'waitingFor', p)),
    ...opt('waitMs', optNum(o, 'waitMs', p, { int: true, min: 0 })),
    ...opt('excluded', optStr(o, 'excluded', p)),
    ...opt('replacement', optStr(o, 'replacement', p)),
  }),
  queued: (o) => ({
    type: 'queued',
    host: str(o, 'host', p),
    behind: str(o, 'behind', p),
    ...opt('slurm', o.slurm === undefined ? undefined : schedulerQueue(o.slurm, 'slurm')),
  }),
  env: (o) => ({
    type: 'env',
    host: str(o, 'host', p),
    ranks: arr(o, 'ranks', p, (v, q) => {
      const r = obj(v, q);
      return { rank: num(r, 'rank', q, { int: true, min: 0 }), switches: strRecord(r, 'switches', q) };
    }),
  }),
  done: (o) => ({
    type: 'done',
    status: oneOf(o, 'status', p, ['ok', 'failed', 'cancelled'] as const),
    steps: num(o, 'steps', p, { int: true, min: 0 }),
    medianGlobalSamplesPerSec: o.medianGlobalSamplesPerSec === null ? null : num(o, 'medianGlobalSamplesPerSec', p, { min: 0 }),
    paramChecksum: str(o, 'paramChecksum', p),
    durationMs: num(o, 'durationMs', p, { min: 0 }),
    ...opt('phases', o.phases === undefined ? undefined : arr(o, 'phases', p, rankPhases)),
  }),
};

function rankStepPhases(v: unknown, path: string): RankStepPhases {
  const o = obj(v, path);
  const ms = (k: string): number => num(o, k, path, { min: 0 });
  return { rank: num(o, 'rank', path, { int: true, min: 0 }), dataMs: ms('dataMs'), computeMs: ms('computeMs'), waitMs: ms('waitMs'), exchangeMs: ms('exchangeMs'), optimizerMs: ms('optimizerMs') };
}

function rankLastPhase(v: unknown, path: string): RankLastPhase {
  const o = obj(v, path);
  return {
    rank: num(o, 'rank', path, { int: true, min: 0 }),
    host: str(o, 'host', path),
    phase: str(o, 'phase', path),
    ...opt('step', optNum(o, 'step', path, { int: true, min: 0 })),
    ...opt('ageMs', optNum(o, 'ageMs', path, { min: 0 })),
  };
}

function rankPhases(v: unknown, path: string): RankPhases {
  const o = obj(v, path);
  return {
    rank: num(o, 'rank', path, { int: true, min: 0 }),
    host: str(o, 'host', path),
    computeMs: num(o, 'computeMs', path, { min: 0 }),
    allreduceMs: num(o, 'allreduceMs', path, { min: 0 }),
    updateMs: num(o, 'updateMs', path, { min: 0 }),
  };
}

function opt<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function requireKeys<T>(rec: Record<string, T>, keys: string[], path: string): Record<string, T> {
  for (const k of keys) if (!(k in rec)) throw new DecodeError(`${path}.${k}`, 'is required');
  return rec;
}
