// The client's waits (trainer/protocol/timings.ts) as SshCluster options, in one place for every
// client that builds an SshCluster: the CLI's commands and `cohort serve` (electron/cli/commands/
// cluster.ts: a bad value is a usage error there) and Electron main (an error box there).
import { readTimings, type Timings } from '../../../trainer/protocol';
import type { SshClusterOptions } from './ssh-cluster';

export type ClusterTimingOptions = Pick<SshClusterOptions, 'lostAfterMs' | 'loginCommandTimeoutMs' | 'connectTimeoutMs' | 'keepaliveIntervalMs' | 'retryMaxMs'>;

export function clusterTimingOptions(t: Timings): ClusterTimingOptions {
  return { lostAfterMs: t.lostAfterMs, loginCommandTimeoutMs: t.loginCommandTimeoutMs, connectTimeoutMs: t.sshConnectTimeoutMs, keepaliveIntervalMs: t.sshKeepaliveMs, retryMaxMs: t.retryMaxMs };
}

/** The options from an env, and one line per variable it cannot use (each names it, what to give, the default). */
export function readClusterTimings(env: Record<string, string | undefined>): { options: ClusterTimingOptions; invalid: string[] } {
  const { timings, invalid } = readTimings(env);
  return { options: clusterTimingOptions(timings), invalid };
}
