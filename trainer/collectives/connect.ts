// Backend selection, Horovod-style: an ordered list, the first backend that fits this world is
// used, and if none fits the error lists every backend tried and why it declined. No silent
// fallback: a multi-rank run never quietly degrades to a single-rank one.
import type { BackendName, Collective, ConnectOptions } from './collective';
import { CollectiveError } from './errors';
import { HANG } from './hang';
import { LoopbackCollective } from './loopback';
import type { RendezvousEnv } from './rendezvous-env';
import { TcpRingCollective } from './tcp-ring';

interface Backend {
  name: BackendName;
  /** undefined when it fits, else why not. */
  declines(env: RendezvousEnv): string | undefined;
  connect(env: RendezvousEnv, opts: ConnectOptions): Promise<Collective>;
}

const BACKENDS: Record<BackendName, Backend> = {
  loopback: {
    name: 'loopback',
    declines: (env) => (env.worldSize === 1 ? undefined : `needs world size 1, got ${env.worldSize}`),
    connect: async () => new LoopbackCollective(),
  },
  'tcp-ring': {
    name: 'tcp-ring',
    declines: (env) => (env.worldSize >= 2 ? undefined : `needs world size ≥ 2, got ${env.worldSize}`),
    connect: (env, opts) =>
      TcpRingCollective.connect(env, {
        timeoutMs: opts.timeoutMs ?? 60_000,
        hang: { peerTimeoutMs: opts.peerTimeoutMs ?? 30_000, floorMs: opts.hangFloorMs ?? HANG.floorMs },
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.bindAddr ? { bindAddr: opts.bindAddr } : {}),
        ...(opts.masterBindAddr ? { masterBindAddr: opts.masterBindAddr } : {}),
        ...(opts.sameHostTransport ? { sameHostTransport: opts.sameHostTransport } : {}),
      }),
  },
};

export const DEFAULT_BACKENDS: readonly BackendName[] = ['loopback', 'tcp-ring'];

export async function connectCollective(env: RendezvousEnv, opts: ConnectOptions = {}): Promise<Collective> {
  const order = opts.backends ?? DEFAULT_BACKENDS;
  const tried: string[] = [];
  for (const name of order) {
    const backend = BACKENDS[name];
    if (!backend) {
      tried.push(`${String(name)} (unknown backend)`);
      continue;
    }
    const why = backend.declines(env);
    if (why === undefined) return backend.connect(env, opts);
    tried.push(`${name} (${why})`);
  }
  throw new CollectiveError('no-backend', `no collective backend fits rank ${env.rank} of world size ${env.worldSize}: tried ${tried.join(', ') || 'nothing'}`, {
    hint: `backends available: ${Object.keys(BACKENDS).join(', ')}`,
  });
}
