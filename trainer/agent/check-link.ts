// `check-link listen|send`: plain TCP between two hosts, the way the ranks' ring and rendezvous
// use it (not through SSH), for `cohort check`. Short-lived host commands, nothing left running:
//   check-link listen [--port P] --expect N --timeout-ms T
//     listens on P (0: any free port), prints {"port":P}, serves N connections (or until T ms
//     pass), prints {"done":true,"connections":K} and exits.
//   check-link stop --pid P   ends a listener whose peer never connected (only that kind of process)
//   check-link send --to ADDR --port P --ms D [--start stdin]
//     connects (5 s limit), times a few round trips, streams data for D ms, then prints the
//     receiver's count: {"ok":true,"rttMs":..,"bytes":..,"ms":..} (LinkSendReport).
//     --start stdin: connected and timed, it prints {"ready":true} and streams only once a "GO"
//     line comes on stdin (stdin's end without one: latency only). The client starts every ring
//     hop's sender at once (one process start per host, not one per hop after another) and lets
//     them stream one at a time.
// On the wire: "PING\n" lines are echoed; "DATA\n" starts the stream, which the receiver counts
// from its first byte to the sender's end and answers with one JSON line; "BYE\n" ends a
// latency-only connection.
import { readFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { LinkSendReport } from '../protocol/check';
import { HostCmdFailure, intFlag, parseFlags, replyLine } from './host-cmd';

const PINGS = 5;
const CONNECT_TIMEOUT_MS = 5000;

export async function checkLink(argv: readonly string[]): Promise<number> {
  const [mode, ...rest] = argv;
  if (mode === 'listen') return listen(rest);
  if (mode === 'send') return send(rest);
  if (mode === 'stop') return stop(rest);
  throw new HostCmdFailure('usage', 'check-link: listen or send', 3);
}

async function listen(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, ['port', 'expect', 'timeout-ms'], 'check-link listen');
  const expect = intFlag(flags, 'expect', 1, 'check-link listen');
  const timeoutMs = intFlag(flags, 'timeout-ms', 30_000, 'check-link listen');
  let served = 0;
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let counting = false;
    let bytes = 0;
    let first = 0;
    const finish = () => {
      sockets.delete(sock);
      if (++served >= expect) close();
    };
    sock.on('data', (chunk: Buffer) => {
      if (counting) {
        bytes += chunk.length;
        return;
      }
      buf = Buffer.concat([buf, chunk]);
      for (let nl = buf.indexOf(10); nl >= 0 && !counting; nl = buf.indexOf(10)) {
        const line = buf.subarray(0, nl).toString();
        buf = buf.subarray(nl + 1);
        if (line === 'PING') sock.write('PONG\n');
        else if (line === 'BYE') sock.end();
        else if (line === 'DATA') {
          counting = true;
          first = performance.now();
          bytes = buf.length;
        }
      }
    });
    sock.on('end', () => {
      if (counting) sock.end(JSON.stringify({ bytes, ms: performance.now() - first }) + '\n');
      else sock.end();
    });
    sock.on('close', finish);
    sock.on('error', () => undefined);
  });
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const timer = setTimeout(() => close(), timeoutMs);
  function close(): void {
    clearTimeout(timer);
    server.close(() => done());
    for (const s of sockets) s.destroy();
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new HostCmdFailure(e.code === 'EADDRINUSE' ? 'port-in-use' : 'listen-failed', `cannot listen on TCP port ${flags.port ?? 0}: ${e.message}`)));
    server.listen(Number(flags.port ?? 0), () => resolve());
  });
  const addr = server.address();
  replyLine({ port: typeof addr === 'object' && addr ? addr.port : 0, pid: process.pid });
  await finished;
  replyLine({ done: true, connections: served });
  return 0;
}

