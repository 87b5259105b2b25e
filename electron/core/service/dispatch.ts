// The transport-neutral half of every Api transport (Electron IPC and `cohort serve`'s WebSocket):
// validate an incoming call, decode its arguments with API_ARGS, call the service, and turn any
// failure into ApiErrorInfo. Kept free of electron and ws so both transports share it and tests
// drive it directly.
//
// Wire shapes (the renderer's clients speak the same; see renderer/src/api/wire.ts):
//   call   {id, method, args}           reply  {id, result} | {id, error: ApiErrorInfo}
//   event  {event: 'onRunEvent' | 'onDeployProgress', payload}
import { API_ARGS, isApiMethod, toApiError, type ApiErrorInfo, type ApiMethod, type CohortApi } from '../../../trainer/protocol';

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

/** Validates and runs one method call. Never throws: failures come back as {error}. */
export async function dispatchCall(api: CohortApi, method: unknown, args: unknown): Promise<Envelope> {
  if (!isApiMethod(method)) {
    return { error: { code: 'unknown-method', message: `unknown method ${JSON.stringify(method)}`, hint: 'client and server versions may differ; reload the dashboard' } };
  }
  if (!Array.isArray(args)) return { error: { code: 'bad-argument', message: `args of ${method} must be an array` } };
  let decoded: unknown[];
  try {
    decoded = API_ARGS[method](args);
  } catch (err) {
    const e = toApiError(err);
    return { error: { ...e, code: 'bad-argument', message: `${method}: ${e.message}` } };
  }
  try {
    const fn = api[method] as (...a: unknown[]) => Promise<unknown>;
    const result = await fn.apply(api, decoded);
    return { result: result === undefined ? null : result };
  } catch (err) {
    return { error: toApiError(err) };
  }
}

export async function handleCallMessage(api: CohortApi, raw: unknown): Promise<ReplyMessage | null> {
  const d = decodeCallMessage(raw);
  if (!d.ok) return d.id === null ? null : { id: d.id, error: d.error };
  const r = await dispatchCall(api, d.call.method, d.call.args);
  return { id: d.call.id, ...r };
}

export type { ApiMethod };
