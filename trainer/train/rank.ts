// One data-parallel rank of the tfjs engine. Reads like nanoGPT's train.py: config, setup, loop
// (set LR, micro-step, allreduce, step, log, checkpoint), done. Only rank 0 emits events and
// writes checkpoints; every rank computes identical updates from the averaged gradients.
//
//   RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
//   COHORT_TRAIN_CONFIG='{"steps":10,"imageSize":32}' node resources/trainer/cohort-trainer.mjs rank
import { createHash } from 'node:crypto';
import { availableParallelism, hostname } from 'node:os';
import { connectCollective, rendezvousEnvFromProcess, type Collective } from '../collectives';
import { applyCompilePlan, compileTrainStep, createResNet50, initBackend, initialParamsParallel, resnet50Spec, tfjsCapabilities, type TfjsResNet } from '../engine/tfjs';
import { CACHE_DIR_ENV, CONFIG_ENV, HOST_ENV, RUN_DIR_ENV, decodeTrainConfig, parseDataSource, type RankMemory, type RankPhases, type TrainConfig } from '../protocol';
import { createOptimizer } from '../optim/optimizer';
import { exchangeAndUpdate, gatherOptimizerState } from './exchange';
import { PhaseTimes } from './phase-times';
import { learningRate } from '../optim/schedule';
import { loadCifar100 } from '../data/cifar100';
import { allocBatch, fillBatch, type Dataset } from '../data/dataset';
import { DistributedSampler } from '../data/sampler';
import { syntheticDataset } from '../data/synthetic';
import { loadLatestCheckpoint, saveCheckpoint } from './checkpoint';
import { planCacheFile, readCachedPlan, writeCachedPlan } from './compile-cache';
import { LogTail, reserveStdoutForEvents, stdoutEmitter, type Emit } from './emit';
import { MemorySampler } from './memory';
import { median } from '../util/stats';
import { join } from 'node:path';

interface WindowReport {
  samples: number;
  ms: number;
  lossSum: number;
  lossCount: number;
  memory: RankMemory;
}

