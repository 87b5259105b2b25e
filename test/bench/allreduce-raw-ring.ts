// Raw loopback TCP with a ring allreduce's traffic pattern, the ceiling a ring over TCP can reach:
// N Node processes in a ring, each writing `perRank` bytes to its right neighbour while reading as
// many from its left one, all at once. A ring allreduce of B bytes moves exactly
// perRank = 2(N−1)/N · B per rank this way (reduce-scatter + all-gather), so its bus bandwidth
// (2(N−1)/N · B / time) is directly comparable with perRank / time here. No reduction, no framing.
// The parent only coordinates (IPC); the N children carry the data.
//   BENCH_RANKS=3 BENCH_BYTES=100000000 BENCH_ITERS=7 node --import tsx test/bench/allreduce-raw-ring.ts
// Prints JSON {ranks, perRankBytes, ms: [...], cpuMs: [...]} (cpuMs: child 0's CPU per round).
import { fork, type ChildProcess } from 'node:child_process';
import net from 'node:net';

const RANKS = Number(process.env.BENCH_RANKS ?? 2);
const BYTES = Number(process.env.BENCH_BYTES ?? 100_000_000);
const ROUNDS = Number(process.env.BENCH_ITERS ?? 7);
const PER_RANK = Math.round((2 * (RANKS - 1) * BYTES) / RANKS);

type Msg = { port: number } | { prev: number } | 'ready' | 'go' | 'exit' | { got: number; cpuMs: number };

if (process.argv[2] === 'child') {
  // As the ring's links: read on the socket we connect (to the left neighbour, with `onread` into
  // one reused buffer, so bytes are counted and never copied again) and write on the one we accept
  // (from the right neighbour).
  const data = Buffer.alloc(PER_RANK, 1);
  let got = 0;
  let c0 = process.cpuUsage();
  const listener = net.createServer({ noDelay: true });
  const accepted = new Promise<net.Socket>((r) => listener.once('connection', r));
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  process.send!({ port: (listener.address() as net.AddressInfo).port } satisfies Msg);
  let inbound: net.Socket | null = null;
  let out: net.Socket | null = null;
  process.on('message', (m: Msg) => {
    if (typeof m === 'object' && 'prev' in m) {
      inbound = net.connect({
        port: m.prev,
        host: '127.0.0.1',
        onread: {
          buffer: Buffer.allocUnsafe(1 << 20),
          callback: (n: number) => {
            got += n;
            if (got >= PER_RANK) {
              got -= PER_RANK;
              const u = process.cpuUsage(c0);
              process.send!({ got: 1, cpuMs: (u.user + u.system) / 1000 } satisfies Msg);
            }
            return true;
          },
        },
      });
      inbound.setNoDelay(true);
      void accepted.then((s) => {
        out = s;
        process.send!('ready' satisfies Msg);
      });
    } else if (m === 'go') {
      c0 = process.cpuUsage();
      out!.write(data);
    } else if (m === 'exit') {
      inbound?.destroy();
      out?.destroy();
      listener.close();
      process.disconnect();
    }
  });
} else {
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  for (let i = 0; i < RANKS; i++) {
    const c = fork(new URL(import.meta.url).pathname, ['child'], { execArgv: ['--import', 'tsx'], env: { ...process.env, BENCH_RANKS: String(RANKS), BENCH_BYTES: String(BYTES) } });
    children.push(c);
    ports.push(await new Promise<number>((r) => c.once('message', (m: { port: number }) => r(m.port))));
  }
  await Promise.all(children.map((c, i) => new Promise<void>((r) => {
    c.once('message', () => r());
    c.send({ prev: ports[(i + RANKS - 1) % RANKS]! } satisfies Msg);
  })));
  const ms: number[] = [];
  const cpuMs: number[] = [];
  for (let round = 0; round < ROUNDS + 1; round++) {
    const t0 = performance.now();
    const done = children.map((c) => new Promise<number>((r) => c.once('message', (m: { cpuMs: number }) => r(m.cpuMs))));
    for (const c of children) c.send('go');
    const cpu = await Promise.all(done);
    if (round > 0) {
      ms.push(performance.now() - t0);
      cpuMs.push(cpu[0]!);
    }
  }
  for (const c of children) c.send('exit');
  await Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
  console.log(JSON.stringify({ ranks: RANKS, perRankBytes: PER_RANK, ms, cpuMs }));
}
