// The transport messages between the renderer's Api clients and core's dispatcher
// (electron/core/service/dispatch.ts speaks the same shapes):
//   call {id, method, args} → reply {id, result} | {id, error}; push {event, payload}.
import type { ApiErrorInfo, ApiEvent } from '../../../trainer/protocol';

export interface CallMessage {
  id: number;
  method: string;
  args: unknown[];
}

export type Reply = { id: number | null; result: unknown } | { id: number | null; error: ApiErrorInfo };
export interface Push {
  event: ApiEvent;
  payload: unknown;
}

export type Incoming = { kind: 'reply'; reply: Reply } | { kind: 'push'; push: Push } | { kind: 'invalid'; why: string };

/** Validates a message from the server before anything reads it. */
export function decodeIncoming(raw: unknown): Incoming {
  if (typeof raw !== 'object' || raw === null) return { kind: 'invalid', why: 'not an object' };
  const o = raw as Record<string, unknown>;
  if (o.event === 'onRunEvent' || o.event === 'onDeployProgress') return { kind: 'push', push: { event: o.event, payload: o.payload } };
  const id = typeof o.id === 'number' ? o.id : o.id === null ? null : undefined;
  if (id === undefined) return { kind: 'invalid', why: 'no id' };
  if ('error' in o) {
    const e = o.error as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null || typeof e.message !== 'string') return { kind: 'invalid', why: 'malformed error' };
    return {
      kind: 'reply',
      reply: { id, error: { code: typeof e.code === 'string' ? e.code : 'error', message: e.message, ...(typeof e.hint === 'string' ? { hint: e.hint } : {}) } },
    };
  }
  if ('result' in o) return { kind: 'reply', reply: { id, result: o.result } };
  return { kind: 'invalid', why: 'neither result nor error' };
}