export async function runRank(env: NodeJS.ProcessEnv): Promise<number> {
  reserveStdoutForEvents();
  const tail = new LogTail();
  const log = (msg: string) => {
    tail.add(msg);
    process.stderr.write(msg + '\n');
  };
  const rdv = rendezvousEnvFromProcess(env);
  const host = env[HOST_ENV] || hostname();
  const isMaster = rdv.rank === 0;
  const stdoutEmit = stdoutEmitter();
  const emit: Emit = isMaster ? stdoutEmit : () => {};
  let collective: Collective | undefined;
  let sampler: MemorySampler | undefined;
  let model: TfjsResNet | undefined;
  const fail = (err: unknown, code?: string): number => {
    const message = err instanceof Error ? err.message : String(err);
    log(`rank ${rdv.rank} on ${host} failed: ${message}`);
    // Every rank reports its own failure; core shows the first one (the root cause) prominently.
    stdoutEmit({ type: 'error', rank: rdv.rank, host, message, logTail: tail.get(), ...(code ? { code } : {}) });
    return 1;
  };
  try {
    const config = decodeTrainConfig(JSON.parse(env[CONFIG_ENV] ?? '{}'));
    const t0 = Date.now();
    // Rank 0 draws the initial weights on worker threads (~1 s of one core for ResNet-50) while this
    // thread sets up; the other ranks skip it: they get rank 0's weights by the broadcast below.
    const initialWeights = isMaster
      ? initialParamsParallel(resnet50Spec(config.stem, config.imageSize, config.classes), config.seed, Math.min(8, availableParallelism()), (err) =>
          log(`weight init: worker threads failed (${err instanceof Error ? err.message : String(err)}); drawing the weights on the main thread`),
        )
      : undefined;

    // ---- setup ------------------------------------------------------------------------
    const backend = await initBackend(config.backend, { wasmDir: env.COHORT_WASM_DIR, log });
    const data = openData(config);
    const trainSampler = new DistributedSampler(data.train.size, rdv.rank, rdv.worldSize, { seed: config.seed, shuffle: true });
    const stepsPerEpoch = trainSampler.stepsPerEpoch(config.batchSize);
    if (stepsPerEpoch < 1) {
      throw new Error(`--batch-size ${config.batchSize} × ${rdv.worldSize} ranks is larger than the dataset (${data.train.size} samples)`);
    }
    const totalSteps = config.steps > 0 ? config.steps : config.epochs * stepsPerEpoch;
    model = createResNet50({ classes: config.classes, stem: config.stem, imageSize: config.imageSize, seed: config.seed, freezeBn: config.freezeBn, init: 'zeros' });
    const m = model;
    sampler = new MemorySampler(rdv.rank, host, () => m.tensorBytes(), backend.gpu ? env.CUDA_VISIBLE_DEVICES : undefined);

    collective = await connectCollective(rdv, { timeoutMs: Number(env.COHORT_RENDEZVOUS_TIMEOUT_MS ?? 60_000) });
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
      params: m.paramCount,
      host,
      capabilities: tfjsCapabilities(backend),
      versions: { ...backend.versions, node: process.versions.node },
      reason: env.COHORT_ENGINE_REASON ? `${env.COHORT_ENGINE_REASON}; ${backend.reason}` : backend.reason,
    });

    // Rank 0's initial weights (or its checkpoint's) everywhere: the other ranks' params are zeros until the broadcast.
    // The optimizer owns the flat parameter and gradient buffers: its SIMD update runs on them in place.
    const optimizer = createOptimizer(config.optimizer, m.paramCount, { momentum: config.momentum, weightDecay: config.weightDecay });
    const { params, grads } = optimizer;
    collective.registerMemory(optimizer.home); // the allreduce adds into `grads` in place
    if (initialWeights) params.set(await initialWeights);
    let startStep = 0;
    const ckptDir = config.checkpointDir || (env[RUN_DIR_ENV] ? join(env[RUN_DIR_ENV], 'checkpoints') : '');
    if (config.resume) startStep = await resume(config, ckptDir, m, params, optimizer, collective, isMaster, emit, log);
    await collective.broadcast(params, 0);
    m.setParams(params);

    const ranks = await collective.gather({ rank: rdv.rank, host, localRank: rdv.localRank, gpu: env.CUDA_VISIBLE_DEVICES }, 0);
    emit({
      type: 'plan',
      worldSize: rdv.worldSize,
      ranks: (ranks ?? []).map((r) => ({ rank: r.rank, host: r.host, localRank: r.localRank, ...(r.gpu && /^\d+$/.test(r.gpu) ? { gpu: Number(r.gpu) } : {}) })),
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

    if (config.compile) {
      // Rank 0 tunes the kernels and every rank applies its plan: identical numerics on every rank,
      // and one compile's worth of time instead of N ranks timing kernels against each other.
      const bn = m.getBnState(); // the timing steps must not change training state
      let report: Awaited<ReturnType<typeof compileTrainStep>> | undefined;
      if (isMaster) {
        const t0 = Date.now();
        const cacheFile = env[CACHE_DIR_ENV] ? planCacheFile(env[CACHE_DIR_ENV], { backend: backend.name, stem: config.stem, imageSize: config.imageSize, batchSize: config.batchSize, classes: config.classes }) : undefined;
        const cached = cacheFile ? readCachedPlan(cacheFile) : undefined;
        if (cached && tryApplyPlan(m, cached.report.plan)) {
          report = { ...cached.report, durationMs: Date.now() - t0, detail: `reused the plan measured on this host at ${cached.measuredAt} (${cacheFile}): ${cached.report.detail}` };
        } else {
          log('compile: timing gradient implementations on this backend...');
          report = await compileTrainStep(m, batchAt(startStep));
          m.setBnState(bn);
          if (cacheFile) writeCachedPlan(cacheFile, report);
        }
      }
      const plan = await broadcastJson(collective, report?.plan ?? {}, 0);
      if (!isMaster) applyCompilePlan(m, plan);
      if (report) {
        const { plan: _plan, ...timing } = report;
        emit({ type: 'compile', name: 'kernel-selection', status: 'ok', ...timing });
      }
    }

    // ---- training loop ------------------------------------------------------------------
    const windows: number[] = [];
    let window = { start: 0, steps: 0, samples: 0, lossSum: 0, lossCount: 0, bytes0: collective.bytesSent };
    let epochLoss = { sum: 0, n: 0, start: Date.now() };
    const warmupEnd = startStep + Math.min(config.warmupSteps, Math.max(0, totalSteps - startStep - 1));
    const warmupStart = Date.now();
    const phases = new PhaseTimes();
    for (let step = startStep; step < totalSteps; step++) {
      if (peerFailure) throw peerFailure;
      const epoch = Math.floor(step / stepsPerEpoch);
      const lr = learningRate(step, { lr: config.lr, warmupSteps: config.lrWarmupSteps, totalSteps, schedule: config.schedule });
      const stepStart = Date.now();
      const b = batchAt(step);
      const p0 = performance.now();
      const loss = m.trainStep(b.images, b.labels, b.batch, grads);
      const p1 = performance.now();
      const updateMs = await exchangeAndUpdate(collective, optimizer, lr, config.fp16); // sync point: gradients of every rank
      const p2 = performance.now();
      m.setParams(params);
      if (step + 1 > warmupEnd) phases.add(p1 - p0, p2 - p1 - updateMs, updateMs + performance.now() - p2);

      if (step + 1 === warmupEnd && warmupEnd > startStep) {
        emit({ type: 'warmup', steps: warmupEnd - startStep, durationMs: Date.now() - warmupStart, detail: 'first steps allocate buffers and initialise kernels; excluded from throughput' });
        window = { start: Date.now(), steps: 0, samples: 0, lossSum: 0, lossCount: 0, bytes0: collective.bytesSent };
        continue;
      }
      if (step + 1 <= warmupEnd) continue;
      if (window.start === 0) window.start = stepStart;
      window.steps++;
      window.samples += b.batch;
      if (Number.isFinite(loss)) {
        window.lossSum += loss;
        window.lossCount++;
        epochLoss.sum += loss;
        epochLoss.n++;
      }
      const last = step + 1 === totalSteps;
      if ((step + 1) % config.logSteps === 0 || last) {
        const ms = Date.now() - window.start;
        const mine: WindowReport = { samples: window.samples, ms, lossSum: window.lossSum, lossCount: window.lossCount, memory: sampler.sample() };
        const all = await collective.gather(mine, 0); // sync point: per-rank counts and memory to rank 0
        if (all) {
          const wallMs = Math.max(...all.map((r) => r.ms));
          const samples = all.reduce((s, r) => s + r.samples, 0);
          const lossN = all.reduce((s, r) => s + r.lossCount, 0);
          const globalSamplesPerSec = wallMs > 0 ? (samples * 1000) / wallMs : 0;
          windows.push(globalSamplesPerSec);
          emit({
            type: 'step',
            step: step + 1,
            epoch,
            loss: lossN > 0 ? all.reduce((s, r) => s + r.lossSum, 0) / lossN : null,
            globalSamplesPerSec,
            stepTimeMs: wallMs / window.steps,
            worldSize: rdv.worldSize,
            lr,
            memory: all.map((r) => r.memory),
            commBytes: collective.bytesSent - window.bytes0,
          });
        }
        window = { start: Date.now(), steps: 0, samples: 0, lossSum: 0, lossCount: 0, bytes0: collective.bytesSent };
      }
      const epochDone = (step + 1) % stepsPerEpoch === 0;
      if (epochDone || (last && config.epochs > 0)) {
        const val = data.test ? await validate(m, data.test, config, rdv.rank, rdv.worldSize, collective) : undefined;
        emit({
          type: 'epoch',
          epoch,
          trainLoss: epochLoss.n ? epochLoss.sum / epochLoss.n : null,
          ...(val ? { valLoss: val.loss, valAccuracy: val.accuracy } : {}),
          durationMs: Date.now() - epochLoss.start,
        });
        epochLoss = { sum: 0, n: 0, start: Date.now() };
      }
      const ckptDue = config.checkpointEvery > 0 && (step + 1) % config.checkpointEvery === 0;
      if (ckptDir && (ckptDue || (last && config.checkpointDir))) {
        const st = await gatherOptimizerState(optimizer, collective); // every rank: each holds its shard of the state
        if (isMaster) {
          const path = saveCheckpoint(ckptDir, {
            step: step + 1,
            epoch: Math.floor((step + 1) / stepsPerEpoch),
            meta: { paramCount: m.paramCount, classes: config.classes, stem: config.stem, optimizer: config.optimizer },
            optimizerT: st.t,
            sections: { params, bn: m.getBnState(), ...prefixed('opt.', st.buffers) },
          });
          emit({ type: 'checkpoint', step: step + 1, path, action: 'saved' });
        }
      }
    }

    const mine = phases.count ? phases.medians(rdv.rank, host) : null;
    if (mine) log(`rank ${rdv.rank} on ${host}: ${phases.describe(mine)}`);
    const allPhases = await collective.gather(mine, 0);
    const measured = (allPhases ?? []).filter((x): x is RankPhases => x !== null);
    emit({
      type: 'done',
      status: 'ok',
      steps: totalSteps,
      medianGlobalSamplesPerSec: windows.length ? median(windows) : null,
      paramChecksum: paramChecksum(params),
      durationMs: Date.now() - t0,
      ...(measured.length ? { phases: measured } : {}),
    });
    await collective.barrier(); // nobody closes sockets while a peer still waits on them
    return 0;
  } catch (err) {
    return fail(err, (err as { code?: string }).code);
  } finally {
    sampler?.dispose();
    collective?.dispose();
    model?.dispose();
  }
}

