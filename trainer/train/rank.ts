// One data-parallel rank of the tfjs engine. Reads like nanoGPT's train.py: config, setup, loop
// (set LR, micro-step, allreduce, step, log, checkpoint), done. Only rank 0 emits events and
// writes checkpoints; every rank computes identical updates from the averaged gradients.
//
//   RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
//   COHORT_TRAIN_CONFIG='{"steps":10,"imageSize":32}' node resources/trainer/cohort-trainer.mjs rank
import { availableParallelism, hostname } from 'node:os';
import { PeerLostError, connectCollective, rendezvousEnvFromProcess, type Collective, type RendezvousEnv } from '../collectives';
import { TensorBytesPeak, applyCompilePlan, compileTrainStep, createResNet50, initBackend, initThreads, initialParamsParallel, resnet50Spec, tfjsCapabilities, type BackendInfo, type CompileReport, type TfjsResNet } from '../engine/tfjs';
import { CACHE_DIR_ENV, CONFIG_ENV, HOST_ENV, RUN_DIR_ENV, CohortError, decodeTrainConfig, readTimings, splitWait, toErrorInfo, type RankPhases, type TrainConfig } from '../protocol';
import { createOptimizer, type Optimizer } from '../optim/optimizer';
import { exchangeAndUpdate, gatherOptimizerState } from './exchange';
import { PhaseTimes, ThroughputWindow, type WindowReport } from './phase-times';
import { learningRate } from '../optim/schedule';
import { allocBatch, fillBatch, type Batch } from '../data/dataset';
import { DistributedSampler } from '../data/sampler';
import { saveCheckpoint } from './checkpoint';
import { pauseBetweenSteps } from './step-pause';
import { openData, validate, type RankData } from './rank-data';
import { resume } from './resume';
import { planCacheFile, readCachedPlan, writeCachedPlan } from './compile-cache';
import { LogTail, reserveStdoutForEvents, stdoutEmitter, type Emit } from './emit';
import { MemorySampler, nvidiaSmiReader } from './memory';
import { broadcastJson, paramChecksum } from './rank-sync';
import { median } from '../util/stats';
import { join } from 'node:path';


/** This rank's identity and voice: only rank 0 emits events; every rank logs and reports its own failure. */
interface RankContext {
  rdv: RendezvousEnv;
  host: string;
  isMaster: boolean;
  log: (msg: string) => void;
  /** Rank 0's event stream (a no-op on the other ranks). */
  emit: Emit;
  fail: (err: unknown) => number;
}

/** What setup builds and the loop runs on. */
interface Setup {
  config: TrainConfig;
  backend: BackendInfo;
  model: TfjsResNet;
  collective: Collective;
  optimizer: Optimizer;
  sampler: MemorySampler;
  data: RankData;
  stepsPerEpoch: number;
  totalSteps: number;
  startStep: number;
  ckptDir: string;
  batchAt: (step: number) => Batch;
  /** A peer's failure, seen by the collective between steps. */
  peerFailure: () => Error | undefined;
  /** COHORT_STEP_PAUSE_MS: ms slept between two steps, left out of the step time (step-pause.ts; 0 in production). */
  stepPauseMs: number;
}

export async function runRank(env: NodeJS.ProcessEnv): Promise<number> {
  reserveStdoutForEvents();
  const ctx = rankContext(env);
  const owned: { dispose(): void }[] = []; // disposed in reverse, whatever happens
  try {
    const t0 = Date.now();
    const config = decodeTrainConfig(JSON.parse(env[CONFIG_ENV] ?? '{}'));
    const setup = await setUp(ctx, config, env, owned);
    if (config.compile) await compileKernels(ctx, setup, env);
    const result = await trainLoop(ctx, setup);
    await finish(ctx, setup, result, t0);
    return 0;
  } catch (err) {
    return ctx.fail(err);
  } finally {
    for (const o of owned.reverse()) o.dispose();
  }
}

function rankContext(env: NodeJS.ProcessEnv): RankContext {
  const tail = new LogTail();
  const log = (msg: string) => {
    tail.add(msg);
    process.stderr.write(msg + '\n');
  };
  const rdv = rendezvousEnvFromProcess(env);
  const host = env[HOST_ENV] || hostname();
  const isMaster = rdv.rank === 0;
  const stdoutEmit = stdoutEmitter();
  const fail = (err: unknown): number => {
    // Every failure leaves with a code (the error's own, else 'rank-failed') and its hint, if any.
    const { message, code, hint } = toErrorInfo(err, 'rank-failed');
    log(`rank ${rdv.rank} on ${host} failed: ${message}`);
    // Every rank reports its own failure; core shows the first one (the root cause) prominently.
    // A hung peer is the story, not this rank: the error is that rank's, this one only reported it.
    const hung = err instanceof PeerLostError && err.hang ? err : undefined;
    const who = hung ? { rank: hung.peerRank, host: hung.peerHost, reportedBy: [hung.observedBy ?? rdv.rank], ...hung.hang } : { rank: rdv.rank, host };
    stdoutEmit({ type: 'error', ...who, message, logTail: tail.get(), code, ...(hint ? { hint } : {}) });
    return 1;
  };
  return { rdv, host, isMaster, log, emit: isMaster ? stdoutEmit : () => {}, fail };
}

