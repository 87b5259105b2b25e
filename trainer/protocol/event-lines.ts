// Decoding the event protocol: one parsed event (decodeEvent) and a JSON-lines stream
// (EventLineDecoder), with unknown types from a newer trainer counted, not fatal.
import { CohortError } from './errors';
import { DecodeError, num, obj, str } from './validate';
import { EVENT_TYPES, PROTOCOL_VERSION, type CohortEvent, type EventType } from './event-types';
import { decoders } from './event-decoders';

export function isEventType(t: unknown): t is EventType {
  return typeof t === 'string' && (EVENT_TYPES as readonly string[]).includes(t);
}

export class UnknownEventType extends CohortError {
  constructor(readonly eventType: string) {
    super('unknown-event-type', `unknown event type ${JSON.stringify(eventType)}`, { fatal: false });
    this.name = 'UnknownEventType';
  }
}

/** Validates one parsed event object. Throws DecodeError (bad field) or UnknownEventType. */
export function decodeEvent(value: unknown): CohortEvent {
  const o = obj(value, '');
  const type = str(o, 'type', '');
  const v = num(o, 'v', '', { int: true, min: 1 });
  if (v > PROTOCOL_VERSION) throw new DecodeError('v', `protocol version ${v} is newer than this reader (${PROTOCOL_VERSION}); update Cohort`);
  const time = num(o, 'time', '', { min: 0 });
  if (!isEventType(type)) throw new UnknownEventType(type);
  const payload = decoders[type](o);
  return { ...payload, v, time } as CohortEvent;
}

export type LineResult =
  | { kind: 'event'; event: CohortEvent }
  | { kind: 'unknown'; eventType: string }
  | { kind: 'invalid'; line: number; error: string; text: string };

/**
 * Decodes a JSON-lines event stream line by line. A bad line is reported with its line
 * number; unknown event types (from a newer trainer) are counted, not fatal.
 */
export class EventLineDecoder {
  private lineNo = 0;
  private pending = '';
  unknownCount = 0;
  invalidCount = 0;

  /** Feeds a chunk of text; returns results for every complete line in it. */
  push(chunk: string): LineResult[] {
    this.pending += chunk;
    const out: LineResult[] = [];
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      const r = this.decodeLine(line);
      if (r) out.push(r);
    }
    return out;
  }

  /** Decodes whatever remains after the stream ended. */
  end(): LineResult[] {
    const rest = this.pending;
    this.pending = '';
    const r = rest ? this.decodeLine(rest) : undefined;
    return r ? [r] : [];
  }

  decodeLine(line: string): LineResult | undefined {
    this.lineNo++;
    const text = line.trim();
    if (!text) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.invalidCount++;
      return { kind: 'invalid', line: this.lineNo, error: 'not JSON', text };
    }
    try {
      return { kind: 'event', event: decodeEvent(parsed) };
    } catch (err) {
      if (err instanceof UnknownEventType) {
        this.unknownCount++;
        return { kind: 'unknown', eventType: err.eventType };
      }
      this.invalidCount++;
      return { kind: 'invalid', line: this.lineNo, error: (err as Error).message, text };
    }
  }
}