function openData(config: TrainConfig): { train: Dataset; test?: Dataset; augment: boolean } {
  const src = parseDataSource(config.data);
  if (src.kind === 'synthetic') return { train: syntheticDataset({ imageSize: config.imageSize, classes: config.classes, seed: config.seed }), augment: false };
  if (config.classes !== 100) throw new Error(`--classes ${config.classes}: CIFAR-100 has 100 classes; drop --classes or pass --classes 100`);
  return {
    train: loadCifar100(src.dir, 'train', { imageSize: config.imageSize, seed: config.seed }),
    test: loadCifar100(src.dir, 'test', { imageSize: config.imageSize, seed: config.seed }),
    augment: true,
  };
}

async function validate(m: TfjsResNet, test: Dataset, config: TrainConfig, rank: number, world: number, c: Collective) {
  const s = new DistributedSampler(test.size, rank, world, { seed: config.seed, shuffle: false });
  const idx = s.indices(0);
  const b = allocBatch(config.batchSize, config.imageSize);
  let lossSum = 0;
  let correct = 0;
  let count = 0;
  for (let i = 0; i + config.batchSize <= idx.length; i += config.batchSize) {
    fillBatch(test, idx.subarray(i, i + config.batchSize), b, { augment: false, epoch: 0 });
    const r = m.evaluate(b.images, b.labels, b.batch);
    lossSum += r.loss * b.batch;
    correct += r.correct;
    count += b.batch;
  }
  const all = await c.gather({ lossSum, correct, count }, 0);
  if (!all) return undefined;
  const n = all.reduce((x, r) => x + r.count, 0);
  return n ? { loss: all.reduce((x, r) => x + r.lossSum, 0) / n, accuracy: all.reduce((x, r) => x + r.correct, 0) / n } : undefined;
}

