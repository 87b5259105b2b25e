// Issue 24 item 2: no host command outlives the client that started it. A follower's record ends
// and the controller asks that host how (`run-status`); the leader's end resolves the result, and a
// CLI exits on it. Seen in CI (cluster-cli): the follower's run-status still running on h2 after the
// CLI had exited. Here two real agents (h1 leader, h2 follower, two workdirs on loopback) followed by
// a real RunController over local links; h2 is a host slow to answer (a loaded machine): its
// run-status command starts 3 s late (a shell in front of node, the real command after it). Right
// when the result resolves, no host command of the run may be running.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunController } from '../../electron/core/runs/run-controller';
import { BUNDLE, freePort, hostCmd, hostTestScope, processesOf, slowStatusNode, spec } from '../helpers/host';

const { workdir, runId } = hostTestScope();

describe('the controller awaits its host queries', () => {
  it("a follower's end-of-record run-status has ended when the result resolves (a CLI exits on it)", async () => {
    const id = runId('ctrl-queries');
    const [w1, w2] = [workdir(), workdir()];
    const control = { addr: '127.0.0.1', port: await freePort(), token: randomBytes(16).toString('hex') };
    const common = { runId: id, worldSize: 2, masterPort: await freePort(), control, config: { steps: 3 } };
    const [a, b] = await Promise.all([
      hostCmd(w1, ['run-start'], { stdin: spec({ ...common, host: 'h1', role: 'leader', ranks: [{ rank: 0, localRank: 0 }] }) }),
      hostCmd(w2, ['run-start'], { stdin: spec({ ...common, host: 'h2', role: 'follower', ranks: [{ rank: 1, localRank: 0 }] }) }),
    ]);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(b.code, b.stdout + b.stderr).toBe(0);

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
