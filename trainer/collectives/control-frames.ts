// Control-plane framing: [u32 big-endian length][UTF-8 JSON]. Only small messages travel here
// (rendezvous, heartbeats, barrier, gather, failure notices); gradients never do.
import type { ErrorFields } from '../protocol/errors';
import { arr, obj, num, optNum, optStr, str, type Obj } from '../protocol/validate';
import { CollectiveError, type CollectiveErrorCode, type HangReport } from './errors';

export const PROTOCOL_NAME = 'cohort-collective';
/**
 * v2: ring segments start on multiples of 4 floats, and the sharded update exists (a v1 rank would split the buffer differently).
 * v3: ranks tell rank 0 their step phase (`ph`), which a hang report names.
 */
export const PROTOCOL_VERSION = 3;
const MAX_FRAME = 16 * 1024 * 1024;

export interface PeerInfo {
  rank: number;
  host: string;
  /** Data listener address and port. */
  addr: string;
  port: number;
  /** Same-machine fast path: a Unix socket path, and the machine it is valid on. */
  unix?: string;
  machine?: string;
}

export type ControlMessage =
  | ({ t: 'hello'; proto: string; v: number; worldSize: number } & PeerInfo)
  | { t: 'table'; peers: PeerInfo[] }
  /**
   * Rank 0 refuses a rank (or the rendezvous fails): the one error shape (ErrorFields, errors.ts),
   * flat beside `t` with `code` required; `host`/`rank`: the refused rank. A v3 rank before session 8
   * sent {t, message, code} and reads only those (rejectFrame, rejectedError).
   */
  | ({ t: 'reject'; code: string } & ErrorFields)
  | { t: 'ready' }
  | { t: 'go' }
  | { t: 'hb' }
  /** A rank (not 0) tells rank 0 the phase of the step it enters (`data`, `compute`, ...): what a hang report says it last did. */
  | { t: 'ph'; p: string; s: number }
  | { t: 'barrier'; seq: number }
  | { t: 'release'; seq: number }
  | { t: 'gather'; seq: number; root: number; value: unknown }
  | { t: 'gathered'; seq: number; values: unknown[] }
  /**
   * A peer is gone; `graceful` when it disposed without a pending failure. A hung peer's notice
   * carries the hang report and the rank that found it, so every rank reports the same story
   * (whichever rank's error reaches the client first names the hung rank, not itself).
   */
  | { t: 'lost'; rank: number; host: string; reason: string; graceful: boolean; hang?: HangReport; observedBy?: number }
  /** Sender is leaving; `lost` names the rank whose loss made it leave, if any. */
  | { t: 'bye'; lost?: { rank: number; host: string; reason: string } };

export function encodeControl(msg: ControlMessage): Buffer {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  return frame;
}

function peer(v: unknown, path: string): PeerInfo {
  const o = obj(v, path);
  const unix = optStr(o, 'unix', path);
  const machine = optStr(o, 'machine', path);
  return {
    rank: num(o, 'rank', path, { int: true, min: 0 }), host: str(o, 'host', path), addr: str(o, 'addr', path),
    port: num(o, 'port', path, { int: true, min: 1, max: 65535 }),
    ...(unix === undefined ? {} : { unix }), ...(machine === undefined ? {} : { machine }),
  };
}

function lostRef(o: Obj, path: string): { rank: number; host: string; reason: string } {
  return { rank: num(o, 'rank', path, { int: true, min: 0 }), host: str(o, 'host', path), reason: str(o, 'reason', path) };
}

function hangReport(o: Obj, path: string): HangReport {
  return {
    collective: str(o, 'collective', path),
    seq: num(o, 'seq', path, { int: true, min: 0 }),
    lastPhases: arr(o, 'lastPhases', path, (v, at) => {
      const ph = obj(v, at);
      const step = optNum(ph, 'step', at, { int: true, min: 0 });
      const ageMs = optNum(ph, 'ageMs', at, { min: 0 });
      return { rank: num(ph, 'rank', at, { int: true, min: 0 }), host: str(ph, 'host', at), phase: str(ph, 'phase', at), ...(step === undefined ? {} : { step }), ...(ageMs === undefined ? {} : { ageMs }) };
    }),
  };
}