/** Backend, data, model, collective, rank 0's weights everywhere, `hello` and `plan`. */
async function setUp(ctx: RankContext, config: TrainConfig, env: NodeJS.ProcessEnv, owned: { dispose(): void }[]): Promise<Setup> {
  const { rdv, host, isMaster, log, emit } = ctx;
  // Rank 0 draws the initial weights on worker threads (~1 s of one core for ResNet-50) while this
  // thread sets up, or in this thread for a small model (initThreads: workers cost more to start than
  // it takes to draw); the other ranks skip it: they get rank 0's weights by the broadcast below.
  const spec = isMaster ? resnet50Spec(config.stem, config.imageSize, config.classes, config.width, config.depth) : undefined;
  const initialWeights = spec
    ? initialParamsParallel(spec, config.seed, initThreads(spec.paramCount, availableParallelism()), (err) =>
        log(`weight init: worker threads failed (${err instanceof Error ? err.message : String(err)}); drawing the weights on the main thread`),
      )
    : undefined;

  const backend = await initBackend(config.backend, { wasmDir: env.COHORT_WASM_DIR, log, requireGpu: config.requireGpu, env });
  // Every rank says it loudly (agents relay every rank's warn logs); rank 0's hello carries it too.
  if (backend.gpuWarning) stdoutEmitter()({ type: 'log', level: 'warn', rank: rdv.rank, host, message: `rank ${rdv.rank} on ${host}: ${backend.gpuWarning}` });
  const data = openData(config);
  const trainSampler = new DistributedSampler(data.train.size, rdv.rank, rdv.worldSize, { seed: config.seed, shuffle: true });
  const stepsPerEpoch = trainSampler.stepsPerEpoch(config.batchSize);
  if (stepsPerEpoch < 1) {
    throw new CohortError('bad-config', `--batch-size ${config.batchSize} × ${rdv.worldSize} ranks is larger than the dataset (${data.train.size} samples)`, { hint: 'use a smaller --batch-size or fewer ranks' });
  }
  const totalSteps = config.steps > 0 ? config.steps : config.epochs * stepsPerEpoch;
  const model = createResNet50({ classes: config.classes, stem: config.stem, imageSize: config.imageSize, width: config.width, depth: config.depth, seed: config.seed, freezeBn: config.freezeBn, init: 'zeros' });
  owned.push(model);
  const peak = new TensorBytesPeak(); // every allocation counted, not the largest sample
  owned.push(peak);
  if (!peak.exact) log('tfjs tensor bytes cannot be watched on this tfjs: peakTensorBytes is the largest sampled value');
  const sampler = new MemorySampler(rdv.rank, host, () => model.tensorBytes(), backend.gpu ? nvidiaSmiReader(env, 0) : undefined, peak); // TensorFlow's GPU:0 is the first visible device
  owned.push(sampler);

  const { timings } = readTimings(env);
  const collective = await connectCollective(rdv, { timeoutMs: timings.rendezvousTimeoutMs, hangFloorMs: timings.hangFloorMs });
  owned.push(collective);
  let peerFailure: Error | undefined;
  collective.onFailure((err) => {
    peerFailure = err;
  });

  emit({
    type: 'hello',
    engine: 'tfjs',
    backend: backend.name,
    device: backend.device,
    worldSize: rdv.worldSize,
    params: model.paramCount,
    host,
    capabilities: tfjsCapabilities(backend),
    versions: { ...backend.versions, node: process.versions.node },
    reason: env.COHORT_ENGINE_REASON ? `${env.COHORT_ENGINE_REASON}; ${backend.reason}` : backend.reason,
    ...(backend.gpuWarning ? { deviceWarning: backend.gpuWarning } : {}),
  });

  // Rank 0's initial weights (or its checkpoint's) everywhere: the other ranks' params are zeros until the broadcast.
  // The optimizer owns the flat parameter and gradient buffers: its SIMD update runs on them in place.
  const optimizer = createOptimizer(config.optimizer, model.paramCount, { momentum: config.momentum, weightDecay: config.weightDecay });
  collective.registerMemory(optimizer.home); // the allreduce adds into `grads` in place
  if (initialWeights) optimizer.params.set(await initialWeights);
  let startStep = 0;
  const ckptDir = config.checkpointDir || (env[RUN_DIR_ENV] ? join(env[RUN_DIR_ENV], 'checkpoints') : '');
  if (config.resume) startStep = await resume(config, ckptDir, model, optimizer.params, optimizer, collective, isMaster, emit, log);
  await collective.broadcast(optimizer.params, 0);
  model.setParams(optimizer.params);

  // What each rank really runs on (the binding's answer, resolved to nvidia-smi's GPU), not what it was given.
  const ranks = await collective.gather({ rank: rdv.rank, host, localRank: rdv.localRank, gpu: backend.gpuDevice ? String(backend.gpuDevice.index) : undefined, device: backend.device, gpuUuid: backend.gpuDevice?.uuid, onCpu: !!backend.gpuWarning }, 0);
  emit({
    type: 'plan',
    worldSize: rdv.worldSize,
    ranks: (ranks ?? []).map((r) => ({
      rank: r.rank,
      host: r.host,
      localRank: r.localRank,
      device: r.device,
      ...(r.gpu && /^\d+$/.test(r.gpu) ? { gpu: Number(r.gpu) } : {}),
      ...(r.gpuUuid ? { gpuUuid: r.gpuUuid } : {}),
      ...(r.onCpu ? { gpuFellBack: true } : {}),
    })),
    globalBatch: config.batchSize * rdv.worldSize,
    steps: totalSteps,
    epochs: config.epochs,
    stepsPerEpoch,
    data: config.data,
  });

  const batch = allocBatch(config.batchSize, config.imageSize);
  const batchAt = (step: number) => {
    const epoch = Math.floor(step / stepsPerEpoch);
    const within = step % stepsPerEpoch;
    const idx = trainSampler.indices(epoch).subarray(within * config.batchSize, (within + 1) * config.batchSize);
    return fillBatch(data.train, idx, batch, { augment: data.augment, epoch });
  };
  return { config, backend, model, collective, optimizer, sampler, data, stepsPerEpoch, totalSteps, startStep, ckptDir, batchAt, peerFailure: () => peerFailure, stepPauseMs: timings.stepPauseMs };
}

