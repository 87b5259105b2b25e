// The control channel between the agents of one run: JSON lines over TCP, followers connect to the
// leader (the host of rank 0) and authenticate with the run's token. Both ends send a beat every
// second; silence for the timeout or a closed socket means the other agent is gone.
import { timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { DisposableBase, decodeEvent, decodeHostCounters, isFinished, toDisposable, type ErrorEvent, type HostCounters } from '../protocol';

export type ControlMsg =
  /** follower → leader; `key`: the follower's place in the global claim order (claim-order.ts). */
  | { t: 'hello'; token: string; host: string; ranks: number; key?: string }
  /** leader → follower: claim this host's slots now (its turn in the claim order), then answer `ready`. */
  | { t: 'claim' }
  | { t: 'queued'; behind: string }
  | { t: 'ready' }
  /** Both ways every second; a follower's carries its host's counters for the system metrics (protocol/system.ts). */
  | { t: 'beat'; sys?: HostCounters }
  /** follower → leader: an error event of one of its ranks (or its own), for the leader's record. */
  | { t: 'error'; event: ErrorEvent }
  /** follower → leader: all its ranks of `attempt` have exited. */
  | { t: 'exited'; attempt: number; ok: boolean }
  /** leader → follower: start the ranks (again, from the last checkpoint when `resume`). */
  | { t: 'go'; attempt: number; resume: boolean }
  /** leader → follower: stop the ranks of `attempt` for a restart, then answer `exited`. */
  | { t: 'halt'; attempt: number }
  /** leader → follower: rank 0 saved a checkpoint at `step` (a follower that loses its leader names the step the run resumes from). */
  | { t: 'checkpoint'; step: number }
  /** leader → follower: your rank `rank` hung (a peer on another host said so): ask it for its stack (issue 21 item 4). */
  | { t: 'stack'; rank: number }
  /** leader → follower: the run is over (stop the ranks if any still run). */
  | { t: 'end'; state: 'ok' | 'failed' | 'cancelled'; reason: string };

const MAX_LINE = 1 << 20;
export const BEAT_MS = 1000;

function decodeControl(line: string): ControlMsg | undefined {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const m = o as Record<string, unknown>;
  const n = (k: string) => (typeof m[k] === 'number' ? (m[k] as number) : NaN);
  const s = (k: string) => (typeof m[k] === 'string' ? (m[k] as string) : '');
  switch (m.t) {
    case 'hello':
      return { t: 'hello', token: s('token'), host: s('host'), ranks: n('ranks'), ...(typeof m.key === 'string' ? { key: m.key } : {}) };
    case 'queued':
      return { t: 'queued', behind: s('behind') };
    case 'claim':
    case 'ready':
      return { t: m.t };
    case 'beat': {
      const sys = decodeHostCounters(m.sys);
      return sys ? { t: 'beat', sys } : { t: 'beat' };
    }
    case 'error': {
      try {
        const e = decodeEvent(m.event);
        return e.type === 'error' ? { t: 'error', event: e } : undefined;
      } catch {
        return undefined;
      }
    }
    case 'exited':
      return { t: 'exited', attempt: n('attempt'), ok: m.ok === true };
    case 'go':
      return { t: 'go', attempt: n('attempt'), resume: m.resume === true };
    case 'halt':
      return { t: 'halt', attempt: n('attempt') };
    case 'checkpoint':
      return { t: 'checkpoint', step: n('step') };
    case 'stack':
      return { t: 'stack', rank: n('rank') };
    case 'end': {
      const st = s('state');
      return isFinished(st) ? { t: 'end', state: st, reason: s('reason') } : undefined;
    }
    default:
      return undefined;
  }
}

export function tokenMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** One end of the channel. `onClose` fires once, with why (closed, silent, bad message). */
export class ControlLink extends DisposableBase {
  private lastHeard = Date.now();
  private onMsg: (m: ControlMsg) => void = () => {};
  private onEnd: (why: string) => void = () => {};
  /** What this end's beats carry (a follower: its host's counters). */
  beatCounters: (() => HostCounters | undefined) | undefined;
  /** The other end's counters from its latest beat. */
  peerCounters: HostCounters | undefined;

  constructor(
    private readonly sock: Socket,
    timeoutMs: number,
  ) {
    super();
    sock.setNoDelay(true);
    const lines = createInterface({ input: sock, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (line.length > MAX_LINE) return this.close('sent an oversized control message');
      const m = decodeControl(line);
      if (!m) return this.close('sent a malformed control message');
      this.lastHeard = Date.now();
      if (m.t !== 'beat') this.onMsg(m);
      else if (m.sys) this.peerCounters = m.sys;
    });
    sock.on('error', () => {}); // 'close' follows
    // readline re-emits its input's errors: without this a peer's reset (ECONNRESET, e.g. a follower that
    // exits with our beats unread) was an unhandled 'error' that killed this agent.
    lines.on('error', () => {});
    sock.on('close', () => this.close('connection closed'));
    const beat = setInterval(() => {
      const sys = this.beatCounters?.();
      this.send(sys ? { t: 'beat', sys } : { t: 'beat' });
    }, BEAT_MS);
    const watch = setInterval(() => {
      if (Date.now() - this.lastHeard > timeoutMs) this.close(`no heartbeat for ${Math.round(timeoutMs / 1000)} s`);
    }, Math.min(1000, timeoutMs));
    this.register(toDisposable(() => (clearInterval(beat), clearInterval(watch))));
  }

  on(onMsg: (m: ControlMsg) => void, onClose: (why: string) => void): void {
    this.onMsg = onMsg;
    this.onEnd = onClose;
  }

  send(m: ControlMsg): void {
    if (!this.isDisposed && this.sock.writable) this.sock.write(JSON.stringify(m) + '\n');
  }

  /** Resolves once everything sent so far is handed to the kernel (or the socket is gone): an agent about to exit waits for it. */
  flushed(): Promise<void> {
    return new Promise((resolve) => {
      if (this.isDisposed || !this.sock.writable) return resolve();
      this.sock.write('', () => resolve());
    });
  }

  get isClosed(): boolean {
    return this.isDisposed;
  }

  /** How long since the other agent last sent anything (it beats every BEAT_MS). */
  get silentForMs(): number {
    return Date.now() - this.lastHeard;
  }

  override dispose(): void {
    this.close();
  }

  /** Closes the link (idempotent); `onClose` hears why once. */
  close(why = 'closed'): void {
    if (this.isDisposed) return;
    super.dispose(); // the beat and the silence watch
    this.sock.end();
    this.sock.destroySoon?.();
    setTimeout(() => this.sock.destroy(), 200).unref();
    this.onEnd(why);
  }
}
