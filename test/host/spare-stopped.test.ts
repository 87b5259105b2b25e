// Issue 24 item 3: a stop is final for a spare host too. Two real agents on loopback (h1 leader, h2
// follower) and a spare host h3 (an empty workdir), the leader's spec naming h3 its spare, restarts left:
//   - h2 "crashes" (its agent and rank SIGKILLed): the leader excludes it and waits for the spare h3
//     (a `restart` naming h2 excluded, h3 its replacement).
//   - `cohort stop` reaches the leader: it ends cancelled.
//   - a client attaches (a real RunController over local links, no launch specs: the attach-only
//     client that starts spares, test/cluster/spare-attach.test.ts). h1's record reaches it over a slow
//     link: the lines after the `restart` arrive 10 s late (a shell in front of the real run-follow), so
//     it reads the restart asking for h3 before the stop's end. Before the fix it started h3's agent
//     for the stopped run (run-start there); now it asks the run's other hosts the stop question first
//     (as before a relaunch): h1 says cancelled, the spare is not started, and the run ends cancelled.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CohortEvent } from '../../trainer/protocol';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunController } from '../../electron/core/runs/run-controller';
import { BUNDLE, hostCmd, hostTestScope, processesOf, readStateOf, waitUntil } from '../helpers/host';
import { slowFollowNode } from '../helpers/slow-host';
import { crashAgent, startTwoAgents } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();

describe('a spare host is asked the stop question before its agent starts', () => {
  it('the leader stopped while it waited for the spare: an attaching client that has not read the stop yet does not start the spare', async () => {
    const id = runId('spare-stopped');
    const [w1, w2, w3] = [workdir(), workdir(), workdir()];
    const { followerPid } = await startTwoAgents(id, [w1, w2], { spec: { maxRestarts: 2 }, leader: { spares: ['h3'] } });

    // h2 crashes: the leader moves its rank to the spare h3 and waits for it
    crashAgent(id, followerPid);
    await waitUntil('h1 to wait for the spare h3', () => readStateOf(w1, id)?.state === 'restarting', 90_000);
    // the stop reaches the leader
    const stop = await hostCmd(w1, ['run-stop', '--run', id, '--reason', 'stopped by the user', '--wait-ms', '10000']);
    expect(stop.code, stop.stdout + stop.stderr).toBe(0);
    expect(readStateOf(w1, id)?.state).toBe('cancelled');

    const controller = new RunController({
      runId: id,
      hosts: [
        { host: 'h1', link: localHostLink({ host: 'h1', nodePath: slowFollowNode(w1, 'restart', 10), trainerEntry: BUNDLE, workdir: w1 }) },
        { host: 'h2', link: localHostLink({ host: 'h2', nodePath: process.execPath, trainerEntry: BUNDLE, workdir: w2 }) },
      ],
      hostRanks: { h1: [0], h2: [1] },
      spares: [{ host: 'h3', link: localHostLink({ host: 'h3', nodePath: process.execPath, trainerEntry: BUNDLE, workdir: w3 }), env: {}, record: { host: 'h3', workdir: w3, entry: BUNDLE } }],
    });
    const events: CohortEvent[] = [];
    controller.onEvent((e) => events.push(e));
    try {
      controller.attach();
      const result = await controller.result;
      const said = events.filter((e) => e.type === 'log' || e.type === 'restart' || e.type === 'error').map((e) => JSON.stringify(e).slice(0, 300)).join('\n');
      expect(events.some((e) => e.type === 'restart' && e.replacement === 'h3'), `the restart naming the spare:\n${said}`).toBe(true);
      expect(events.some((e) => e.type === 'log' && /the spare host h3's agent of run .* runs/.test(e.message)), `the spare started for the stopped run:\n${said}`).toBe(false);
      expect(existsSync(join(w3, 'runs', id)), 'a run-start reached the spare h3').toBe(false);
      expect(result.status, said).toBe('cancelled');
      await waitUntil('no process of the run', () => processesOf(id).length === 0, 30_000, 250).catch(() => undefined);
      expect(processesOf(id).map((p) => p.args.slice(0, 200))).toEqual([]);
    } finally {
      controller.dispose();
    }
  }, 300_000);
});