export function decodeControl(value: unknown): ControlMessage {
  const o = obj(value, 'control');
  const t = str(o, 't', 'control');
  const p = `control(${t})`;
  const seq = (): number => num(o, 'seq', p, { int: true, min: 0 });
  switch (t) {
    case 'hello':
      return { t, proto: str(o, 'proto', p), v: num(o, 'v', p), worldSize: num(o, 'worldSize', p, { int: true, min: 1 }), ...peer(o, p) };
    case 'table': {
      if (!Array.isArray(o.peers)) throw new CollectiveError('protocol', `${p}.peers: expected an array`);
      return { t, peers: o.peers.map((v, i) => peer(v, `${p}.peers[${i}]`)) };
    }
    case 'reject': {
      const hint = optStr(o, 'hint', p);
      const host = optStr(o, 'host', p);
      const rank = optNum(o, 'rank', p, { int: true, min: 0 });
      return { t, code: str(o, 'code', p), message: str(o, 'message', p), ...(hint === undefined ? {} : { hint }), ...(host === undefined ? {} : { host }), ...(rank === undefined ? {} : { rank }) };
    }
    case 'ready':
    case 'go':
    case 'hb':
      return { t };
    case 'ph':
      return { t, p: str(o, 'p', p), s: num(o, 's', p, { int: true, min: 0 }) };
    case 'barrier':
    case 'release':
      return { t, seq: seq() };
    case 'gather':
      return { t, seq: seq(), root: num(o, 'root', p, { int: true, min: 0 }), value: o.value };
    case 'gathered':
      if (!Array.isArray(o.values)) throw new CollectiveError('protocol', `${p}.values: expected an array`);
      return { t, seq: seq(), values: o.values };
    case 'lost': {
      const observedBy = optNum(o, 'observedBy', p, { int: true, min: 0 });
      return { t, ...lostRef(o, p), graceful: o.graceful === true, ...(o.hang === undefined ? {} : { hang: hangReport(obj(o.hang, `${p}.hang`), `${p}.hang`) }), ...(observedBy === undefined ? {} : { observedBy }) };
    }
    case 'bye':
      return o.lost === undefined ? { t } : { t, lost: lostRef(obj(o.lost, `${p}.lost`), `${p}.lost`) };
    default:
      throw new CollectiveError('protocol', `unknown control message type ${JSON.stringify(t)}`);
  }
}

/** The refusal frame of a collective error: its message without the hint CollectiveError appends, and the hint apart. */
export function rejectFrame(err: CollectiveError, about?: { host: string; rank: number }): Extract<ControlMessage, { t: 'reject' }> {
  const hint = err.hint;
  const message = hint && err.message.endsWith(`; ${hint}`) ? err.message.slice(0, -(hint.length + 2)) : err.message;
  return { t: 'reject', code: err.code, message, ...(hint ? { hint } : {}), ...(about ?? {}) };
}

/** The error a refused rank throws: the refusal's code (an unknown one reads as 'protocol'), message and hint. */
export function rejectedError(m: Extract<ControlMessage, { t: 'reject' }>): CollectiveError {
  const code: CollectiveErrorCode = m.code === 'rendezvous-mismatch' ? 'rendezvous-mismatch' : 'protocol';
  return new CollectiveError(code, m.message, m.hint ? { hint: m.hint } : {});
}

/** Splits a byte stream into decoded control messages. */
export class ControlReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): ControlMessage[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: ControlMessage[] = [];
    while (this.pending.length >= 4) {
      const len = this.pending.readUInt32BE(0);
      if (len > MAX_FRAME) throw new CollectiveError('protocol', `control frame of ${len} bytes exceeds ${MAX_FRAME}; the peer is not a Cohort rank of the same version`);
      if (this.pending.length < 4 + len) break;
      const text = this.pending.subarray(4, 4 + len).toString('utf8');
      this.pending = this.pending.subarray(4 + len);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (cause) {
        throw new CollectiveError('protocol', 'control frame is not JSON; the peer is not a Cohort rank', { cause });
      }
      out.push(decodeControl(parsed));
    }
    return out;
  }
}
