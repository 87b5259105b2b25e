// The Api over `cohort serve`'s WebSocket. Calls are matched to replies by id; each onXxx call is
// one subscription on the server (onRunEvent: that run's events only), its pushes matched by id. A
// dropped connection fails every pending call (as ssh2 drains its callbacks) and reconnects with
// backoff, asking again for every live subscription, so the dashboard survives a server restart.
import { DisposableStore, Emitter, toDisposable, type Disposable } from '../../../trainer/protocol';
import { API_METHODS, ApiCallError, ApiListeners, decodeIncoming, type ApiEvent, type ApiMethod, type CallId, type CallMessage, type CohortApi } from '../../../electron/common';

export interface WsApi extends CohortApi, Disposable {
  /** 'open' | 'connecting' | 'closed'; listeners hear every change. */
  onConnection(listener: (state: ConnectionState) => void): () => void;
  /** Closes the socket and stops reconnecting. Idempotent. */
  dispose(): void;
}
export type ConnectionState = 'connecting' | 'open' | 'closed';

export function createWsApi(url: string): WsApi {
  let ws: WebSocket | undefined;
  let nextId = 1;
  let backoff = 250;
  let opened: Promise<WebSocket> | undefined;
  const pending = new Map<CallId, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  const life = new DisposableStore();
  // Subscriptions made while disconnected are asked for once the socket opens (resubscribe).
  const events = life.add(new ApiListeners((req) => ws?.send(JSON.stringify(req))));
  const connection = life.add(new Emitter<ConnectionState>());
  life.add(
    toDisposable(() => {
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      ws?.close();
    }),
  );
  const setState = (s: ConnectionState) => connection.fire(s);

  function connect(): Promise<WebSocket> {
    opened ??= new Promise<WebSocket>((resolve, reject) => {
      setState('connecting');
      const sock = new WebSocket(url);
      sock.onopen = () => {
        ws = sock;
        backoff = 250;
        events.resubscribe();
        setState('open');
        resolve(sock);
      };
      sock.onmessage = (ev) => onMessage(ev.data);
      sock.onclose = () => {
        const wasOpen = ws === sock;
        ws = undefined;
        opened = undefined;
        for (const p of pending.values()) p.reject(new ApiCallError({ code: 'disconnected', message: 'the connection to cohort serve was lost', hint: 'check that `cohort serve` is still running, then retry' }));
        pending.clear();
        setState('closed');
        if (!wasOpen) reject(new ApiCallError({ code: 'disconnected', message: `cannot connect to ${url.replace(/token=[^&]+/, 'token=…')}`, hint: 'is `cohort serve` running? Open the URL it printed.' }));
        if (!life.isDisposed) {
          reconnectTimer = setTimeout(() => {
            reconnectTimer = undefined;
            if (!life.isDisposed) void connect().catch(() => undefined);
          }, backoff);
          backoff = Math.min(backoff * 2, 5000);
        }
      };
    });
    return opened;
  }

  function onMessage(data: unknown): void {
    let raw: unknown;
    try {
      raw = JSON.parse(String(data));
    } catch {
      return;
    }
    const m = decodeIncoming(raw);
    if (m.kind === 'push') {
      events.deliver(m.push.listen, m.push.payload);
    } else if (m.kind === 'refused') {
      events.refused(m.listen);
    } else if (m.kind === 'reply' && m.reply.id !== null) {
      const p = pending.get(m.reply.id);
      if (!p) return;
      pending.delete(m.reply.id);
      if ('error' in m.reply) p.reject(new ApiCallError(m.reply.error));
      else p.resolve(m.reply.result);
    }
  }

  async function call(method: ApiMethod, args: unknown[]): Promise<unknown> {
    const sock = ws ?? (await connect());
    const id = nextId++;
    // JSON turns a trailing `undefined` argument into null, which decoders rightly refuse.
    let n = args.length;
    while (n > 0 && args[n - 1] === undefined) n--;
    const msg: CallMessage = { id, method, args: args.slice(0, n) };
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      sock.send(JSON.stringify(msg));
    });
  }

  const methods = Object.fromEntries(API_METHODS.map((m) => [m, (...args: unknown[]) => call(m, args)])) as unknown as Omit<CohortApi, ApiEvent>;
  void connect().catch(() => undefined);
  return {
    ...methods,
    ...events.members,
    onConnection: connection.event,
    dispose: () => life.dispose(),
  };
}

/** ws://host/ws?token=… for the page we were served from. */
export function wsUrlFromLocation(loc: Location): string {
  const token = new URLSearchParams(loc.search).get('token') ?? '';
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}/ws?token=${encodeURIComponent(token)}`;
}
