// The torch engine script (trainer/engine/torch/torch_engine.py) run as real Python processes with
// the rendezvous environment the host agent gives them: one rank, two ranks over gloo, honest
// capability reports on this CPU-only PyTorch 1.13, CIFAR-100 epochs with checkpoint/resume, and
// a killed peer failing the survivor fast with nothing left running.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CohortEvent, TrainConfig } from '../../trainer/protocol';
import { resnet50ParamCount } from '../../trainer/protocol/resnet50-shape';
import { TINY_DEPTH, TINY_WIDTH } from '../helpers/tiny';
import { EngineRank, freePort, ofType, pidAlive, PYTHON, torchUnavailableReason, type RankOptions } from './engine-process';

const skipReason = torchUnavailableReason();
if (skipReason) console.warn(`torch engine tests skipped: ${skipReason}`);

const TINY: Partial<TrainConfig> = { imageSize: 32, batchSize: 4, steps: 4, logSteps: 2, warmupSteps: 1 };
// The case whose subject is the network (its parameter count, torchvision's against the built-in)
// trains it at its published width; the others (the protocol and capabilities, DDP over gloo, data
// and checkpoints, a lost or hung peer) prove the same code paths at the tiny run's quarter width and
// depth 14 (test/helpers/tiny.ts says why), on the engine's built-in ResNet (torchvision has no width:
// model.py).
const QUARTER: Partial<TrainConfig> = { ...TINY, width: TINY_WIDTH, depth: TINY_DEPTH };
const QUARTER_PARAMS_100 = resnet50ParamCount({ stem: 'imagenet', classes: 100, width: TINY_WIDTH, depth: TINY_DEPTH });
const RESNET50_PARAMS_100 = 23_712_932;

const live = new Set<EngineRank>();
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all([...live].map((r) => r.dispose()));
  live.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function start(o: RankOptions): EngineRank {
  const r = new EngineRank({ ...o, env: { COHORT_THREADS: '1', ...o.env } });
  live.add(r);
  return r;
}

async function runRanks(worldSize: number, config: Partial<TrainConfig>, env: Record<string, string> = {}): Promise<EngineRank[]> {
  const port = await freePort();
  const ranks = Array.from({ length: worldSize }, (_, rank) => start({ rank, worldSize, port, config, env }));
  const exits = await Promise.all(ranks.map((r) => r.finished(150_000)));
  exits.forEach((x, i) => expect(x, `rank ${i} exit; stderr:\n${ranks[i]!.stderr.slice(-3000)}`).toEqual({ code: 0, signal: null }));
  return ranks;
}

/** torchvision's version as its installed metadata says (no import), or 'absent'. */
function installedTorchvision(): string {
  const r = spawnSync(PYTHON, ['-c', 'import importlib.metadata as m\ntry:\n    print(m.version("torchvision"))\nexcept m.PackageNotFoundError:\n    print("absent")'], { encoding: 'utf8' });
  return r.stdout.trim();
}

/** Every stdout line must be a valid protocol event. */
function expectCleanStream(r: EngineRank): void {
  expect(r.invalid, `stdout lines that do not decode:\n${r.lines.join('\n')}`).toEqual([]);
  expect(r.lines.length).toBe(r.events.length);
}

function one<K extends CohortEvent['type']>(r: EngineRank, type: K): Extract<CohortEvent, { type: K }> {
  const found = r.events.filter(ofType(type));
  expect(found, `${type} events`).toHaveLength(1);
  return found[0]!;
}

