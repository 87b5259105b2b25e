// Raw loopback TCP one-way between two Node processes, the single-stream reference. Same
// topology as a 2-rank ring: each process connects to the other's listener and reads its
// connecting socket with `onread` into a reused 1 MiB buffer; it writes on the accepted one.
// One-way: parent → child, the other direction idle (the ring's own traffic pattern, both ways
// at once among n processes, is allreduce-raw-ring.ts). Receipt is reported over IPC.
// Prints JSON {bytes, oneWayMs: [...]}.
import { fork, type ChildProcess } from 'node:child_process';
import net from 'node:net';

const BYTES = Number(process.env.BENCH_BYTES ?? 100_000_000);
const ROUNDS = Number(process.env.BENCH_ITERS ?? 7);
const data = Buffer.alloc(BYTES, 1);

function counting(onFull: () => void): net.OnReadOpts {
  let got = 0;
  return {
    buffer: Buffer.allocUnsafe(1 << 20),
    callback: (n) => {
      got += n;
      if (got >= BYTES) {
        got -= BYTES;
        onFull();
      }
      return true;
    },
  };
}

/** Listen, tell the peer our port, connect to its port; resolves with the socket we write on. */
async function pair(sendPort: (p: number) => void, peerPort: Promise<number>, onFull: () => void): Promise<{ out: net.Socket; close: () => void }> {
  const server = net.createServer({ noDelay: true });
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  sendPort((server.address() as net.AddressInfo).port);
  const inbound = net.connect({ port: await peerPort, host: '127.0.0.1', onread: counting(onFull) });
  inbound.setNoDelay(true);
  const out = await accepted;
  return { out, close: () => (inbound.destroy(), out.destroy(), server.close()) };
}

function message(proc: NodeJS.Process | ChildProcess, pred: (m: unknown) => boolean): Promise<unknown> {
  return new Promise((r) => {
    const on = (m: unknown): void => {
      if (pred(m)) {
        proc.off('message', on);
        r(m);
      }
    };
    proc.on('message', on);
  });
}

if (process.argv[2] === 'child') {
  const link = await pair((p) => process.send!({ port: p }), message(process, (m) => typeof m === 'object').then((m) => (m as { port: number }).port), () => process.send!('got'));
  process.on('message', (m) => {
    if (m === 'exit') {
      link.close();
      process.disconnect();
    }
  });
} else {
  const child = fork(new URL(import.meta.url).pathname, ['child'], { execArgv: ['--import', 'tsx'] });
  let onChildGot = (): void => {};
  child.on('message', (m) => void (m === 'got' && onChildGot()));
  const childPort = message(child, (m) => typeof m === 'object').then((m) => (m as { port: number }).port);
  const link = await pair((p) => child.send({ port: p }), childPort, () => undefined);
  const oneWayMs: number[] = [];
  for (let i = 0; i < ROUNDS + 1; i++) {
    const t0 = performance.now();
    await new Promise<void>((r) => {
      onChildGot = r;
      link.out.write(data);
    });
    if (i > 0) oneWayMs.push(performance.now() - t0);
  }
  child.send('exit');
  await new Promise((r) => child.once('exit', r));
  link.close();
  console.log(JSON.stringify({ bytes: BYTES, oneWayMs }));
}
