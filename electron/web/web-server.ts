// `cohort serve`: the dashboard over HTTP + WebSocket on one port. Loopback by default, and every
// request (page, assets, WebSocket upgrade) must be authorised, else 401. The WebSocket (the Api:
// the only thing that can act) takes the per-launch token from its URL (`?token=`) and nothing
// else. The token never goes into a cookie: browsers send a host's cookies to every port on it
// (RFC 6265 §8.5), so any other server on 127.0.0.1 would receive it. The cookie the page response
// sets instead carries a separate asset key that only fetches the static bundle, and its name
// holds the port, so two dashboards on one host never overwrite each other's cookie.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';
import type { WebSocket, WebSocketServer } from 'ws';
import { CohortError, DisposableStore, type Disposable } from '../../trainer/protocol';
import { CSP, decodeListenRequest, isListenRequest, type CohortApi } from '../common';
import { loadWs } from '../core/lazy-packages';
import { ListenTable, handleCallMessage } from '../core/service/dispatch';

export interface WebServerOptions {
  api: CohortApi;
  /** The built renderer (Vite output with index.html). */
  staticDir: string;
  host?: string;
  port?: number;
  /** Fixed token (tests); default: 32 random bytes, hex. */
  token?: string;
  /** Work bounds (defaults: WEB_LIMITS). */
  limits?: Partial<WebLimits>;
}

/**
 * What one dashboard server will hold at once. A connection's calls run at most `perConnection`
 * at a time and `overall` across connections; further messages wait in the connection's queue,
 * and when that queue passes `queuedPerConnection` the server stops reading the socket (TCP
 * backpressure on the sender) until it drains. Worst case held: overall × maxMessageBytes of
 * arguments plus, per connection, the queue and one socket read's worth of messages.
 */
export interface WebLimits {
  perConnection: number;
  overall: number;
  queuedPerConnection: number;
  /** Largest WebSocket message accepted (a larger one closes the socket with 1009). */
  maxMessageBytes: number;
  /** Replies not yet written to a slow reader; past this no new call starts on that connection. */
  maxBufferedReplyBytes: number;
}

export const WEB_LIMITS: WebLimits = { perConnection: 16, overall: 64, queuedPerConnection: 256, maxMessageBytes: 1024 * 1024, maxBufferedReplyBytes: 8 * 1024 * 1024 };

