// The torch engine's GPU-truth fixes (issue 13) that can be shown on this CPU-only PyTorch:
// torchrun-compatible rendezvous, torch's default process-group timeout, the compile step kept out
// of throughput, --compile-mode checked at decode, bf16 never claimed on a CPU. A spy
// (fixtures/spy/sitecustomize.py, on PYTHONPATH) reports the process groups' timeouts and stands in
// for torch.compile, which torch 1.13 lacks.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import type { TrainConfig } from '../../trainer/protocol';
import { TINY_DEPTH, TINY_WIDTH } from '../helpers/tiny';
import { EngineRank, PYTHON, freePort, ofType, torchUnavailableReason, type RankOptions } from './engine-process';

const skipReason = torchUnavailableReason();
const SPY = join(import.meta.dirname, 'fixtures', 'spy');
// At the tiny run's quarter width (test/helpers/tiny.ts): these fixes are about rendezvous, timeouts
// and warm-up, the same at any width (the engine's built-in net: torchvision has no width).
const TINY: Partial<TrainConfig> = { imageSize: 32, width: TINY_WIDTH, depth: TINY_DEPTH, batchSize: 2, steps: 2, logSteps: 1, warmupSteps: 1 };

const live = new Set<EngineRank>();
const stores = new Set<ChildProcess>();
afterEach(async () => {
  await Promise.all([...live].map((r) => r.dispose()));
  live.clear();
  for (const s of stores) s.kill('SIGKILL');
  stores.clear();
});

function start(o: RankOptions): EngineRank {
  const r = new EngineRank({ ...o, env: { COHORT_THREADS: '1', PYTHONPATH: SPY, ...o.env } });
  live.add(r);
  return r;
}

async function finished(ranks: EngineRank[]): Promise<void> {
  const exits = await Promise.all(ranks.map((r) => r.finished(240_000)));
  exits.forEach((x, i) => expect(x, `rank ${i} exit; stderr:\n${ranks[i]!.stderr.slice(-3000)}`).toEqual({ code: 0, signal: null }));
}

/** A TCPStore server on `port`, as torchrun's agent holds one on MASTER_PORT before it starts the ranks. */
async function agentStore(port: number): Promise<void> {
  const code = `import datetime, time, torch.distributed as d
s = d.TCPStore('127.0.0.1', ${port}, None, True, datetime.timedelta(seconds=300), wait_for_workers=False)
print('listening', flush=True)
time.sleep(600)`;
  const p = spawn(PYTHON, ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  stores.add(p);
  await new Promise<void>((resolve, reject) => {
    p.once('exit', (c) => reject(new Error(`the stand-in torchrun store exited (${c})`)));
    createInterface({ input: p.stdout! }).on('line', (l) => l === 'listening' && resolve());
  });
}

describe.skipIf(skipReason !== undefined)(`torch engine GPU-truth fixes${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('under torchrun (its store already on MASTER_PORT) two ranks join that store; groups keep torch’s default timeout; bf16 not claimed on CPU', async () => {
    const port = await freePort();
    await agentStore(port);
    const env = { TORCHELASTIC_RUN_ID: 'cohort-test', TORCHELASTIC_USE_AGENT_STORE: 'True', TORCHELASTIC_RESTART_COUNT: '0', LOCAL_WORLD_SIZE: '2' };
    const ranks = [0, 1].map((rank) => start({ rank, worldSize: 2, port, config: { ...TINY, bf16: true }, env }));
    await finished(ranks);
    const [r0, r1] = ranks as [EngineRank, EngineRank];
    expect(r0.events.filter(ofType('done'))[0]).toMatchObject({ status: 'ok', steps: 2 });
    expect(r1.events).toEqual([]);
    for (const r of ranks) {
      expect(r.stderr).toContain("cohort-spy init_process_group timeout=None init_method='env://'");
      // the metadata group (gloo here: the world group itself) has no timeout of its own; only the heartbeat's group does.
      expect(r.stderr.match(/cohort-spy new_group timeout=(.*)/g)).toEqual(['cohort-spy new_group timeout=datetime.timedelta(seconds=10)']);
    }
    const hello = r0.events.filter(ofType('hello'))[0]!;
    expect(hello.capabilities.bf16).toMatchObject({ available: false });
    expect(hello.capabilities.bf16!.detail).toMatch(/compute capability ≥ 8\.0.*runs on cpu.*requested but not applied/);
  });

  it('without torchrun, rank 0 serves the store itself and the default group still gets torch’s default timeout', async () => {
    const port = await freePort();
    const ranks = [0, 1].map((rank) => start({ rank, worldSize: 2, port, config: TINY }));
    await finished(ranks);
    for (const r of ranks) expect(r.stderr).toContain('cohort-spy init_process_group timeout=None init_method=None');
  });

  it('--compile --warmup-steps 0: the compile step is warm-up, never in the first throughput window', async () => {
    const port = await freePort();
    const r = start({ rank: 0, worldSize: 1, port, config: { ...TINY, steps: 3, compile: true, warmupSteps: 0 }, env: { COHORT_SPY_COMPILE_S: '6' } });
    await finished([r]);
    const compile = r.events.filter(ofType('compile'))[0]!;
    expect(compile).toMatchObject({ status: 'ok' });
    expect(compile.durationMs).toBeGreaterThanOrEqual(6000);
    const warmup = r.events.filter(ofType('warmup'))[0];
    expect(warmup, 'a warmup event for the compile step').toMatchObject({ steps: 1 });
    const first = r.events.filter(ofType('step'))[0]!;
    // The first window holds the steps after warm-up; its duration must fit after the compile event.
    const windowMs = first.stepTimeMs * (first.step - warmup!.steps);
    expect(first.time - windowMs).toBeGreaterThanOrEqual(compile.time - 250);
  });

  it('a bad --compile-mode fails at config decode, before any rendezvous, naming the modes', async () => {
    const port = await freePort();
    const viaConfig = start({ rank: 0, worldSize: 2, port, config: { ...TINY, compile: true, compileMode: 'max-autotun' as TrainConfig['compileMode'] } }); // not a mode: straight to the engine, past the table's check
    const viaFlag = start({ rank: 0, worldSize: 2, port, config: TINY, args: ['--compile-mode', 'fast'] });
    const [a, b] = await Promise.all([viaConfig.finished(120_000), viaFlag.finished(120_000)]);
    expect(a.code).toBe(1);
    const err = viaConfig.events.filter(ofType('error'))[0]!;
    expect(err).toMatchObject({ code: 'config' });
    expect(err.message).toMatch(/--compile-mode: expected one of default, reduce-overhead, max-autotune.*got 'max-autotun'/);
    expect(viaConfig.stderr).not.toMatch(/rendezvous at /);
    expect(b.code).toBe(2);
    expect(viaFlag.stderr).toMatch(/--compile-mode: invalid choice: 'fast'/);
    expect(viaFlag.events.map((e) => e.type)).toEqual(['error']);
  });
});
