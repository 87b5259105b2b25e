// Leader/follower agents with no client attached (issue 12 host side, issue 14 item 6): two hosts
// "h1" (leader, rank 0) and "h2" (follower, rank 1) as two agents on loopback with two workdirs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ErrorEvent } from '../../trainer/protocol';
import { eventsOf, hostTestScope, processesOf, ranksOf, readStateOf, waitUntil } from '../helpers/host';
import { startTwoAgents } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();

async function startTwoHosts(name: string, config: Record<string, unknown>) {
  const id = runId(name);
  const [w1, w2] = [workdir(), workdir()];
  return { id, w1, w2, ...(await startTwoAgents(id, [w1, w2], { spec: { config }, untilStep: 0 })) };
}

const terminal = (wd: string, id: string) => {
  const s = readStateOf(wd, id);
  return s && ['ok', 'failed', 'cancelled'].includes(s.state) ? s : undefined;
};

describe('leader and follower agents', () => {
  it('a 2-host run finishes ok with no client: the leader records rank 0 events, both hosts end ok', async () => {
    const { id, w1, w2 } = await startTwoHosts('mh-ok', { steps: 4 });
    const s1 = await waitUntil('the leader to finish', () => terminal(w1, id));
    const s2 = await waitUntil('the follower to finish', () => terminal(w2, id), 10_000);
    expect(s1).toMatchObject({ state: 'ok', role: 'leader' });
    expect(s2).toMatchObject({ state: 'ok', role: 'follower' });
    const ev = eventsOf(w1, id);
    expect(ev.filter((e) => e.type === 'step').map((e) => (e as { step: number }).step)).toEqual([1, 2, 3, 4]);
    expect(ev.find((e) => e.type === 'plan')).toMatchObject({ worldSize: 2 });
    await waitUntil('no process left', () => processesOf(id).length === 0, 10_000);
  });

  it('kill -9 of rank 1 on h2: the leader records failed naming h2 and rank 1 from its own exit and log tail', async () => {
    const { id, w1, w2, followerPid } = await startTwoHosts('mh-rank', { steps: 100000 });
    await waitUntil('a step', () => (readStateOf(w1, id)?.lastStep ?? 0) >= 2);
    const rank1 = ranksOf(id).find((p) => p.ppid === followerPid);
    expect(rank1).toBeDefined();
    process.kill(rank1!.pid, 'SIGKILL');
    const s1 = await waitUntil('the leader to record the failure', () => terminal(w1, id), 30_000);
    expect(s1.state).toBe('failed');
    expect(s1.error).toMatchObject({ host: 'h2', rank: 1, code: 'rank-exited' });
    expect(s1.error!.message).toMatch(/rank 1 on h2 was killed by SIGKILL/);
    // The record's first error is the root cause, with rank 1's own last lines (from h2's rank log).
    const firstError = eventsOf(w1, id).find((e): e is ErrorEvent => e.type === 'error')!;
    expect(firstError).toMatchObject({ host: 'h2', rank: 1 });
    expect(firstError.logTail.length).toBeGreaterThan(0);
    const rank1Log = readFileSync(join(w2, 'runs', id, 'logs', 'rank-1.log'), 'utf8');
    for (const line of firstError.logTail) expect(rank1Log).toContain(line);
    expect(terminal(w2, id)?.state ?? (await waitUntil('the follower to end', () => terminal(w2, id), 10_000)).state).toBe('failed');
    await waitUntil('no process left on either host', () => processesOf(id).length === 0, 10_000);
  });

  it('kill -9 of the follower agent: the leader reports host h2 lost and nothing is left running', async () => {
    const { id, w1, followerPid } = await startTwoHosts('mh-host', { steps: 100000 });
    await waitUntil('a step', () => (readStateOf(w1, id)?.lastStep ?? 0) >= 1);
    process.kill(followerPid, 'SIGKILL');
    const s1 = await waitUntil('the leader to record the loss', () => terminal(w1, id), 30_000);
    expect(s1).toMatchObject({ state: 'failed', error: { host: 'h2', rank: -1, code: 'host-lost' } });
    expect(s1.error!.message).toMatch(/connection to h2's agent closed/);
    await waitUntil('no process left', () => processesOf(id).length === 0, 10_000);
  });
});