async function resume(
  config: TrainConfig,
  dir: string,
  m: TfjsResNet,
  params: Float32Array,
  optimizer: ReturnType<typeof createOptimizer>,
  c: Collective,
  isMaster: boolean,
  emit: Emit,
  log: (s: string) => void,
): Promise<number> {
  if (!dir) throw new Error('--resume needs --checkpoint-dir DIR');
  // Rank 0 reads the checkpoint (it may be the only host that has it) and broadcasts it.
  const header = new Float32Array(3); // [found, step, optimizer t] (exact in float32 up to 2^24)
  const ck = isMaster ? loadLatestCheckpoint(dir) : undefined;
  if (ck) {
    if (ck.meta.paramCount !== m.paramCount || ck.meta.optimizer !== config.optimizer) {
      throw new Error(`--resume: ${ck.path} is for ${ck.meta.paramCount} params / ${ck.meta.optimizer}, this run has ${m.paramCount} / ${config.optimizer}`);
    }
    header[0] = 1;
    header[1] = ck.step;
    header[2] = ck.optimizerT;
  }
  await c.broadcast(header, 0);
  if (header[0] === 0) {
    log(`resume: no checkpoint in ${dir}; starting from step 0`);
    return 0;
  }
  const st = optimizer.state();
  const bn = m.getBnState();
  if (ck) {
    params.set(ck.sections.params!);
    bn.set(ck.sections.bn!);
    for (const [k, b] of Object.entries(st.buffers)) b.set(ck.sections[`opt.${k}`]!);
  }
  await c.broadcast(params, 0);
  await c.broadcast(bn, 0);
  for (const b of Object.values(st.buffers)) await c.broadcast(b, 0);
  const step = header[1]!;
  optimizer.loadState({ t: header[2]!, buffers: st.buffers });
  m.setBnState(bn);
  if (ck) emit({ type: 'checkpoint', step, path: ck.path, action: 'resumed' });
  log(`resume: continuing from step ${step}`);
  return step;
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

export function paramChecksum(params: Float32Array): string {
  return createHash('sha256').update(new Uint8Array(params.buffer, params.byteOffset, params.byteLength)).digest('hex');
}


/** Sends a small JSON value from `root` to every rank (as UTF-16 code units in float32, exact below 2^24). */
async function broadcastJson<T>(c: Collective, value: T, root: number): Promise<T> {
  const text = c.rank === root ? JSON.stringify(value) : '';
  const len = Float32Array.of(text.length);
  await c.broadcast(len, root);
  const buf = new Float32Array(len[0]!);
  if (c.rank === root) for (let i = 0; i < text.length; i++) buf[i] = text.charCodeAt(i);
  await c.broadcast(buf, root);
  return c.rank === root ? value : (JSON.parse(String.fromCharCode(...buf)) as T);
}
