// `cohort serve [--port N] [--host ADDR]`: the dashboard in any browser, served by core over
// HTTP + WebSocket. Loopback only unless --host says otherwise (with a warning); every request
// needs the per-launch token in the printed URL.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SshCluster } from '../../core/cluster/ssh-cluster';
import { resolvePaths } from '../../core/paths';
import { CohortService } from '../../core/service/cohort-service';
import { PassphrasePrompts } from '../../core/service/passphrase-prompts';
import { KeyRing } from '../../core/ssh';
import { WebServer, isLoopback } from '../../web/web-server';
import { CohortError, DisposableStore } from '../../../trainer/protocol';
import { onAbort, onProcessSignals } from '../../../trainer/util/node-lifecycle';
import { EXIT, UsageError } from '../exit-codes';
import type { Parsed } from '../command-spec';
import { clusterTimings } from './cluster';

/** dist/renderer next to the built CLI, or at the repo root when run from source; COHORT_RENDERER_DIR overrides. */
export function findRendererDir(env: NodeJS.ProcessEnv): string {
  if (env.COHORT_RENDERER_DIR) return env.COHORT_RENDERER_DIR;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    for (const candidate of [join(dir, 'renderer'), join(dir, 'dist', 'renderer')]) {
      if (existsSync(join(candidate, 'index.html'))) return candidate;
    }
    dir = dirname(dir);
  }
  throw new CohortError('renderer-missing', 'the dashboard is not built (no dist/renderer/index.html); run `npm run build:renderer` in the Cohort folder');
}

export async function serveCommand(
  { values }: Parsed,
  io: { env: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
  opts: { signal?: AbortSignal } = {},
): Promise<number> {
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: expected a port number 0..65535, got ${JSON.stringify(values.port)}`);
  const host = typeof values.host === 'string' ? values.host : '127.0.0.1';
  if (host.trim() === '') throw new UsageError('--host: expected an address such as 127.0.0.1');

  const staticDir = findRendererDir(io.env);
  // Listen for stop signals before the URL is printed: a supervisor may signal as soon as it sees it.
  // Every handler added here is removed on the way out, whatever the way out is.
  const handlers = new DisposableStore();
  let onStop!: () => void;
  const stopped = new Promise<void>((resolve) => (onStop = resolve));
  handlers.add(onProcessSignals(['SIGINT', 'SIGTERM'], onStop));
  if (opts.signal) handlers.add(onAbort(opts.signal, onStop));
  // Keys by path or ssh-agent (tried first); an encrypted key the agent does not hold is unlocked
  // with a passphrase the dashboard asks for (never stored).
  const passphrases = new PassphrasePrompts();
  const service = new CohortService({ paths: resolvePaths(io.env), env: io.env, cluster: new SshCluster({ env: io.env, ...clusterTimings(io), keys: new KeyRing(passphrases.ask) }), passphrases });
  const server = new WebServer({ api: service, staticDir, host, port });
  try {
    try {
      await server.listen();
    } catch (err) {
      service.dispose();
      throw err;
    }
    if (!isLoopback(host)) {
      io.stderr.write(`cohort serve: WARNING: listening on ${host}, not loopback: anyone who can reach this address and learns the token can run training jobs as ${io.env.USER ?? 'this user'}.\n`);
    }
    // A wildcard address is not one a browser can open: print the addresses this machine has.
    const urls = reachableUrls(server.url, host);
    // The first line keeps the one-URL form scripts read ("dashboard at URL").
    const [first, ...others] = urls;
    io.stdout.write(`cohort serve: dashboard at ${first ?? server.url}\n${others.map((u) => `cohort serve: also at ${u}\n`).join('')}`);

    await stopped;
  } finally {
    handlers.dispose();
  }
  // A client going away never stops a run (CohortService.dispose): say so, so nobody takes Ctrl-C for a stop.
  io.stderr.write('cohort serve: stopping; active runs go on on their hosts (cohort runs list; cohort attach RUN follows one, cohort stop RUN stops it)\n');
  await server.dispose();
  service.dispose();
  return EXIT.ok;
}

/** The URLs to open: the one listened on, or for 0.0.0.0 / :: each interface address (loopback first). */
export function reachableUrls(url: string, host: string, interfaces = networkInterfaces()): string[] {
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  if (!wildcard) return [url];
  const addrs: string[] = [];
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) {
      if (a.family !== 'IPv4' && host === '0.0.0.0') continue;
      if (a.family === 'IPv6' && a.address.startsWith('fe80')) continue; // link-local needs a zone id
      addrs.push(a.address);
    }
  }
  addrs.sort((a, b) => Number(!isLoopback(a)) - Number(!isLoopback(b)));
  return addrs.map((a) => {
    const u = new URL(url);
    u.hostname = a.includes(':') ? `[${a}]` : a;
    return u.toString();
  });
}