/** Ends a listener whose peer never came (the client saw the connection fail): only a `check-link listen` process. */
async function stop(argv: readonly string[]): Promise<number> {
  const pid = intFlag(parseFlags(argv, ['pid'], 'check-link stop'), 'pid', 0, 'check-link stop');
  let cmd = '';
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // gone already (or no /proc: then it ends at its own timeout)
  }
  const ours = cmd.includes('check-link listen');
  if (ours) process.kill(pid, 'SIGTERM');
  replyLine({ stopped: ours });
  return 0;
}

async function send(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, ['to', 'port', 'ms', 'start'], 'check-link send');
  const durationMs = intFlag(flags, 'ms', 2000, 'check-link send');
  const port = intFlag(flags, 'port', 0, 'check-link send');
  if (flags.start !== undefined && flags.start !== 'stdin') throw new HostCmdFailure('usage', `check-link send: --start takes "stdin", got ${JSON.stringify(flags.start)}`, 3);
  const report = await measure(flags.to ?? '', port, durationMs, flags.start === 'stdin' ? goFromStdin : undefined);
  replyLine(report);
  return report.ok ? 0 : 1;
}

/** true on a "GO" line, false when stdin ends without one (the client gone, or latency only after all). */
async function goFromStdin(): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  try {
    for await (const l of rl) if (l.trim() === 'GO') return true;
    return false;
  } finally {
    rl.close();
    process.stdin.pause();
  }
}

async function measure(host: string, port: number, durationMs: number, go?: () => Promise<boolean>): Promise<LinkSendReport> {
  const sock = connect({ host, port });
  sock.setNoDelay(true);
  const lines: string[] = [];
  let partial = '';
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  sock.setEncoding('utf8');
  sock.on('data', (c: string) => {
    partial += c;
    for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
      lines.push(partial.slice(0, nl));
      partial = partial.slice(nl + 1);
    }
    wake?.();
  });
  sock.on('error', (e) => {
    failure = e;
    wake?.();
  });
  sock.on('drain', () => wake?.());
  sock.on('close', () => {
    failure ??= new Error('connection closed');
    wake?.();
  });
  const nextLine = async (ms: number): Promise<string> => {
    const until = Date.now() + ms;
    while (!lines.length) {
      if (failure) throw failure;
      if (Date.now() > until) throw new Error(`no answer within ${ms} ms`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 200);
      });
    }
    return lines.shift()!;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(Object.assign(new Error(`no answer to a TCP connection within ${CONNECT_TIMEOUT_MS / 1000} s (dropped by a firewall?)`), { code: 'connect-timeout' })), CONNECT_TIMEOUT_MS);
      sock.once('connect', () => (clearTimeout(t), resolve()));
      sock.once('error', (e) => (clearTimeout(t), reject(e)));
    });
    const rtts: number[] = [];
    for (let i = 0; i < PINGS; i++) {
      const t0 = performance.now();
      sock.write('PING\n');
      await nextLine(5000);
      rtts.push(performance.now() - t0);
    }
    rtts.sort((a, b) => a - b);
    const rttMs = rtts[Math.floor(rtts.length / 2)]!;
    if (go) replyLine({ ready: true });
    if (durationMs === 0 || (go && !(await go()))) {
      sock.end('BYE\n');
      return { ok: true, rttMs };
    }
    sock.write('DATA\n');
    const block = Buffer.alloc(1 << 20, 0x5a);
    const stop = Date.now() + durationMs;
    while (Date.now() < stop && !failure) {
      if (!sock.write(block)) await new Promise<void>((r) => (wake = r));
    }
    sock.end();
    const answer = JSON.parse(await nextLine(60_000)) as { bytes: number; ms: number };
    return { ok: true, rttMs, bytes: answer.bytes, ms: answer.ms };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, error: { code: e.code === 'ECONNREFUSED' ? 'connect-refused' : e.code === 'connect-timeout' ? 'connect-timeout' : 'link-failed', message: e.message } };
  } finally {
    sock.destroy();
  }
}
