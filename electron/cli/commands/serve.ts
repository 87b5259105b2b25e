// `cohort serve [--port N] [--host ADDR]`: the dashboard in any browser, served by core over
// HTTP + WebSocket. Loopback only unless --host says otherwise (with a warning); every request
// needs the per-launch token in the printed URL.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SshCluster } from '../../core/cluster/ssh-cluster';
import { resolvePaths } from '../../core/paths';
import { CohortService } from '../../core/service/cohort-service';
import { WebServer, isLoopback } from '../../web/web-server';
import { CohortError, DisposableStore } from '../../../trainer/protocol';
import { onAbort, onProcessSignals } from '../../../trainer/util/node-lifecycle';
import { EXIT, UsageError } from '../exit-codes';
import { parseCommandLine } from '../train-flags';

export const SERVE_USAGE = `usage: cohort serve [--port N] [--host ADDR]
  --port N     listen on port N (default: a free port)
  --host ADDR  listen on ADDR (default 127.0.0.1). A non-loopback address exposes the dashboard
               to your network, protected only by the token: use it only on networks you trust.`;

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
  args: string[],
  io: { env: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
  opts: { signal?: AbortSignal } = {},
): Promise<number> {
  const { values, positionals } = parseCommandLine(args, { port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, false);
  if (values.help) {
    io.stdout.write(SERVE_USAGE + '\n');
    return EXIT.ok;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\n${SERVE_USAGE}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: expected a port number 0..65535, got ${JSON.stringify(values.port)}`);
  const host = values.host ?? '127.0.0.1';
  if (host.trim() === '') throw new UsageError('--host: expected an address such as 127.0.0.1');

  const staticDir = findRendererDir(io.env);
  // Listen for stop signals before the URL is printed: a supervisor may signal as soon as it sees it.
  // Every handler added here is removed on the way out, whatever the way out is.
  const handlers = new DisposableStore();
  let onStop!: () => void;
  const stopped = new Promise<void>((resolve) => (onStop = resolve));
  handlers.add(onProcessSignals(['SIGINT', 'SIGTERM'], onStop));
  if (opts.signal) handlers.add(onAbort(opts.signal, onStop));
  // Keys by path or ssh-agent; an encrypted key without the agent fails with a clear error (the
  // browser has no passphrase prompt yet).
  const service = new CohortService({ paths: resolvePaths(io.env), cluster: new SshCluster({ env: io.env }) });
  const server = new WebServer({ api: service, staticDir, host, port });
  try {
    try {
      await server.listen();
    } catch (err) {
      await service.dispose();
      throw err;
    }
    if (!isLoopback(host)) {
      io.stderr.write(`cohort serve: WARNING: listening on ${host}, not loopback: anyone who can reach this address and learns the token can run training jobs as ${io.env.USER ?? 'this user'}.\n`);
    }
    io.stdout.write(`cohort serve: dashboard at ${server.url}\n`);

    await stopped;
  } finally {
    handlers.dispose();
  }
  io.stderr.write('cohort serve: stopping (cancelling active runs)\n');
  await server.dispose();
  await service.dispose();
  return EXIT.ok;
}
