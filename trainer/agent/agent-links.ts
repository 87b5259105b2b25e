// The sockets of the agents' control channel, as the agent shell uses them (run-agent.ts): the
// leader's listener (one ControlLink per follower host, known once it says hello) and a follower's
// connect loop to its leader. Only I/O: what a hello, a message or a closed link means is decided
// by the lifecycle (agent-lifecycle.ts), which these callbacks feed.
import { createConnection, createServer, type Server } from 'node:net';
import { ControlLink, tokenMatches, type ControlMsg } from './control';
import type { AgentInput, LinkHealth } from './agent-lifecycle';

/** Between a follower's tries to reach its leader's control port (a SYN to a host that is down would otherwise hang ~2 min). */
const CONNECT_TRY_MS = 3000;

export interface LeaderLinkEvents {
  hello(link: ControlLink, m: Extract<ControlMsg, { t: 'hello' }>, tokenOk: boolean, priorClosed: boolean): void;
  msg(host: string, m: ControlMsg): void;
  lost(host: string, why: string): void;
  listenError(err: Error): void;
}

/** The leader's end: follower links by host. */
export class FollowerLinks {
  private server: Server | undefined;
  readonly byHost = new Map<string, ControlLink>();
  /** Links that said hello and wait for the lifecycle's accept or refuse. */
  private readonly pending = new Map<string, ControlLink>();

  constructor(
    private readonly token: string,
    private readonly timeoutMs: number,
    private readonly on: LeaderLinkEvents,
  ) {}

  listen(addr: string, port: number): void {
    this.server = createServer((sock) => {
      const link = new ControlLink(sock, this.timeoutMs);
      let host = '';
      link.on(
        (m) => {
          if (host) return this.on.msg(host, m);
          if (m.t !== 'hello') return link.close('refused');
          host = m.host;
          this.pending.set(m.host, link);
          this.on.hello(link, m, tokenMatches(m.token, this.token), this.byHost.get(m.host)?.isClosed ?? true);
          if (this.pending.get(m.host) === link) {
            this.pending.delete(m.host); // neither accepted nor refused: refused
            link.close('refused');
          }
        },
        (why) => {
          if (host && this.byHost.get(host) === link) this.on.lost(host, why);
        },
      );
    });
    this.server.on('error', (err) => this.on.listenError(err));
    this.server.listen(port, addr);
  }

  accept(host: string): void {
    const link = this.pending.get(host);
    if (!link) return;
    this.pending.delete(host);
    this.byHost.set(host, link);
  }

  refuse(host: string): void {
    const link = this.pending.get(host);
    this.pending.delete(host);
    link?.close('refused');
  }

  send(host: string, m: ControlMsg): void {
    this.byHost.get(host)?.send(m);
  }

  health(): LinkHealth[] {
    return [...this.byHost.entries()].map(([host, l]) => ({ host, closed: l.isClosed, silentMs: l.silentForMs }));
  }

  flushed(): Promise<void> {
    return Promise.all([...this.byHost.values()].map((l) => l.flushed())).then(() => {});
  }

  close(): void {
    for (const l of this.byHost.values()) l.close('run ended');
    this.server?.close();
  }
}

/**
 * A follower's tries to reach the leader's control port, every 250 ms until `withinMs`; `connected`
 * gets the link, `gaveUp` the last error.
 */
export function connectLoop(addr: string, port: number, withinMs: number, timeoutMs: number, alive: () => boolean, connected: (link: ControlLink) => void, gaveUp: (message: string) => void): void {
  const started = Date.now();
  const attempt = () => {
    if (!alive()) return;
    const sock = createConnection({ host: addr, port });
    sock.setTimeout(CONNECT_TRY_MS, () => sock.destroy(new Error(`no answer within ${CONNECT_TRY_MS / 1000} s`)));
    let done = false;
    sock.once('error', (err) => {
      if (done) return;
      done = true;
      if (Date.now() - started > withinMs) return gaveUp(err.message);
      setTimeout(attempt, 250);
    });
    sock.once('connect', () => {
      done = true;
      sock.setTimeout(0); // from here the control link's own beat judges the leader
      connected(new ControlLink(sock, timeoutMs));
    });
  };
  attempt();
}

/** The leader's listener with its sockets turned into lifecycle inputs (run-agent.ts's `listen` effect). */
export function listenForFollowers(token: string, timeoutMs: number, addr: string, port: number, host: string, input: (i: AgentInput) => void): FollowerLinks {
  const links = new FollowerLinks(token, timeoutMs, {
    hello: (_l, m, tokenOk, priorClosed) => input({ t: 'hello', host: m.host, ranks: m.ranks, tokenOk, priorClosed, ...(m.key ? { key: m.key } : {}) }),
    msg: (from, msg) => input({ t: 'follower-msg', host: from, msg }),
    lost: (from, why) => input({ t: 'follower-lost', host: from, why }),
    listenError: (err) => input({ t: 'fatal', error: { host, rank: -1, message: `control channel on ${addr}:${port}: ${err.message}`, code: 'control-listen' } }),
  });
  links.listen(addr, port);
  return links;
}
