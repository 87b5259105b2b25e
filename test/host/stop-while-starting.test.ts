// Issue 24 item 1 (the controller's effects as data): a stop asked while the hosts are being started.
// Two real agents on loopback (h1 leader, h2 follower, two workdirs) started by a real RunController
// over local links; h1 is a host slow to start (its run-start begins 3 s late: a loaded machine, a
// shell in front of the real command). The user stops the run right after start(). When start() ran
// the starts itself, the stop's run-stop reached the hosts before any run-start had written a record
// (nothing to stop there), the agents started after it, the result said `cancelled`, and the run
// trained on with no client. Now the start is the lifecycle's start-hosts effect and the stop waits
// for the run-starts: every agent that started is stopped, and nothing of the run is left.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CohortEvent, LaunchSpec } from '../../trainer/protocol';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunController } from '../../electron/core/runs/run-controller';
import { BUNDLE, freePort, hostTestScope, processesOf, readStateOf, spec, waitUntil } from '../helpers/host';
import { slowCommandNode } from '../helpers/slow-host';

const { workdir, runId } = hostTestScope();

describe('a stop asked while the hosts start', () => {
  it('reaches every agent once its run-start has returned: the run ends cancelled on both hosts and no process of it is left', async () => {
    const id = runId('stop-starting');
    const [w1, w2] = [workdir(), workdir()];
    const control = { addr: '127.0.0.1', port: await freePort(), token: randomBytes(16).toString('hex') };
    const common = { runId: id, worldSize: 2, masterPort: await freePort(), control, config: { steps: 100000 } };
    const specOf = (s: string) => JSON.parse(s) as LaunchSpec;
    const controller = new RunController({
      runId: id,
      hosts: [
        { host: 'h1', link: localHostLink({ host: 'h1', nodePath: slowCommandNode(w1, 'run-start', 3), trainerEntry: BUNDLE, workdir: w1 }), spec: specOf(spec({ ...common, host: 'h1', role: 'leader', ranks: [{ rank: 0, localRank: 0 }] })) },
        { host: 'h2', link: localHostLink({ host: 'h2', nodePath: process.execPath, trainerEntry: BUNDLE, workdir: w2 }), spec: specOf(spec({ ...common, host: 'h2', role: 'follower', leader: 'h1', ranks: [{ rank: 1, localRank: 0 }] })) },
      ],
    });
    const events: CohortEvent[] = [];
    controller.onEvent((e) => events.push(e));
    try {
      const started = controller.start();
      controller.cancel(); // while h1's run-start has not begun
      const result = await controller.result;
      const said = events.filter((e) => e.type === 'log' || e.type === 'error').map((e) => JSON.stringify(e).slice(0, 300)).join('\n');
      expect(result.status, said).toBe('cancelled');
      expect(await started, 'the agents did start').toBe(true);
      // the stop reached both agents: their records say so, and they end (not training on with no client)
      await waitUntil('no process of the run', () => processesOf(id).length === 0, 60_000, 250).catch(() => undefined);
      expect(processesOf(id).map((p) => p.args.slice(0, 200)), `processes of the stopped run:\n${said}`).toEqual([]);
      expect(readStateOf(w1, id)?.state).toBe('cancelled');
      expect(readStateOf(w2, id)?.state).toBe('cancelled');
    } finally {
      controller.dispose();
    }
  }, 180_000);
});
