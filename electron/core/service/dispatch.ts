// The transport-neutral half of every Api transport (Electron IPC and `cohort serve`'s WebSocket):
// validate an incoming call, decode its arguments with API_ARGS, call the service, and turn any
// failure into ApiErrorInfo; the same for a subscription (dispatchListen, API_EVENT_ARGS). Kept free of electron and ws so both transports share it and tests
// drive it directly.
// The wire shapes are in electron/common/api-wire.ts.
import { DisposableStore, toDisposable, type Disposable } from '../../../trainer/protocol';
import { API_ARGS, API_EVENT_ARGS, decodeCallMessage, isApiEvent, isApiMethod, toApiError, type ApiErrorInfo, type ApiEvent, type ApiMethod, type CohortApi, type Envelope, type ListenRequest, type PushMessage, type ReplyMessage } from '../../common';

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

type AnySubscribe = (...argsThenListener: unknown[]) => () => void;

/**
 * The serving end of a subscription (IPC main, `cohort serve`): validates the event name and its
 * arguments, subscribes to `api`, and hands each payload to `push`. Never throws.
 */
export function dispatchListen(api: Pick<CohortApi, ApiEvent>, event: unknown, args: unknown, push: (payload: unknown) => void): { ok: true; dispose: () => void } | { ok: false; error: ApiErrorInfo } {
  if (!isApiEvent(event)) return { ok: false, error: { code: 'unknown-event', message: `unknown event ${JSON.stringify(event)}`, hint: 'client and server versions may differ; reload the dashboard' } };
  if (!Array.isArray(args)) return { ok: false, error: { code: 'bad-argument', message: `args of ${event} must be an array` } };
  let decoded: unknown[];
  try {
    decoded = API_EVENT_ARGS[event](args);
  } catch (err) {
    const e = toApiError(err);
    return { ok: false, error: { ...e, code: 'bad-argument', message: `${event}: ${e.message}` } };
  }
  const off = (api[event] as AnySubscribe).call(api, ...decoded, push);
  return { ok: true, dispose: off };
}

/** The most subscriptions one connection may hold (a dashboard needs a handful). */
export const MAX_LISTENS_PER_CONNECTION = 256;

/**
 * One connection's subscriptions on the serving side (a WebSocket, the Electron window): the
 * client's listen/unlisten requests by its own ids, each push sent as {listen, payload}; dispose()
 * (the connection closed) drops every subscription.
 */
export class ListenTable implements Disposable {
  private readonly subs = new Map<number, Disposable>();
  private readonly store = new DisposableStore();

  constructor(
    private readonly api: Pick<CohortApi, ApiEvent>,
    private readonly send: (msg: PushMessage | { listen: number; error: ApiErrorInfo }) => void,
  ) {}

  handle(req: ListenRequest): void {
    if (this.store.isDisposed) return;
    if ('unlisten' in req) {
      const sub = this.subs.get(req.unlisten);
      this.subs.delete(req.unlisten);
      if (sub) this.store.delete(sub);
      return;
    }
    const id = req.listen;
    const old = this.subs.get(id);
    if (old) this.store.delete(old);
    if (this.subs.size >= MAX_LISTENS_PER_CONNECTION) {
      this.send({ listen: id, error: { code: 'too-many-subscriptions', message: `at most ${MAX_LISTENS_PER_CONNECTION} subscriptions per connection`, hint: 'unsubscribe from runs no longer shown' } });
      return;
    }
    const r = dispatchListen(this.api, req.event, req.args, (payload) => this.send({ listen: id, payload }));
    if (!r.ok) {
      this.send({ listen: id, error: r.error });
      return;
    }
    const sub = this.store.add(toDisposable(r.dispose));
    this.subs.set(id, sub);
  }

  /** Drops every subscription (the page reloaded); the table stays usable. */
  clear(): void {
    this.subs.clear();
    this.store.clear();
  }

  /** Subscriptions held now (tests). */
  get size(): number {
    return this.subs.size;
  }

  dispose(): void {
    this.subs.clear();
    this.store.dispose();
  }
}

export type { ApiMethod };
