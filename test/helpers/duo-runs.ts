// The fixture of the tests that remove a run's records from its hosts, once: the CLI's
// (test/cluster/runs-rm-hosts.test.ts) and the GUI's (test/e2e/history-delete-hosts.test.ts). On a
// cluster with profile `duo` (2 hosts) deployed: the real CLI's answers awaited, where a run's
// record lies on a host, a finished 2-host run with checkpoints on rank 0's host, and a live one.
import { join } from 'node:path';
import { expect } from 'vitest';
import type { SshdCluster } from '../harness/sshd-hosts';
import type { CliRun } from './cli';
import { tinyRun } from './tiny';

export interface CliAnswer {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface DuoRuns {
  /** `cohort ARGS`, run to its end. */
  cli(...args: string[]): Promise<CliAnswer>;
  /** The run's record directory on host i (the hosts' disks are this machine's). */
  hostRecord(i: number, runId: string): string;
  /** A finished 2-host run of profile duo with checkpoints on rank 0's host (run --detach, then attach to its end); its id. */
  endedRun(): Promise<string>;
  /** A detached run of profile duo that runs on (100,000 steps): its id. The test stops it. */
  liveRun(): Promise<string>;
}

/** `start` runs the CLI (the fixture's or the dashboard's, whose history the run goes to); `cluster` is the sshd hosts. */
export function duoRuns(start: (args: string[]) => CliRun, cluster: () => SshdCluster): DuoRuns {
  async function cli(...args: string[]): Promise<CliAnswer> {
    const r = start(args);
    const { code } = await r.exit;
    return { code, stdout: r.stdout, stderr: r.stderr };
  }
  return {
    cli,
    hostRecord: (i, runId) => join(cluster().hosts[i]!.workdir, 'runs', runId),
    async endedRun() {
      const r = await cli('run', '--profile', 'duo', ...tinyRun(), '--steps', '2', '--checkpoint-every', '1', '--detach');
      expect(r.code, r.stderr).toBe(0);
      const runId = r.stdout.trim();
      const a = await cli('attach', runId);
      expect(a.code, a.stderr).toBe(0);
      return runId;
    },
    async liveRun() {
      const start = await cli('run', '--profile', 'duo', ...tinyRun(), '--steps', '100000', '--detach');
      expect(start.code, start.stderr).toBe(0);
      return start.stdout.trim();
    },
  };
}
