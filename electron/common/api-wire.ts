// The Api's wire messages, shared by every transport (Electron IPC, `cohort serve`'s WebSocket)
// and both ends (core's dispatcher decodes calls, the renderer's clients decode replies/pushes):
//   call     {id, method, args}           reply  {id, result} | {id, error: ApiErrorInfo}
//   listen   {listen: n, event, args}     push   {listen: n, payload}   (refused: {listen: n, error})
//   unlisten {unlisten: n}
// A client subscribes to what it shows (onRunEvent takes a run id), so the server pushes each
// connection only the events of the runs it follows, never every run's to be filtered.
import { DisposableStore, type Disposable } from '../../trainer/protocol';
import { API_EVENTS, type ApiErrorInfo, type ApiEvent, type CohortApi } from './api';

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

/** A push for the client's subscription `listen`. */
export interface PushMessage {
  listen: number;
  payload: unknown;
}

export type Reply = { id: CallId | null; result: unknown } | { id: CallId | null; error: ApiErrorInfo };

export type Incoming = { kind: 'reply'; reply: Reply } | { kind: 'push'; push: PushMessage } | { kind: 'refused'; listen: number; error: ApiErrorInfo } | { kind: 'invalid'; why: string };

/** Validates a message from the server before anything reads it. */
export function decodeIncoming(raw: unknown): Incoming {
  if (typeof raw !== 'object' || raw === null) return { kind: 'invalid', why: 'not an object' };
  const o = raw as Record<string, unknown>;
  if (isListenId(o.listen)) {
    if ('error' in o) return { kind: 'refused', listen: o.listen, error: decodeErrorInfo(o.error) ?? { code: 'error', message: 'subscription refused' } };
    return { kind: 'push', push: { listen: o.listen, payload: o.payload } };
  }
  const id = typeof o.id === 'number' || typeof o.id === 'string' ? o.id : o.id === null ? null : undefined;
  if (id === undefined) return { kind: 'invalid', why: 'no id' };
  if ('error' in o) {
    const error = decodeErrorInfo(o.error);
    return error ? { kind: 'reply', reply: { id, error } } : { kind: 'invalid', why: 'malformed error' };
  }
  if ('result' in o) return { kind: 'reply', reply: { id, result: o.result } };
  return { kind: 'invalid', why: 'neither result nor error' };
}

function decodeErrorInfo(raw: unknown): ApiErrorInfo | undefined {
  const e = raw as Record<string, unknown> | null;
  if (typeof e !== 'object' || e === null || typeof e.message !== 'string') return undefined;
  return { ...(typeof e.name === 'string' && e.name ? { name: e.name } : {}), code: typeof e.code === 'string' ? e.code : 'error', message: e.message, ...(typeof e.hint === 'string' ? { hint: e.hint } : {}), ...(typeof e.host === 'string' && e.host ? { host: e.host } : {}), ...(typeof e.runId === 'string' && e.runId ? { runId: e.runId } : {}) };
}

const isListenId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** Checks a client's listen/unlisten request (the server decodes the event's own args after). */
export function decodeListenRequest(raw: unknown): ListenRequest | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  if (isListenId(o.unlisten)) return { unlisten: o.unlisten };
  if (!isListenId(o.listen)) return undefined;
  // An unknown event or bad args still decode here: the server refuses them by id, with a reason.
  return { listen: o.listen, event: o.event as ApiEvent, args: Array.isArray(o.args) ? o.args : [] };
}

/** True when a client message is a listen/unlisten request rather than a call. */
export function isListenRequest(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && ('listen' in raw || 'unlisten' in raw);
}

/** Electron IPC's channels: calls over `call` (invoke), subscriptions over `listen` (send), pushes over `event`. */
export const IPC_CHANNELS = { call: 'cohort:call', listen: 'cohort:listen', event: 'cohort:event' } as const;


/** What a client asks its server for: start (`listen`) or stop (`unlisten`) one subscription. */
export type ListenRequest = { listen: number; event: ApiEvent; args: unknown[] } | { unlisten: number };

/**
 * The client end of subscriptions (the WebSocket client, the preload): each onXxx call becomes one
 * numbered subscription on the server (`send` carries the request), whose pushes come back through
 * `deliver`. After a reconnect, `resubscribe` asks again for every live subscription.
 */
export class ApiListeners implements Disposable {
  private readonly subs = new Map<number, { event: ApiEvent; args: unknown[]; listener: (payload: unknown) => void }>();
  private nextId = 1;
  private readonly life = new DisposableStore();
  /** The onXxx members, ready to spread into a CohortApi. */
  readonly members: Pick<CohortApi, ApiEvent>;

  constructor(private readonly send: (req: ListenRequest) => void) {
    this.members = Object.fromEntries(API_EVENTS.map((event) => [event, (...argsThenListener: unknown[]) => this.listen(event, argsThenListener)])) as unknown as Pick<CohortApi, ApiEvent>;
  }

  private listen(event: ApiEvent, argsThenListener: unknown[]): () => void {
    const listener = argsThenListener[argsThenListener.length - 1];
    if (typeof listener !== 'function') throw new TypeError(`${event} needs a listener function`);
    if (this.life.isDisposed) return () => undefined;
    const id = this.nextId++;
    const args = argsThenListener.slice(0, -1);
    this.subs.set(id, { event, args, listener: listener as (p: unknown) => void });
    this.send({ listen: id, event, args });
    return () => {
      if (this.subs.delete(id) && !this.life.isDisposed) this.send({ unlisten: id });
    };
  }

  /** A push for subscription `id` (unknown ids: a late push after unsubscribing, dropped). */
  deliver(id: number, payload: unknown): void {
    const s = this.subs.get(id);
    if (!s) return;
    try {
      s.listener(payload);
    } catch {
      // One broken subscriber must not stop the transport.
    }
  }

  /** The server refused subscription `id` (bad arguments): it is dropped. */
  refused(id: number): void {
    this.subs.delete(id);
  }

  /** Asks the server again for every live subscription (a new connection has none). */
  resubscribe(): void {
    for (const [id, s] of this.subs) this.send({ listen: id, event: s.event, args: s.args });
  }

  /** Live subscriptions (tests). */
  get size(): number {
    return this.subs.size;
  }

  dispose(): void {
    this.life.dispose();
    this.subs.clear();
  }
}
