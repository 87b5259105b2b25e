// Issue 24 item 4 (a stop is final), the history's side in milliseconds: a stop sent while a host was
// down is owed to it (RunMeta.stopOwed); listing the runs sends run-stop to each owed host again and
// drops every host that confirms, keeping one still down for the next listing. And a run whose
// leader's agent is gone with its record unended is asked about on its other hosts: one cancelled
// and the run is, the leader getting its stop marker (real parts: test/host/stop-while-down-list.test.ts). The hosts are
// stand-ins at the HostLink seam (h1 still down: its connect fails; h2 answers as run-stop does);
// the real-parts test is test/cluster/stop-owed.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Profile, RunMeta } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { HostLink } from '../runs/host-link';
import { RunStore } from '../runs/run-store';
import { deliverOwedStops, refreshRunStatus } from './refresh-run-status';

const asked: string[] = [];
const down = (host: string): HostLink => ({ host, command: (args) => (asked.push(`${host} ${args[0]}`), Promise.reject(new Error(`${host}: connect ECONNREFUSED`))) });
/** A host's state record as run-status / run-stop print it. */
const stateLine = (state: string, more: Record<string, unknown> = {}) => JSON.stringify({ v: 1, runId: 'r1', host: 'h', role: 'follower', state, agentPid: 1, startedAt: 1, updatedAt: 1, restarts: 0, ...more });
const CANCELLED = stateLine('cancelled');
/** A host that answers: run-status with `status` (default: its record says cancelled), run-stop with its state after the stop. */
const up = (host: string, status = CANCELLED): HostLink => ({
  host,
  command: async (args) => {
    asked.push(`${host} ${args[0]}`);
    const out = `${args[0] === 'run-status' ? status : CANCELLED}\n`;
    return { onStdout: (l) => (queueMicrotask(() => l(Buffer.from(out))), () => undefined), stderr: () => '', exit: new Promise((r) => setTimeout(() => r({ code: 0, signal: null }), 1)), kill: () => undefined };
  },
});

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

describe('a stop owed to hosts that were down is delivered by listing the runs', () => {
  it('h1 still down keeps it owed; h2 confirms and is dropped; a run owing nothing is not asked about', async () => {
    dir = mkdtempSync(join(tmpdir(), 'owed-stops-'));
    const runs = new RunStore(join(dir, 'runs'));
    const ref = (host: string) => ({ host, workdir: `/w/${host}`, entry: `/w/${host}/b.mjs` });
    const meta = { id: 'r1', profile: 'p', startedAt: new Date().toISOString(), status: 'cancelled', config: {}, hosts: [], worldSize: 2, versions: {}, record: [ref('h0'), ref('h1'), ref('h2')], stopOwed: ['h1', 'h2'] } as unknown as RunMeta;
    runs.create(meta).close();
    const cluster = { attachPlan: (_p: Profile, runId: string) => ({ runId, hosts: [{ host: 'h0', link: up('h0') }, { host: 'h1', link: down('h1') }, { host: 'h2', link: up('h2') }] }) } as unknown as ClusterOps;
    const profiles = { get: async () => ({ name: 'p', hosts: [] }) as unknown as Profile };
    const deps = { runs, profiles, dataDir: dir, cluster } as unknown as Parameters<typeof deliverOwedStops>[1];

    const after = await deliverOwedStops(runs.meta('r1')!, deps);
    expect(asked.sort()).toEqual(['h1 run-stop', 'h2 run-stop']); // h0 confirmed the stop when it was sent
    expect(after?.stopOwed).toEqual(['h1']);
    expect(runs.meta('r1')?.stopOwed).toEqual(['h1']);
    expect(runs.meta('r1')?.status).toBe('cancelled');

    // h1 answers now: nothing owed any more, the field is gone
    const back = { attachPlan: (_p: Profile, runId: string) => ({ runId, hosts: [{ host: 'h1', link: up('h1') }] }) } as unknown as ClusterOps;
    asked.length = 0;
    expect((await deliverOwedStops(runs.meta('r1')!, { ...deps, cluster: back }))?.stopOwed).toBeUndefined();
    expect(asked).toEqual(['h1 run-stop']);
    expect(runs.meta('r1')).not.toHaveProperty('stopOwed');
    asked.length = 0;
    expect(await deliverOwedStops(runs.meta('r1')!, { ...deps, cluster: back })).toBeUndefined();
    expect(asked).toEqual([]);
  });
});

describe("a leader whose agent is gone: the other hosts' word decides", () => {
  it('h2 says cancelled: the history says cancelled and the leader gets run-stop (its marker); h2 still running: lost, as before', async () => {
    dir = mkdtempSync(join(tmpdir(), 'owed-stops-'));
    const runs = new RunStore(join(dir, 'runs'));
    const ref = (host: string) => ({ host, workdir: `/w/${host}`, entry: `/w/${host}/b.mjs` });
    runs.create({ id: 'r1', profile: 'p', startedAt: new Date().toISOString(), status: 'running', config: {}, hosts: [], worldSize: 2, versions: {}, record: [ref('h1'), ref('h2')] } as unknown as RunMeta).close();
    const deadLeader = stateLine('running', { role: 'leader', agentAlive: false });
    const planWith = (h2: HostLink) => ({ attachPlan: (_p: Profile, runId: string) => ({ runId, hosts: [{ host: 'h1', link: up('h1', deadLeader) }, { host: 'h2', link: h2 }] }) }) as unknown as ClusterOps;
    const profiles = { get: async () => ({ name: 'p', hosts: [] }) as unknown as Profile };
    const deps = (cluster: ClusterOps) => ({ runs, profiles, dataDir: dir!, cluster }) as unknown as Parameters<typeof refreshRunStatus>[1];
    asked.length = 0;
    const lost = await refreshRunStatus(runs.meta('r1')!, deps(planWith(up('h2', stateLine('restarting', { agentAlive: true })))));
    expect(lost?.status).toBe('lost');
    expect(asked).toEqual(['h1 run-status', 'h2 run-status']);
    asked.length = 0;
    const cancelled = await refreshRunStatus(runs.meta('r1')!, deps(planWith(up('h2'))));
    expect(cancelled?.status).toBe('cancelled');
    expect(asked).toEqual(['h1 run-status', 'h2 run-status', 'h1 run-stop']);
  });
});