/**
 * `--compile`: rank 0 tunes the kernels (or reuses this host's cached plan) and every rank applies
 * its plan: identical numerics on every rank, and one compile's worth of time instead of N ranks
 * timing kernels against each other.
 */
async function compileKernels(ctx: RankContext, s: Setup, env: NodeJS.ProcessEnv): Promise<void> {
  const { config, model: m, collective } = s;
  const bn = m.getBnState(); // the timing steps must not change training state
  let report: CompileReport | undefined;
  if (ctx.isMaster) {
    const t0 = Date.now();
    const cacheFile = env[CACHE_DIR_ENV] ? planCacheFile(env[CACHE_DIR_ENV], { backend: s.backend.name, device: s.backend.gpuDevice?.name ?? s.backend.device, stem: config.stem, imageSize: config.imageSize, batchSize: config.batchSize, classes: config.classes, width: config.width, depth: config.depth }) : undefined;
    const cached = cacheFile ? readCachedPlan(cacheFile) : undefined;
    if (cached && tryApplyPlan(m, cached.report.plan)) {
      report = { ...cached.report, durationMs: Date.now() - t0, detail: `reused the plan measured on this host at ${cached.measuredAt} (${cacheFile}): ${cached.report.detail}` };
    } else {
      ctx.log('compile: timing gradient implementations on this backend...');
      report = await compileTrainStep(m, s.batchAt(s.startStep), {
        onProgress: (pr) => ctx.emit({ type: 'compile', name: 'kernel-selection', status: 'running', durationMs: Date.now() - t0, detail: `timing ${pr.stage}`, ...pr }),
      });
      m.setBnState(bn);
      if (cacheFile) writeCachedPlan(cacheFile, report);
    }
  }
  const plan = await broadcastJson(collective, report?.plan ?? {}, 0);
  if (!ctx.isMaster) applyCompilePlan(m, plan);
  if (report) {
    const { plan: _plan, ...timing } = report;
    ctx.emit({ type: 'compile', name: 'kernel-selection', status: 'ok', ...timing });
  }
}

interface LoopResult {
  /** Rank 0's global samples/s, one per window. */
  windows: number[];
  phases: PhaseTimes;
}

