// The transport-neutral half of every Api transport (Electron IPC and `cohort serve`'s WebSocket):
// validate an incoming call, decode its arguments with API_ARGS, call the service, and turn any
// failure into ApiErrorInfo. Kept free of electron and ws so both transports share it and tests
// drive it directly.
// The wire shapes are in electron/common/api-wire.ts.
import { API_ARGS, decodeCallMessage, isApiMethod, toApiError, type ApiMethod, type CohortApi, type Envelope, type ReplyMessage } from '../../common';

export { decodeCallMessage, type CallMessage, type CallId, type Envelope, type ReplyMessage } from '../../common';

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
