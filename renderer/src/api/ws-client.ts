// The Api over `cohort serve`'s WebSocket. Calls are matched to replies by id; pushes fan out to
// onXxx subscribers. A dropped connection fails every pending call (as ssh2 drains its callbacks)
// and reconnects with backoff, so the dashboard survives a server restart.
import { API_METHODS, ApiCallError, decodeIncoming, type ApiMethod, type CallId, type CallMessage, type CohortApi, type DeployProgress, type RunEventMessage } from '../../../electron/common';

export interface WsApi extends CohortApi {
  /** 'open' | 'connecting' | 'closed'; listeners hear every change. */
  onConnection(listener: (state: ConnectionState) => void): () => void;
  dispose(): void;
}
export type ConnectionState = 'connecting' | 'open' | 'closed';

export function createWsApi(url: string): WsApi {
  let ws: WebSocket | undefined;
  let nextId = 1;
  let disposed = false;
  let backoff = 250;
  let opened: Promise<WebSocket> | undefined;
  const pending = new Map<CallId, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const runListeners = new Set<(m: RunEventMessage) => void>();
  const deployListeners = new Set<(p: DeployProgress) => void>();
  const connListeners = new Set<(s: ConnectionState) => void>();
  const setState = (s: ConnectionState) => connListeners.forEach((l) => l(s));

  function connect(): Promise<WebSocket> {
    opened ??= new Promise<WebSocket>((resolve, reject) => {
      setState('connecting');
      const sock = new WebSocket(url);
      sock.onopen = () => {
        ws = sock;
        backoff = 250;
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
        if (!disposed) {
          setTimeout(() => void connect().catch(() => undefined), backoff);
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
      if (m.push.event === 'onRunEvent') runListeners.forEach((l) => l(m.push.payload as RunEventMessage));
      else deployListeners.forEach((l) => l(m.push.payload as DeployProgress));
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

  const methods = Object.fromEntries(API_METHODS.map((m) => [m, (...args: unknown[]) => call(m, args)])) as unknown as Omit<CohortApi, 'onRunEvent' | 'onDeployProgress'>;
  void connect().catch(() => undefined);
  return {
    ...methods,
    onRunEvent(l) {
      runListeners.add(l);
      return () => runListeners.delete(l);
    },
    onDeployProgress(l) {
      deployListeners.add(l);
      return () => deployListeners.delete(l);
    },
    onConnection(l) {
      connListeners.add(l);
      return () => connListeners.delete(l);
    },
    dispose() {
      disposed = true;
      ws?.close();
    },
  };
}

/** ws://host/ws?token=… for the page we were served from. */
export function wsUrlFromLocation(loc: Location): string {
  const token = new URLSearchParams(loc.search).get('token') ?? '';
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}/ws?token=${encodeURIComponent(token)}`;
}
