// A concurrency limit for work on many hosts: connecting to 200 hosts at once would trip sshd's
// MaxStartups on shared jump hosts and the local file-descriptor limit.
import { HostSession, type HostSessionOptions } from './host-session';
import type { SshEndpoint } from './connect';
import { SshError } from './ssh-error';

export type Limiter = <T>(fn: () => Promise<T>, opts?: { signal?: AbortSignal }) => Promise<T>;

/** Runs at most `concurrency` of the given tasks at a time, in call order. */
export function createLimiter(concurrency: number): Limiter {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be an integer ≥ 1, got ${concurrency}`);
  let active = 0;
  const queue: (() => void)[] = [];
  const release = () => {
    active--;
    queue.shift()?.();
  };
  return <T>(fn: () => Promise<T>, opts: { signal?: AbortSignal } = {}) =>
    new Promise<T>((resolve, reject) => {
      const start = () => {
        opts.signal?.removeEventListener('abort', onAbort);
        if (opts.signal?.aborted) {
          reject(opts.signal.reason);
          queue.shift()?.();
          return;
        }
        active++;
        fn().then(resolve, reject).finally(release);
      };
      const onAbort = () => {
        const i = queue.indexOf(start);
        if (i >= 0) queue.splice(i, 1);
        reject(opts.signal?.reason);
      };
      if (active < concurrency) start();
      else {
        queue.push(start);
        opts.signal?.addEventListener('abort', onAbort, { once: true });
      }
    });
}

export type ConnectManyResult = { endpoint: SshEndpoint; session: HostSession; error?: undefined } | { endpoint: SshEndpoint; session?: undefined; error: SshError };

/**
 * Connects to every endpoint with at most `concurrency` handshakes in flight. Never rejects: each
 * host gets its session or its own SshError, so one bad host does not hide the others' state.
 */
export async function connectMany(
  targets: { endpoint: SshEndpoint; jump?: SshEndpoint[] }[],
  opts: HostSessionOptions & { concurrency?: number },
): Promise<ConnectManyResult[]> {
  const limit = createLimiter(opts.concurrency ?? 8);
  return Promise.all(
    targets.map(({ endpoint, jump }) =>
      limit(async (): Promise<ConnectManyResult> => {
        try {
          return { endpoint, session: await HostSession.connect(endpoint, { ...opts, ...(jump ? { jump } : {}) }) };
        } catch (err) {
          const error = err instanceof SshError ? err : new SshError('ssh-protocol', endpoint.name, `${endpoint.name}: ${String(err)}`, '', { cause: err });
          return { endpoint, error };
        }
      }),
    ),
  );
}