/** The asset cookie's name for a server on `port` (one per port: dashboards do not overwrite each other). */
export function assetCookieName(port: number): string {
  return `cohort_assets_${port}`;
}
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export class WebServer implements Disposable {
  readonly token: string;
  /** Authorises static files only (page and bundle), never the Api; what the cookie carries. */
  private readonly assetKey = randomBytes(32).toString('hex');
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private readonly sockets = new Set<WebSocket>();
  private disposed: Promise<void> | undefined;
  private bound: AddressInfo | undefined;
  private readonly limits: WebLimits;
  /** Calls running now, all connections together. */
  private inFlight = 0;
  /** Connections with queued calls waiting for an overall slot. */
  private readonly waiting = new Set<() => void>();

  constructor(private readonly opts: WebServerOptions) {
    this.token = opts.token ?? randomBytes(32).toString('hex');
    this.limits = { ...WEB_LIMITS, ...opts.limits };
    this.http = createServer((req, res) => {
      // Nothing a request carries may take the server (and every run it holds) down.
      this.onRequest(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(`500: ${err instanceof Error ? err.message : String(err)}\n`);
      });
    });
    this.wss = new (loadWs().WebSocketServer)({ noServer: true, maxPayload: this.limits.maxMessageBytes });
    this.http.on('upgrade', (req, socket, head) => {
      const url = parseRequestUrl(req.url);
      if (!url || url.pathname !== '/ws' || !this.tokenOk(url.searchParams.get('token')) || !this.sameOrigin(req)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws));
    });
  }

  async listen(opts: { signal?: AbortSignal } = {}): Promise<void> {
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(opts.signal?.reason ?? new Error('aborted'));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.http.once('error', (err: NodeJS.ErrnoException) => {
        reject(
          new CohortError(err.code === 'EADDRINUSE' ? 'port-in-use' : 'listen-failed', `cannot listen on ${host}:${this.opts.port ?? 0}: ${err.message}${err.code === 'EADDRINUSE' ? ' (the port is taken; choose another with --port)' : ''}`, { cause: err }),
        );
      });
      this.http.listen(this.opts.port ?? 0, host, () => {
        opts.signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
    this.bound = this.http.address() as AddressInfo;
  }

  get port(): number {
    if (!this.bound) throw new Error('the server is not listening yet');
    return this.bound.port;
  }

  /** The URL to open (contains the token). */
  get url(): string {
    const host = this.opts.host ?? '127.0.0.1';
    const h = host.includes(':') ? `[${host}]` : host;
    return `http://${h}:${this.port}/?token=${this.token}`;
  }

  /** Closes every WebSocket and the listener. Idempotent. */
  dispose(): Promise<void> {
    this.disposed ??= new Promise<void>((resolve) => {
      for (const ws of this.sockets) ws.terminate();
      this.sockets.clear();
      this.wss.close();
      this.http.closeAllConnections();
      this.http.close(() => resolve());
    });
    return this.disposed;
  }

  private tokenOk(candidate: string | undefined | null): boolean {
    return secretEquals(candidate, this.token);
  }

  /** Static files: the token in the URL, or this server's asset cookie. */
  private assetAuthorized(req: IncomingMessage, url: URL): boolean {
    return this.tokenOk(url.searchParams.get('token')) || secretEquals(readCookie(req.headers.cookie, assetCookieName(this.port)), this.assetKey);
  }

  /** Browsers always send Origin on WebSocket upgrades: refuse other sites (cross-site WS hijack). */
  private sameOrigin(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return true; // not a browser (tests, CLI clients): the token suffices
    try {
      return new URL(origin).host === req.headers.host;
    } catch {
      return false;
    }
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = parseRequestUrl(req.url);
    const headers: Record<string, string> = {
      'Content-Security-Policy': CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cache-Control': 'no-store',
    };
    if (!url) {
      res.writeHead(400, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' }).end('400: malformed request URL\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...headers, Allow: 'GET, HEAD' }).end();
      return;
    }
    if (!this.assetAuthorized(req, url)) {
      res.writeHead(401, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' }).end('401: this Cohort dashboard needs the token printed by `cohort serve` (open the URL it printed).\n');
      return;
    }
    if (this.tokenOk(url.searchParams.get('token'))) {
      // Assets are requested without the query string; the cookie authorises them.
      headers['Set-Cookie'] = `${assetCookieName(this.port)}=${this.assetKey}; Path=/; HttpOnly; SameSite=Strict`;
    }
    let rel: string;
    try {
      rel = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname.slice(1));
    } catch {
      res.writeHead(400, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' }).end('400: malformed percent-encoding in the path\n');
      return;
    }
    const file = normalize(join(this.opts.staticDir, rel));
    if (!file.startsWith(normalize(this.opts.staticDir) + sep)) {
      res.writeHead(404, headers).end();
      return;
    }
    let size: number;
    try {
      const s = await stat(file);
      if (!s.isFile()) throw new Error('not a file');
      size = s.size;
    } catch {
      res.writeHead(404, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' }).end(`404: ${url.pathname}\n`);
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream', 'Content-Length': String(size) });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  }

  private async runCall(raw: unknown): Promise<unknown> {
    if (raw === BAD_JSON) return { id: null, error: { code: 'bad-message', message: 'expected a JSON text message {id, method, args}' } };
    try {
      return (await handleCallMessage(this.opts.api, raw)) ?? { id: null, error: { code: 'bad-message', message: 'the call has no id' } };
    } catch (err) {
      return { id: null, error: { code: 'internal', message: err instanceof Error ? err.message : String(err) } };
    }
  }

  private onSocket(ws: WebSocket): void {
    this.sockets.add(ws);
    const send = (msg: unknown) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    const subs = new DisposableStore();
    // What this connection listens to (the runs its dashboard follows), and nothing else.
    const listens = subs.add(new ListenTable(this.opts.api, send));
    // Calls wait here (raw text, parsed when they start) and run within the limits.
    const queue: string[] = [];
    let running = 0;
    let paused = false;
    let closed = false;
    const pump = (): void => {
      this.waiting.delete(pump);
      while (!closed && queue.length > 0 && running < this.limits.perConnection) {
        if (ws.bufferedAmount > this.limits.maxBufferedReplyBytes) return; // resumed by the next send's callback
        if (this.inFlight >= this.limits.overall) {
          this.waiting.add(pump);
          return;
        }
        const raw = parseJson(queue.shift() as string);
        if (isListenRequest(raw)) {
          // Handled in arrival order, so a listen sent before a call (attachRun) is in place first.
          const req = decodeListenRequest(raw);
          if (req) listens.handle(req);
          else send({ id: null, error: { code: 'bad-message', message: 'expected {listen: n, event, args} or {unlisten: n} with n a positive integer' } });
          continue;
        }
        running++;
        this.inFlight++;
        void this.runCall(raw).then((reply) => {
          running--;
          this.inFlight--;
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(reply), () => pump());
          pump();
          for (const other of [...this.waiting]) {
            if (this.inFlight >= this.limits.overall) break;
            other();
          }
        });
      }
      if (paused && queue.length < this.limits.queuedPerConnection / 2) {
        paused = false;
        ws.resume();
      }
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        send({ id: null, error: { code: 'bad-message', message: 'expected a JSON text message {id, method, args}' } });
        return;
      }
      queue.push(String(data));
      if (!paused && queue.length >= this.limits.queuedPerConnection) {
        paused = true;
        ws.pause(); // stop reading: the sender waits on TCP instead of this process holding its burst
      }
      pump();
    });
    ws.on('close', () => {
      closed = true;
      queue.length = 0;
      this.waiting.delete(pump);
      subs.dispose();
      this.sockets.delete(ws);
    });
    ws.on('error', () => ws.terminate());
  }
}

const BAD_JSON: unique symbol = Symbol('bad JSON');
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return BAD_JSON;
  }
}

/** The request's URL, or undefined when it cannot be parsed (answered 400, never thrown). */
function parseRequestUrl(raw: string | undefined): URL | undefined {
  try {
    return new URL(raw ?? '/', 'http://x');
  } catch {
    return undefined;
  }
}

function secretEquals(candidate: string | undefined | null, secret: string): boolean {
  if (!candidate) return false;
  const a = Buffer.from(candidate);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}
