// A hung follower agent (issue 24 item 4) on real processes: two agents on loopback as hosts h1
// (leader, rank 0) and h2 (follower, rank 1), tfjs ranks, lifeline timeout 5 s (host env). h2's
// agent is stopped with SIGSTOP: its rank hears no beat, reports `agent-silent` and stops itself;
// rank 0 loses its peer and the leader blames h2 (its agent silent): h1's record ends failed naming
// h2, without waiting out the 20-s control heartbeat. Once h2's agent runs again its own record
// ends failed too, with rank 1's last words (`agent-silent`) in it. No process is left.
import { describe, expect, it } from 'vitest';
import { eventsOf, hostTestScope, processesOf, ranksOf, readStateOf, waitUntil } from '../helpers/host';
import { startTwoAgents } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();
const terminal = (wd: string, id: string) => {
  const s = readStateOf(wd, id);
  return s && ['ok', 'failed', 'cancelled'].includes(s.state) ? s : undefined;
};

describe('a hung follower agent', () => {
  it("h2's agent stopped: its rank stops itself (agent-silent), h1 ends failed naming h2; h2's record says why once it runs again", async () => {
    const id = runId('hung-follower');
    const [w1, w2] = [workdir(), workdir()];
    const { followerPid } = await startTwoAgents(id, [w1, w2], { spec: { env: { COHORT_LIFELINE_TIMEOUT_MS: '5000' } }, untilStep: 2, withinMs: 180_000 });
    const rank1 = ranksOf(id).find((p) => p.ppid === followerPid);
    expect(rank1, 'rank 1 on h2').toBeDefined();
    process.kill(followerPid, 'SIGSTOP');
    const stoppedAt = Date.now();
    try {
      const s1 = await waitUntil('the leader to end', () => terminal(w1, id), 60_000);
      console.log(`hung follower agent: h1 ended ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after SIGSTOP of h2's agent: ${s1.error?.message}`);
      expect(s1).toMatchObject({ state: 'failed', error: { host: 'h2', code: 'host-lost' } });
      await waitUntil('rank 1 to have stopped itself', () => !ranksOf(id).some((p) => p.pid === rank1!.pid), 30_000);
      expect(readStateOf(w2, id)?.state).toBe('running'); // its agent has written nothing since
    } finally {
      process.kill(followerPid, 'SIGCONT');
    }
    const s2 = await waitUntil("h2's agent to record the end", () => terminal(w2, id), 60_000);
    expect(s2.state).toBe('failed');
    // Its rank's last words, as its own error or (when the leader's end came first) its stderr line.
    const said = eventsOf(w2, id).filter((e) => (e.type === 'error' || e.type === 'log') && /rank 1 on h2 stopped itself: its host agent \(pid \d+\) has written nothing on the lifeline/.test(e.message));
    expect(said.length).toBeGreaterThan(0);
    await waitUntil('no process left', () => processesOf(id).length === 0, 15_000);
  }, 300_000);
});
