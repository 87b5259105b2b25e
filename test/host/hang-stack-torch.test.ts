// Hang location across hosts (issue 21 item 4) on real processes: two agents on loopback as hosts
// h1 (leader, rank 0) and h2 (follower, rank 1), torch ranks (Debian's CPU torch; skipped where it
// is missing). Rank 1 is stopped with SIGSTOP and nobody continues it; rank 0 reports it hung (its
// host h2 is not the reporter's, so hang.py does not signal it). The leader's agent tells h2's agent
// (`stack`), which sends rank 1 SIGUSR1, continues it (a stopped process runs no handler, and the
// halt would kill it with SIGUSR1 still pending) and kills it only once its stack is written: rank
// 1's log on h2 holds its Python stack (faulthandler). Before (session 5): the test continued the
// rank itself once SIGUSR1 was pending, racing the halt's SIGTERM, which ends a stopped process at
// once: it failed at width 1 and 1/4. The time from the stop to the stack in the log is printed.
// No process is left.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ErrorEvent } from '../../trainer/protocol';
import { eventsOf, hostTestScope, processesOf, readStateOf, waitUntil } from '../helpers/host';
import { startTwoAgents } from '../helpers/two-agents';
import { PYTHON, torchUnavailableReason } from '../torch/engine-process';

const { workdir, runId } = hostTestScope();
const skip = torchUnavailableReason();

describe.skipIf(skip !== undefined)(`hang location across hosts (torch)${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it("rank 1 on h2 stopped: h1's rank reports it, h2's agent asks it for its stack (SIGUSR1, SIGCONT) before the halt; the stack is in its log on h2", async () => {
    const id = runId('hang-stack');
    const [w1, w2] = [workdir(), workdir()];
    const env = { COHORT_PYTHON: PYTHON, COHORT_THREADS: '1' };
    const { followerPid } = await startTwoAgents(id, [w1, w2], { spec: { env, config: { engine: 'torch' } }, untilStep: 2, withinMs: 300_000 });
    const rank1 = processesOf(id).find((p) => p.ppid === followerPid && p.args.includes(`cohort_run=${id}`));
    expect(rank1, 'rank 1 (python) on h2').toBeDefined();
    const log = join(w2, 'runs', id, 'logs', 'rank-1.log');
    const hasStack = () => existsSync(log) && /most recent call first/.test(readFileSync(log, 'utf8'));
    process.kill(rank1!.pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    let stackAt: number | undefined;
    try {
      const terminal = (w: string) => ['ok', 'failed', 'cancelled'].includes(readStateOf(w, id)?.state ?? '') || undefined;
      await waitUntil('both hosts to end', () => ((stackAt ??= hasStack() ? Date.now() : undefined), terminal(w1) && terminal(w2)), 120_000, 100);
      const first = eventsOf(w1, id).find((e): e is ErrorEvent => e.type === 'error');
      expect(first).toMatchObject({ rank: 1, host: 'h2', code: 'rank-hung', reportedBy: [0] });
      // the agent writes the log as it reads the rank's stderr, which it read to the end before its state was final
      expect(hasStack(), `rank 1's Python stack in its log on h2:\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : '(no log)'}`).toBe(true);
      expect(readFileSync(log, 'utf8')).toMatch(/File ".*\.py", line \d+/);
      console.log(`hang stack (torch, rank 1 on h2): error ${(((first?.time ?? NaN) - stoppedAt) / 1000).toFixed(1)} s, stack in its log ${(((stackAt ?? Date.now()) - stoppedAt) / 1000).toFixed(1)} s after SIGSTOP`);
    } finally {
      try {
        process.kill(rank1!.pid, 'SIGCONT'); // cleanup only: the agent has continued and ended it
      } catch {
        // gone, as it should be
      }
    }
    await waitUntil('no process left', () => processesOf(id).length === 0, 15_000);
  }, 400_000);
});