describe.skipIf(skipReason !== undefined)(`torch engine script${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('one rank: the protocol in order, with fp16 and compile reported unavailable (never silently ignored)', async () => {
    // PYTHONPROFILEIMPORTTIME: Python's own record of every module the rank imported (stderr).
    const [r] = await runRanks(1, { ...QUARTER, fp16: true, compile: true }, { PYTHONPROFILEIMPORTTIME: '1' });
    expectCleanStream(r!);
    expect(r!.events.map((e) => e.type)).toEqual(['hello', 'plan', 'compile', 'warmup', 'step', 'step', 'done']);
    const hello = one(r!, 'hello');
    expect(hello).toMatchObject({ engine: 'torch', backend: 'cpu', worldSize: 1, params: QUARTER_PARAMS_100, host: 'localhost' });
    expect(hello.versions.torch).toMatch(/^\d+\.\d+/);
    // torchvision's version without importing it (the model at depth 14 is built here): 0.3-0.5 CPU-s a rank.
    expect(hello.versions.torchvision).toBe(installedTorchvision());
    expect(r!.stderr).toMatch(/^import time: +\d+ \| +\d+ \| +torch$/m);
    expect(r!.stderr).not.toMatch(/^import time: .*\| +torchvision$/m);
    expect(hello.capabilities.fp16!.available).toBe(false);
    expect(hello.capabilities.fp16!.detail).toMatch(/needs a CUDA GPU.*requested but not applied/);
    expect(hello.capabilities.channelsLast!.available).toBe(true);
    expect(hello.reason).toMatch(/--fp16 unavailable/);
    const torchMajor = Number(hello.versions.torch!.split('.')[0]);
    const compile = one(r!, 'compile');
    if (torchMajor < 2) {
      expect(hello.capabilities.compile).toMatchObject({ available: false });
      expect(hello.capabilities.compile!.detail).toContain('torch.compile needs PyTorch ≥ 2.0; found 1.');
      expect(compile).toMatchObject({ name: 'torch.compile', status: 'skipped' });
      expect(compile.detail).toContain('needs PyTorch ≥ 2.0');
    } else {
      expect(['ok', 'failed']).toContain(compile.status);
    }
    const steps = r!.events.filter(ofType('step'));
    expect(steps.map((s) => s.step)).toEqual([2, 4]);
    for (const s of steps) {
      expect(s.globalSamplesPerSec).toBeGreaterThan(0);
      expect(s.memory).toEqual([expect.objectContaining({ rank: 0, host: 'localhost' })]);
      expect(s.memory[0]!.rssBytes).toBeGreaterThan(100 << 20);
    }
    const done = one(r!, 'done');
    expect(done).toMatchObject({ status: 'ok', steps: 4 });
    expect(done.paramChecksum).toMatch(/^[0-9a-f]{64}$/);
    expect(r!.stderr).toMatch(/warning: --fp16 requested but unavailable/);
  });

  it('two ranks over gloo: global throughput and both ranks’ memory from rank 0; rank 1 prints no events', async () => {
    const ranks = await runRanks(2, { ...QUARTER, syncBn: true });
    const [r0, r1] = ranks as [EngineRank, EngineRank];
    expectCleanStream(r0);
    expect(r1.lines).toEqual([]);
    expect(one(r0, 'hello')).toMatchObject({ worldSize: 2, params: QUARTER_PARAMS_100 });
    expect(one(r0, 'hello').capabilities.ddp).toMatchObject({ available: true });
    // SyncBatchNorm is CUDA-only in torch: asked for on CPU, it is reported, not faked.
    expect(one(r0, 'hello').capabilities.syncBn!.detail).toMatch(/needs CUDA.*requested but not applied/);
    const plan = one(r0, 'plan');
    expect(plan).toMatchObject({ worldSize: 2, globalBatch: 8, steps: 4 });
    expect(plan.ranks.map((x) => [x.rank, x.localRank])).toEqual([[0, 0], [1, 1]]);
    const steps = r0.events.filter(ofType('step'));
    expect(steps).toHaveLength(2);
    for (const s of steps) {
      expect(s.worldSize).toBe(2);
      expect(s.memory.map((m) => m.rank)).toEqual([0, 1]);
      expect(s.memory.every((m) => m.rssBytes > 0 && (m.tensorBytes ?? 0) > 0)).toBe(true);
      expect(s.loss).not.toBeNull();
    }
    expect(one(r0, 'done')).toMatchObject({ status: 'ok', steps: 4 });
    expect(r0.events.at(-1)!.type).toBe('done');
  });

  it('the built-in ResNet-50 (no torchvision) is the same network: same parameter count and identical trained weights', async () => {
    const config = { ...TINY, steps: 2, logSteps: 1 };
    const [tv] = await runRanks(1, config);
    const [builtin] = await runRanks(1, config, { COHORT_TORCH_BUILTIN_RESNET: '1' });
    expect(one(builtin!, 'hello').params).toBe(RESNET50_PARAMS_100);
    expect(one(builtin!, 'hello').reason).toContain('built-in ResNet-50');
    expect(one(tv!, 'hello').reason).toContain('torchvision.models.resnet50');
    expect(one(builtin!, 'done').paramChecksum).toBe(one(tv!, 'done').paramChecksum);
  });

  it('CIFAR-100 directory: epoch events with validation accuracy, checkpoint saved, then resumed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-cifar-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'train.bin'), fakeCifar(16, 1));
    writeFileSync(join(dir, 'test.bin'), fakeCifar(10, 2));
    const ckpt = join(dir, 'ckpt');
    const base = { data: `cifar100:${dir}`, stem: 'cifar' as const, imageSize: 8, width: TINY_WIDTH, depth: TINY_DEPTH, batchSize: 4, logSteps: 2, warmupSteps: 1, checkpointDir: ckpt };
    const [first] = await runRanks(1, { ...base, steps: 0, epochs: 1, checkpointEvery: 4 });
    expectCleanStream(first!);
    expect(one(first!, 'plan')).toMatchObject({ stepsPerEpoch: 4, steps: 4, epochs: 1 });
    const epoch = one(first!, 'epoch');
    expect(epoch.epoch).toBe(0);
    expect(epoch.valAccuracy).toBeGreaterThanOrEqual(0);
    expect(epoch.valAccuracy).toBeLessThanOrEqual(1);
    expect(epoch.valLoss).toBeGreaterThan(0);
    expect(one(first!, 'checkpoint')).toMatchObject({ step: 4, action: 'saved' });

    const [second] = await runRanks(1, { ...base, steps: 0, epochs: 2, resume: true });
    expectCleanStream(second!);
    expect(second!.events.filter(ofType('checkpoint'))[0]).toMatchObject({ step: 4, action: 'resumed' });
    expect(second!.events.filter(ofType('epoch')).map((e) => e.epoch)).toEqual([1]);
    expect(one(second!, 'done')).toMatchObject({ status: 'ok', steps: 8 });
  });

  it('a bad data directory fails with an error event naming the flag and what to do', async () => {
    const port = await freePort();
    const r = start({ rank: 0, worldSize: 1, port, config: { ...TINY, data: 'cifar100:/nonexistent/cifar' } });
    const exit = await r.finished(60_000);
    expect(exit.code).not.toBe(0);
    expectCleanStream(r);
    const err = one(r, 'error');
    expect(err).toMatchObject({ rank: 0, host: 'localhost', code: 'config' });
    expect(err.message).toContain('--data cifar100:/nonexistent/cifar');
    expect(err.message).toContain('binary');
  });

  it('killing one rank mid-run makes the other exit non-zero within 15 s, naming the lost peer; no python left', async () => {
    const port = await freePort();
    const config = { ...QUARTER, steps: 10_000, logSteps: 1 };
    const [r0, r1] = [0, 1].map((rank) => start({ rank, worldSize: 2, port, config })) as [EngineRank, EngineRank];
    await r0.waitFor(ofType('step'), { signal: AbortSignal.timeout(90_000) });
    const killedAt = Date.now();
    r1.child.kill('SIGKILL');
    const exit = await r0.finished(30_000);
    const elapsed = Date.now() - killedAt;
    expect(exit.code, r0.stderr.slice(-2000)).toBe(1);
    expect(elapsed).toBeLessThan(15_000);
    expectCleanStream(r0);
    const err = one(r0, 'error');
    expect(err).toMatchObject({ rank: 0, code: 'peer-lost' });
    expect(err.message).toContain('lost contact with a peer rank');
    expect(err.logTail.length).toBeGreaterThan(0);
    expect(one(r0, 'done')).toMatchObject({ status: 'failed', paramChecksum: '' });
    await r1.exited;
    expect(pidAlive(r0.pid)).toBe(false);
    expect(pidAlive(r1.pid)).toBe(false);
  });

  it('a hung peer (SIGSTOP, sockets still open) is detected by the heartbeat and named (rank-hung, its rank, reported by rank 0)', async () => {
    const port = await freePort();
    const config = { ...QUARTER, steps: 10_000, logSteps: 1 };
    const [r0, r1] = [0, 1].map((rank) => start({ rank, worldSize: 2, port, config })) as [EngineRank, EngineRank];
    await r0.waitFor(ofType('step'), { signal: AbortSignal.timeout(90_000) });
    const stoppedAt = Date.now();
    r1.child.kill('SIGSTOP');
    try {
      const exit = await r0.finished(30_000);
      expect(exit.code, r0.stderr.slice(-2000)).toBe(1);
      // bounded, not a benchmark: issue 21's goal is the hung rank named within 30 s (store beats every second)
      expect(Date.now() - stoppedAt).toBeLessThan(30_000);
      // the hung rank is the error's rank (issue 21 item 4), rank 0 the reporter
      expect(one(r0, 'error')).toMatchObject({ code: 'rank-hung', rank: 1, reportedBy: [0] });
      expect(one(r0, 'error').message).toMatch(/rank 1 on \S+ hung/);
    } finally {
      r1.child.kill('SIGKILL'); // a stopped process still dies from SIGKILL
    }
  });

  it('a rank whose parent (the agent) dies exits on its own: nothing is left behind', async () => {
    const port = await freePort();
    const shell = start({ rank: 0, worldSize: 1, port, config: { ...QUARTER, steps: 10_000 }, viaShell: true });
    await shell.waitFor(ofType('hello'), { signal: AbortSignal.timeout(90_000) });
    const pidLine = shell.lines.find((l) => l.startsWith('pid '));
    const pid = Number(pidLine?.slice(4));
    expect(pid).toBeGreaterThan(0);
    try {
      expect(pidAlive(pid)).toBe(true);
      shell.child.kill('SIGKILL');
      const deadline = Date.now() + 15_000;
      while (pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(pidAlive(pid)).toBe(false);
    } finally {
      if (pid > 0 && pidAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

/** `n` CIFAR-100 binary records: coarse label, fine label, 3072 bytes of CHW pixels. */
function fakeCifar(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * 3074);
  let x = seed;
  for (let i = 0; i < b.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  for (let i = 0; i < n; i++) {
    b[i * 3074] = i % 20;
    b[i * 3074 + 1] = i % 100;
  }
  return b;
}
