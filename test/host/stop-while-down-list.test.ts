// Issue 24 item 4 (a stop is final), with no client attached: listing the runs delivers a stop that
// reached the other hosts while the leader was down. Two real agents on loopback (h1 leader, h2
// follower, two workdirs), restarts left, as in stop-while-down.test.ts:
//   - h1 "crashes" (its agent and rank SIGKILLed, its disk kept); h2 waits for it.
//   - the stop reaches h2 only (another machine's client: this history still says `running`).
//   - this machine lists its runs (CohortService.listRuns: `cohort runs list` and History's poll).
//     Before the fix it asked the leader only, got "running, agent gone" and wrote `lost`; h1 kept no
//     stop marker until some client attached. Now the other hosts are asked too: the run is
//     `cancelled` in the history, and h1 has its stop marker when the list returns, so its own
//     run-rejoin refuses the run, whoever asks.
// The SSH layer is the one stand-in: its attachPlan gives local links to the two workdirs (the
// host commands, agents and records are the real ones); over SSH the same core call runs.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HostRecordRef, RunMeta } from '../../electron/common';
import type { ClusterOps } from '../../electron/core/cluster/cluster-ops';
import { resolvePaths } from '../../electron/core/paths';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunStore } from '../../electron/core/runs/run-store';
import { CohortService } from '../../electron/core/service/cohort-service';
import { BUNDLE, hostCmd, hostTestScope, processesOf, waitUntil } from '../helpers/host';
import { stopWhileLeaderDown } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();
const dir = mkdtempSync(join(tmpdir(), 'cohort-list-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The SSH layer's stand-in: each recorded host reached by a local link to its workdir. */
const localCluster = { attachPlan: (_p: unknown, id: string, record: HostRecordRef[]) => ({ runId: id, hosts: record.map((r) => ({ host: r.host, link: localHostLink({ host: r.host, nodePath: process.execPath, trainerEntry: r.entry, workdir: r.workdir }) })) }), dispose: () => undefined } as unknown as ClusterOps;

describe('a stop sent while the leader was down, delivered by listing the runs', () => {
  it('h1 back with no stop marker: listRuns finds the run cancelled on h2, writes cancelled, and gives h1 its marker', async () => {
    const id = runId('stop-list');
    const [w1, w2] = [workdir(), workdir()];
    await stopWhileLeaderDown(id, [w1, w2]);
    const marker = join(w1, 'runs', id, 'stop');
    expect(existsSync(marker), 'h1 was down during the stop').toBe(false);

    // this machine's history: the run as its start recorded it, still `running`
    const paths = resolvePaths({ COHORT_CONFIG_DIR: join(dir, 'c'), COHORT_DATA_DIR: join(dir, 'd'), HOME: dir });
    const ref = (host: string, w: string): HostRecordRef => ({ host, workdir: w, entry: BUNDLE });
    const meta = {
      id, profile: 'duo', startedAt: new Date().toISOString(), status: 'running', config: {}, worldSize: 2, versions: {},
      hosts: [{ name: 'h1', ranks: [0] }, { name: 'h2', ranks: [1] }], record: [ref('h1', w1), ref('h2', w2)],
      profileSnapshot: { name: 'duo', hosts: [{ name: 'h1', address: '127.0.0.1' }, { name: 'h2', address: '127.0.0.1' }] },
    } as unknown as RunMeta;
    new RunStore(join(paths.dataDir, 'runs')).create(meta).close();
    const service = new CohortService({ paths, cluster: localCluster });
    try {
      const listed = (await service.listRuns()).find((m) => m.id === id);
      expect(listed?.status).toBe('cancelled');
      expect(existsSync(marker), "h1's stop marker, delivered by listing the runs").toBe(true);
      const rejoin = await hostCmd(w1, ['run-rejoin', '--run', id]);
      expect(rejoin.stdout).toMatch(/run-stopped/);
    } finally {
      service.dispose();
    }
    await waitUntil('no process of the run', () => processesOf(id).length === 0, 30_000, 250).catch(() => undefined);
    expect(processesOf(id).map((p) => p.args.slice(0, 200))).toEqual([]);
  }, 240_000);
});
