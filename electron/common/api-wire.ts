// The Api's wire messages, shared by every transport (Electron IPC, `cohort serve`'s WebSocket)
// and both ends (core's dispatcher decodes calls, the renderer's clients decode replies/pushes):
//   call   {id, method, args}           reply  {id, result} | {id, error: ApiErrorInfo}
//   push   {event: 'onRunEvent' | 'onDeployProgress', payload}
import { API_EVENTS, type ApiErrorInfo, type ApiEvent } from './api';

export type CallId = number | string;
export interface CallMessage {
  id: CallId;
  method: string;
  args: unknown[];
}
export type ReplyMessage = { id: CallId; result: unknown } | { id: CallId; error: ApiErrorInfo };
export type Envelope = { result: unknown } | { error: ApiErrorInfo };

/** Checks the outer shape of a call. Returns an error (with the id when one was readable) otherwise. */
export function decodeCallMessage(raw: unknown): { ok: true; call: CallMessage } | { ok: false; id: CallId | null; error: ApiErrorInfo } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, id: null, error: { code: 'bad-message', message: 'expected a JSON object {id, method, args}' } };
  }
  const o = raw as Record<string, unknown>;
  const id = typeof o.id === 'number' || typeof o.id === 'string' ? o.id : null;
  if (id === null) return { ok: false, id: null, error: { code: 'bad-message', message: 'the call has no id (a number or string)' } };
  if (typeof o.method !== 'string') return { ok: false, id, error: { code: 'bad-message', message: 'the call has no method name' } };
  const args = o.args === undefined ? [] : o.args;
  if (!Array.isArray(args)) return { ok: false, id, error: { code: 'bad-message', message: `args of ${o.method} must be an array` } };
  return { ok: true, call: { id, method: o.method, args } };
}

export interface PushMessage {
  event: ApiEvent;
  payload: unknown;
}

export type Reply = { id: CallId | null; result: unknown } | { id: CallId | null; error: ApiErrorInfo };

export type Incoming = { kind: 'reply'; reply: Reply } | { kind: 'push'; push: PushMessage } | { kind: 'invalid'; why: string };

/** Validates a message from the server before anything reads it. */
export function decodeIncoming(raw: unknown): Incoming {
  if (typeof raw !== 'object' || raw === null) return { kind: 'invalid', why: 'not an object' };
  const o = raw as Record<string, unknown>;
  if ((API_EVENTS as readonly unknown[]).includes(o.event)) return { kind: 'push', push: { event: o.event as ApiEvent, payload: o.payload } };
  const id = typeof o.id === 'number' || typeof o.id === 'string' ? o.id : o.id === null ? null : undefined;
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