/**
 * Per step: LR, batch, forward/backward, exchange and update, new params in the model. Warm-up
 * steps are outside throughput; then every logSteps steps the window closes (rank 0: `step`), at
 * an epoch's end validation (rank 0: `epoch`), and on checkpoint steps the state is gathered
 * (rank 0: writes, `checkpoint`).
 */
async function trainLoop(ctx: RankContext, s: Setup): Promise<LoopResult> {
  const { config, model: m, collective, optimizer, totalSteps, startStep, stepsPerEpoch } = s;
  const windows: number[] = [];
  let window = new ThroughputWindow(0, collective.bytesSent);
  let epochLoss = { sum: 0, n: 0, start: Date.now() };
  const warmupEnd = startStep + Math.min(config.warmupSteps, Math.max(0, totalSteps - startStep - 1));
  let warmupStart = Date.now();
  const phases = new PhaseTimes();
  for (let step = startStep; step < totalSteps; step++) {
    const slept = step > startStep ? await pauseBetweenSteps(s.stepPauseMs) : 0; // not training time (step-pause.ts):
    if (window.start) window.start += slept; // the open window, warm-up and the epoch start that much later
    [warmupStart, epochLoss.start] = [warmupStart + slept, epochLoss.start + slept];
    const failure = s.peerFailure();
    if (failure) throw failure;
    const epoch = Math.floor(step / stepsPerEpoch);
    const lr = learningRate(step, { lr: config.lr, warmupSteps: config.lrWarmupSteps, totalSteps, schedule: config.schedule });
    const stepStart = Date.now();
    const pd = performance.now();
    collective.notePhase?.('data', step); // what a hang report says this rank last did (tcp-ring tells rank 0)
    const b = s.batchAt(step);
    const p0 = performance.now();
    collective.notePhase?.('compute', step);
    const loss = m.trainStep(b.images, b.labels, b.batch, optimizer.grads);
    const p1 = performance.now();
    collective.notePhase?.('exchange', step);
    const updateMs = await exchangeAndUpdate(collective, optimizer, lr, config.fp16); // sync point: gradients of every rank
    const p2 = performance.now();
    collective.notePhase?.('optimizer', step);
    m.setParams(optimizer.params);
    const p3 = performance.now();
    if (step + 1 > warmupEnd) phases.add(p1 - p0, p2 - p1 - updateMs, updateMs + p3 - p2);

    if (step + 1 === warmupEnd && warmupEnd > startStep) {
      ctx.emit({ type: 'warmup', steps: warmupEnd - startStep, durationMs: Date.now() - warmupStart, detail: 'first steps allocate buffers and initialise kernels; excluded from throughput' });
      s.sampler.resetPeak();
      window = new ThroughputWindow(Date.now(), collective.bytesSent);
      continue;
    }
    if (step + 1 <= warmupEnd) continue;
    if (window.start === 0) window.start = stepStart;
    window.steps++;
    window.computeMs += p1 - p0;
    window.dataMs += p0 - pd;
    window.exchangeMs += p2 - p1 - updateMs;
    window.optimizerMs += updateMs + p3 - p2;
    window.samples += b.batch;
    if (Number.isFinite(loss)) {
      window.lossSum += loss;
      window.lossCount++;
      epochLoss.sum += loss;
      epochLoss.n++;
    }
    const last = step + 1 === totalSteps;
    if ((step + 1) % config.logSteps === 0 || last) {
      const rate = await closeWindow(ctx, s, window, step + 1, epoch, lr);
      if (rate !== undefined) windows.push(rate);
      window = new ThroughputWindow(Date.now(), collective.bytesSent);
    }
    if ((step + 1) % stepsPerEpoch === 0 || (last && config.epochs > 0)) {
      await endEpoch(ctx, s, epoch, epochLoss);
      epochLoss = { sum: 0, n: 0, start: Date.now() };
    }
    const ckptDue = config.checkpointEvery > 0 && (step + 1) % config.checkpointEvery === 0;
    if (s.ckptDir && (ckptDue || (last && config.checkpointDir))) await checkpoint(ctx, s, step + 1);
  }
  return { windows, phases };
}

