// The client's SSH waits from its environment (issue 25): every client (the CLI's commands and
// `cohort serve`) builds its SshCluster from clusterTimings(io), so COHORT_SSH_CONNECT_TIMEOUT_MS,
// COHORT_SSH_KEEPALIVE_MS and COHORT_RETRY_MAX_MS reach the connections and the run plans; unset,
// the production defaults (trainer/protocol/timings.test.ts pins them; connect.ts uses the same).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMINGS } from '../../trainer/protocol';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../core/ssh';
import { clusterTimings } from './commands/cluster';
import { UsageError } from './exit-codes';

const io = (env: NodeJS.ProcessEnv) => ({ env, stdout: new PassThrough(), stderr: new PassThrough() });

describe('clusterTimings: the client waits an SshCluster gets', () => {
  it('the production defaults when the env sets none (the SSH connect default is connect.ts own)', () => {
    expect(clusterTimings(io({}))).toEqual({ lostAfterMs: 60_000, loginCommandTimeoutMs: 30_000, connectTimeoutMs: 10_000, keepaliveIntervalMs: 5_000, retryMaxMs: 4_000 });
    expect(DEFAULT_CONNECT_TIMEOUT_MS).toBe(DEFAULT_TIMINGS.sshConnectTimeoutMs);
  });

  it('each variable reaches its option; a bad value is a usage error naming it', () => {
    const env = { COHORT_SSH_CONNECT_TIMEOUT_MS: '2000', COHORT_SSH_KEEPALIVE_MS: '1000', COHORT_RETRY_MAX_MS: '500', COHORT_LOST_AFTER_MS: '20000' };
    expect(clusterTimings(io(env))).toEqual({ lostAfterMs: 20_000, loginCommandTimeoutMs: 30_000, connectTimeoutMs: 2000, keepaliveIntervalMs: 1000, retryMaxMs: 500 });
    expect(() => clusterTimings(io({ COHORT_SSH_KEEPALIVE_MS: '1s' }))).toThrow(UsageError);
    expect(() => clusterTimings(io({ COHORT_SSH_KEEPALIVE_MS: '1s' }))).toThrow(/COHORT_SSH_KEEPALIVE_MS="1s": give whole milliseconds, at least 100/);
  });
});
