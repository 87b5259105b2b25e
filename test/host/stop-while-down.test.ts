// Issue 24 item 3: a stop is final even for a host that was down when it was sent, and no client
// is attached. Two real agents on loopback (h1 leader, h2 follower, two workdirs), restarts left:
//   - h1 "crashes" as a machine does for its processes: its agent and rank SIGKILLed, its disk kept.
//     h2 stops its rank and waits for h1 (a `restart` event naming it in h2's record).
//   - `cohort stop` could reach only h2 (h1 was down): run-stop on h2 alone; h2 ends cancelled with
//     its stop marker; h1 has none, and its record still says running (its agent died with it).
//   - h1 answers again; a client attaches (a real RunController over local links). Replaying h2's
//     record it reads the restart waiting for h1 before h2's end: it must not relaunch h1's agent
//     (run-rejoin would accept: h1 has no stop marker), the run ends `cancelled`, and h1 gets its stop
//     marker now that it answers, so its own run-rejoin refuses whoever asks later.
// h2 is a host slow to answer `run-status` (3 s: a loaded machine; a shell in front of the real
// command), which is how the relaunch won the race before the fix, every time.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CohortEvent } from '../../trainer/protocol';
import { localHostLink } from '../../electron/core/runs/host-link';
import { RunController } from '../../electron/core/runs/run-controller';
import { BUNDLE, hostCmd, hostTestScope, processesOf, readStateOf, slowStatusNode } from '../helpers/host';
import { stopWhileLeaderDown } from '../helpers/two-agents';

const { workdir, runId } = hostTestScope();

describe('a stop sent while a host was down is final there too', () => {
  it('the lost leader comes back with no stop marker: an attaching client does not relaunch it, the run ends cancelled, h1 gets its marker', async () => {
    const id = runId('stop-down');
    const [w1, w2] = [workdir(), workdir()];
    // h1 crashes (its agent and its rank, the processes of w1's half of the run); the stop reaches h2 only
    await stopWhileLeaderDown(id, [w1, w2]);
    expect(readStateOf(w2, id)?.state).toBe('cancelled');
    expect(existsSync(join(w1, 'runs', id, 'stop')), 'h1 was down during the stop').toBe(false);
    expect(readStateOf(w1, id)?.state).toBe('running');

    const controller = new RunController({
      runId: id,
      hosts: [
        // a relaunched leader (the defect) waits 10 s, not 180, for its stopped follower
        { host: 'h1', link: localHostLink({ host: 'h1', nodePath: process.execPath, trainerEntry: BUNDLE, workdir: w1, env: { COHORT_HOST_WAIT_MS: '10000' } }) },
        { host: 'h2', link: localHostLink({ host: 'h2', nodePath: slowStatusNode(w2), trainerEntry: BUNDLE, workdir: w2 }) },
      ],
    });
    const events: CohortEvent[] = [];
    controller.onEvent((e) => events.push(e));
    try {
      controller.attach();
      const result = await controller.result;
      const said = events.filter((e) => e.type === 'log' || e.type === 'restart' || e.type === 'error').map((e) => JSON.stringify(e).slice(0, 300));
      expect(events.some((e) => e.type === 'log' && /h1 is back: .*runs again/.test(e.message)), `h1 relaunched after the stop:\n${said.join('\n')}`).toBe(false);
      expect(result.status, said.join('\n')).toBe('cancelled');
      expect(existsSync(join(w1, 'runs', id, 'stop')), "h1's stop marker, delivered once it answered").toBe(true);
      // and so h1 itself refuses a relaunch now, whoever asks
      const rejoin = await hostCmd(w1, ['run-rejoin', '--run', id]);
      expect(rejoin.stdout).toMatch(/run-stopped/);
      expect(processesOf(id), 'a process of the stopped run').toEqual([]);
    } finally {
      controller.dispose();
    }
  }, 240_000);
});