/** Every rank's window to rank 0 (a sync point), which emits `step`; returns rank 0's global samples/s. */
async function closeWindow(ctx: RankContext, s: Setup, w: ThroughputWindow, step: number, epoch: number, lr: number): Promise<number | undefined> {
  const mine: WindowReport = { samples: w.samples, ms: Date.now() - w.start, lossSum: w.lossSum, lossCount: w.lossCount, computeMs: w.computeMs, dataMs: w.dataMs, exchangeMs: w.exchangeMs, optimizerMs: w.optimizerMs, memory: s.sampler.sample() };
  const all = await s.collective.gather(mine, 0);
  if (!all) return undefined;
  const wallMs = Math.max(...all.map((r) => r.ms));
  const samples = all.reduce((n, r) => n + r.samples, 0);
  const lossN = all.reduce((n, r) => n + r.lossCount, 0);
  const globalSamplesPerSec = wallMs > 0 ? (samples * 1000) / wallMs : 0;
  const n = Math.max(1, w.steps);
  ctx.emit({
    type: 'step',
    step,
    epoch,
    loss: lossN > 0 ? all.reduce((x, r) => x + r.lossSum, 0) / lossN : null,
    globalSamplesPerSec,
    stepTimeMs: wallMs / w.steps,
    worldSize: ctx.rdv.worldSize,
    lr,
    memory: all.map((r) => r.memory),
    commBytes: s.collective.bytesSent - w.bytes0,
    rankComputeMs: all.map((r) => r.computeMs / n),
    rankPhases: splitWait(all.map((r, rank) => ({ rank, dataMs: r.dataMs / n, computeMs: r.computeMs / n, exchangeMs: r.exchangeMs / n, optimizerMs: r.optimizerMs / n }))),
  });
  return globalSamplesPerSec;
}

/** Validation on every rank's shard, then rank 0's `epoch`. */
async function endEpoch(ctx: RankContext, s: Setup, epoch: number, loss: { sum: number; n: number; start: number }): Promise<void> {
  const val = s.data.test ? await validate(s.model, s.data.test, s.config, ctx.rdv.rank, ctx.rdv.worldSize, s.collective) : undefined;
  ctx.emit({
    type: 'epoch',
    epoch,
    trainLoss: loss.n ? loss.sum / loss.n : null,
    ...(val ? { valLoss: val.loss, valAccuracy: val.accuracy } : {}),
    durationMs: Date.now() - loss.start,
  });
}

/** Every rank contributes its shard of the optimizer state; rank 0 writes the file. */
async function checkpoint(ctx: RankContext, s: Setup, step: number): Promise<void> {
  const st = await gatherOptimizerState(s.optimizer, s.collective);
  if (!ctx.isMaster) return;
  const { config, model: m } = s;
  const path = saveCheckpoint(s.ckptDir, {
    step,
    epoch: Math.floor(step / s.stepsPerEpoch),
    meta: { paramCount: m.paramCount, classes: config.classes, stem: config.stem, optimizer: config.optimizer },
    optimizerT: st.t,
    sections: { params: s.optimizer.params, bn: m.getBnState(), ...prefixed('opt.', st.buffers) },
  });
  ctx.emit({ type: 'checkpoint', step, path, action: 'saved' });
}

/** Per-phase medians to rank 0, `done` with the weights' sha256, then a barrier so no socket closes under a waiting peer. */
async function finish(ctx: RankContext, s: Setup, r: LoopResult, t0: number): Promise<void> {
  const mine = r.phases.count ? r.phases.medians(ctx.rdv.rank, ctx.host) : null;
  if (mine) {
    const line = `rank ${ctx.rdv.rank} on ${ctx.host}: ${r.phases.describe(mine)}`;
    // Rank 0 tells it as an event, on the pipe its `done` takes: a stderr line can reach the agent after
    // `done` (two pipes, read apart), and a `--json` stream must end with `done` (seen in CI under load).
    if (ctx.isMaster) ctx.emit({ type: 'log', level: 'info', message: line, rank: ctx.rdv.rank, host: ctx.host, stream: 'stderr' });
    else ctx.log(line);
  }
  const allPhases = await s.collective.gather(mine, 0);
  const measured = (allPhases ?? []).filter((x): x is RankPhases => x !== null);
  ctx.emit({
    type: 'done',
    status: 'ok',
    steps: s.totalSteps,
    medianGlobalSamplesPerSec: r.windows.length ? median(r.windows) : null,
    paramChecksum: paramChecksum(s.optimizer.params),
    durationMs: Date.now() - t0,
    ...(measured.length ? { phases: measured } : {}),
  });
  await s.collective.barrier(); // nobody closes sockets while a peer still waits on them
}

/** Applies a remembered plan; false when it does not fit this model (e.g. written by another version). */
function tryApplyPlan(m: TfjsResNet, plan: Parameters<typeof applyCompilePlan>[1]): boolean {
  try {
    applyCompilePlan(m, plan);
    return true;
  } catch {
    return false;
  }
}

function prefixed(prefix: string, o: Record<string, Float32Array>): Record<string, Float32Array> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [prefix + k, v]));
}
