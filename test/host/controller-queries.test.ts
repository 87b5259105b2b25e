// Issue 24 item 2: no host command outlives the client that started it. A follower's record ends
// and the controller asks that host how (`run-status`); the leader's end resolves the result, and a
// CLI exits on it. Seen in CI (cluster-cli): the follower's run-status still running on h2 after the
// CLI had exited. Here two real agents (h1 leader, h2 follower, two workdirs on loopback) followed by
// a real RunController over local links; h2 is a host slow to answer (a loaded machine): its
// run-status command starts 3 s late (a shell in front of node, the real command after it). Right
// when the result resolves, no host command of the run may be running.
import { describe, expect, it } from 'vitest';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunController } from '../../electron/core/runs/run-controller';
import { BUNDLE, hostTestScope, processesOf, slowStatusNode } from '../helpers/host';
import { startTwoAgents } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();

describe('the controller awaits its host queries', () => {
  it("a follower's end-of-record run-status has ended when the result resolves (a CLI exits on it)", async () => {
    const id = runId('ctrl-queries');
    const [w1, w2] = [workdir(), workdir()];
    await startTwoAgents(id, [w1, w2], { spec: { config: { steps: 3 } }, untilStep: 0 });

    const controller = new RunController({
      runId: id,
      hosts: [
        { host: 'h1', link: localHostLink({ host: 'h1', nodePath: process.execPath, trainerEntry: BUNDLE, workdir: w1 }) },
        { host: 'h2', link: localHostLink({ host: 'h2', nodePath: slowStatusNode(w2), trainerEntry: BUNDLE, workdir: w2 }) },
      ],
    });
    try {
      controller.attach();
      const result = await controller.result;
      // at once, before anything else: the host commands the controller started
      const commands = processesOf(id).filter((p) => / run-(status|follow|stop|rejoin) /.test(p.args));
      expect(result.status).toBe('ok');
      expect(commands.map((p) => p.args), 'host commands of the run still running after its result').toEqual([]);
    } finally {
      controller.dispose();
    }
  }, 120_000);
});
