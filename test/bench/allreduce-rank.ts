// One rank of the allreduce benchmark (spawned by allreduce.ts): times ITERS allreduces of
// BENCH_LEN float32 per mode after WARMUP untimed ones. Each timed op starts right after a
// barrier; the reported time of an iteration is the slowest rank's. Rank 0 prints one JSON line.
import { COLLECTIVE_SCRATCH_BYTES, connectCollective, rendezvousEnvFromProcess } from '../../trainer/collectives';
import { FlatBuffers } from '../../trainer/optim/update-kernels';

const len = Number(process.env.BENCH_LEN ?? 25_000_000);
const iters = Number(process.env.BENCH_ITERS ?? 7);
const warmup = Number(process.env.BENCH_WARMUP ?? 2);
const modes = (process.env.BENCH_MODES ?? 'f32,f16').split(',');

const env = rendezvousEnvFromProcess(process.env);
const transport = process.env.BENCH_TRANSPORT === 'tcp' ? 'tcp' : 'unix';
const c = await connectCollective(env, { timeoutMs: 60_000, sameHostTransport: transport });
// The buffer lives where the trainer keeps its gradients (the optimizer's wasm memory, registered
// with the collective so pieces are added in place). BENCH_REGISTER=0: a plain Float32Array.
const home = process.env.BENCH_REGISTER === '0' ? undefined : new FlatBuffers(1, len, COLLECTIVE_SCRATCH_BYTES);
if (home) c.registerMemory({ memory: home.memory, scratchOffset: home.scratchOffset });
const buf = home ? home.views[0]! : new Float32Array(len);
const out: Record<string, { ms: number[]; bytesPerOp: number; cpuMsPerOp: number }> = {};
for (const mode of modes) {
  const fp16 = mode === 'f16';
  const mine: number[] = [];
  let bytes = 0;
  let cpu = 0; // this rank's user+system CPU ms in timed ops: independent of other load on the machine
  for (let i = 0; i < warmup + iters; i++) {
    buf.fill(env.rank + 1); // fresh values each time (sum, not average, like torch's allreduce)
    await c.barrier();
    const before = c.bytesSent;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await c.allreduce(buf, { fp16 });
    const dt = performance.now() - t0;
    const used = process.cpuUsage(c0);
    if (i >= warmup) {
      mine.push(dt);
      cpu += (used.user + used.system) / 1000;
    }
    bytes = c.bytesSent - before;
  }
  const expected = (env.worldSize * (env.worldSize + 1)) / 2;
  if (buf[0] !== expected || buf[len - 1] !== expected) throw new Error(`wrong result ${buf[0]} (want ${expected})`);
  const all = await c.gather(mine, 0);
  if (all) out[mode] = { ms: mine.map((_, i) => Math.max(...all.map((a) => a[i]!))), bytesPerOp: bytes, cpuMsPerOp: cpu / iters };
}
if (env.rank === 0) console.log(JSON.stringify({ transport: c.transport, results: out }));
await c.barrier();
c.dispose();
