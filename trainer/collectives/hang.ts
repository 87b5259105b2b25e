// Hang location (issue 21 item 4): a peer whose control connection stays open but which sends
// nothing (no heartbeat, no phase note) is not gone but hung: stopped, deadlocked, swapped out.
// It is named by the rank that watches it (rank 0 watches every rank; the others watch rank 0),
// with the op the watcher waits in, its sequence number and every rank's last phase.
import { DEFAULT_TIMINGS } from '../protocol/timings';
import type { ControlChannel } from './control-channel';
import type { HangReport } from './errors';

/**
 * When a silent peer counts as hung: after `factor` × the longest silence seen on its control
 * connection so far (a rank inside a long synchronous step cannot send heartbeats, and its gaps
 * show how long its steps are), at least the floor, at most the collective's peerTimeoutMs. The
 * floor's production value is `floorMs`; a rank reads COHORT_HANG_FLOOR_MS (Timings.hangFloorMs).
 */
export const HANG = { factor: 3, floorMs: DEFAULT_TIMINGS.hangFloorMs } as const;

/** What bounds a silent peer's hang limit: the collective's peer timeout and the floor. */
export interface HangBounds {
  peerTimeoutMs: number;
  floorMs: number;
}

export function hangLimitMs(maxGapMs: number, peerTimeoutMs: number, floorMs: number = HANG.floorMs): number {
  return Math.min(peerTimeoutMs, Math.max(floorMs, HANG.factor * maxGapMs));
}

/** What a rank last said it was doing, and when (ms since the epoch, on the watcher). */
export interface PhaseNote {
  phase: string;
  step: number;
  at: number;
}

export interface HangView {
  observer: number;
  peers: { rank: number; host: string }[];
  phases: ReadonlyMap<number, PhaseNote>;
  current: { what: string; seq: number } | undefined;
  opSeq: number;
}

/** What a rank knows for a hang report: the op in flight (index among its ops: the same on every rank) and the ranks' last phases (its own; rank 0 also every other rank's, as they told it). */
export class Progress {
  private readonly phases = new Map<number, PhaseNote>();
  private current: { what: string; seq: number } | undefined;
  private opSeq = 0;

  note(rank: number, phase: string, step: number): void {
    this.phases.set(rank, { phase, step, at: Date.now() });
  }

  begin(what: string): void {
    this.current = { what, seq: this.opSeq++ };
  }

  end(): void {
    this.current = undefined;
  }

  describe(observer: number, peers: { rank: number; host: string }[], rank: number, silentMs: number, limitMs: number, floorMs: number = HANG.floorMs): { reason: string; hang: HangReport } {
    return describeHang({ observer, peers, phases: this.phases, current: this.current, opSeq: this.opSeq }, rank, silentMs, limitMs, Date.now(), floorMs);
  }
}

/** The report and the sentence for rank `rank`, silent `silentMs` past its limit `limitMs`. */
export function describeHang(v: HangView, rank: number, silentMs: number, limitMs: number, now = Date.now(), floorMs: number = HANG.floorMs): { reason: string; hang: HangReport } {
  const lastPhases = v.peers.flatMap((p) => {
    const ph = v.phases.get(p.rank);
    return ph ? [{ rank: p.rank, host: p.host, phase: ph.phase, step: ph.step, ageMs: now - ph.at }] : [];
  });
  const op = v.current;
  const hang: HangReport = { collective: op?.what ?? 'none (between operations)', seq: op?.seq ?? v.opSeq, lastPhases };
  const last = v.phases.get(rank);
  const waits = op ? `rank ${v.observer} waits in ${op.what} #${op.seq}` : `rank ${v.observer} is between operations`;
  const reason =
    `silent for ${(silentMs / 1000).toFixed(1)} s (its limit ${(limitMs / 1000).toFixed(1)} s: ${HANG.factor}× its longest silence so far, at least ${floorMs / 1000} s, at most the peer timeout) ` +
    `while ${waits}; its last phase: ${last ? `${last.phase} of step ${last.step}` : 'unknown'}`;
  return { reason, hang };
}

/**
 * The control connections' heartbeat: every interval each connection gets a `hb`, and a peer silent
 * past its hang limit is reported (`onSilent`) unless `ignore(k)` (it left, or the collective failed).
 */
export function heartbeat(control: Map<number, ControlChannel>, bounds: HangBounds, ignore: (k: number) => boolean, onSilent: (k: number, silentMs: number, limitMs: number) => void): NodeJS.Timeout {
  const { peerTimeoutMs, floorMs } = bounds;
  const interval = Math.max(50, Math.min(1000, peerTimeoutMs / 4));
  let lastTick = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    // A late tick means *our* loop was blocked (a long synchronous step); peers' bytes are
    // still unread in the kernel, so their silence proves nothing yet.
    const blocked = now - lastTick > interval * 2.5;
    lastTick = now;
    for (const [k, ch] of control) {
      ch.send({ t: 'hb' });
      const limit = hangLimitMs(ch.maxGapMs, peerTimeoutMs, floorMs);
      if (blocked || ignore(k)) ch.lastRecv = now;
      else if (now - ch.lastRecv > limit) onSilent(k, now - ch.lastRecv, limit);
    }
  }, interval);
  timer.unref();
  return timer;
}
