// The client's waits as SshCluster options (client-timings.ts): what the CLI, `cohort serve` and
// Electron main all give their SshCluster.
import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMINGS } from '../../../trainer/protocol';
import { clusterTimingOptions, readClusterTimings } from './client-timings';

describe('readClusterTimings', () => {
  it('unset: the production defaults', () => {
    expect(readClusterTimings({})).toEqual({ options: { lostAfterMs: 60_000, loginCommandTimeoutMs: 30_000, connectTimeoutMs: 10_000, keepaliveIntervalMs: 5_000, retryMaxMs: 4_000 }, invalid: [] });
    expect(clusterTimingOptions(DEFAULT_TIMINGS)).toEqual(readClusterTimings({}).options);
  });

  it('each variable reaches its option; a value it cannot use is named, with what to give', () => {
    const env = { COHORT_LOST_AFTER_MS: '20000', COHORT_LOGIN_COMMAND_TIMEOUT_MS: '10000', COHORT_SSH_CONNECT_TIMEOUT_MS: '2000', COHORT_SSH_KEEPALIVE_MS: '1000', COHORT_RETRY_MAX_MS: '500' };
    expect(readClusterTimings(env)).toEqual({ options: { lostAfterMs: 20_000, loginCommandTimeoutMs: 10_000, connectTimeoutMs: 2000, keepaliveIntervalMs: 1000, retryMaxMs: 500 }, invalid: [] });
    const bad = readClusterTimings({ COHORT_SSH_KEEPALIVE_MS: '1s' });
    expect(bad.options.keepaliveIntervalMs).toBe(5_000);
    expect(bad.invalid).toEqual([expect.stringMatching(/^COHORT_SSH_KEEPALIVE_MS="1s": give whole milliseconds, at least 100 \(unset it for the default, 5000\)/)]);
  });
});
