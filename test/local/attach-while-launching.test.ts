// Following a run that another client is still launching. start-run.ts writes the history (`starting`,
// the launcher's writer lock) before run-start creates the host's record; a client that followed the
// run in between read "no record" as its end and called it failed. ci30 (session 10) saw it in
// history-tools.test: the dashboard's Live view opened a run `cohort run --detach` had just written,
// and the run that then trained to ok was alerted as "Run failed: … local has no record of run …".
// Here the launcher's window is held open on purpose: this process writes the history as start-run
// does and creates the record (the real run-start host command) only after the follow has begun.
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { resolvePaths } from '../../electron/core/paths';
import { localWorkdir } from '../../electron/core/runs/local-run';
import { RunStore } from '../../electron/core/runs/run-store';
import { CohortService } from '../../electron/core/service/cohort-service';
import { LAUNCH_WAIT_MS } from '../../electron/core/service/refresh-run-status';
import { DEFAULT_TRAIN_CONFIG, newRunId } from '../../trainer/protocol';
import { tempDataDir } from '../helpers/cli';
import { freePort } from '../helpers/free-port';
import { hostCmd, processesOf, spec } from '../helpers/host';
import { tinyConfig } from '../helpers/tiny';
import { until } from '../helpers/until';

const dir = tempDataDir();
const paths = resolvePaths({ COHORT_DATA_DIR: join(dir, 'data'), COHORT_CONFIG_DIR: join(dir, 'config'), HOME: dir });
const store = new RunStore(join(paths.dataDir, 'runs'));
const follower = new CohortService({ paths });
const ids: string[] = [];
afterAll(() => {
  follower.dispose();
  for (const id of ids) expect(processesOf(id), `processes of ${id} left`).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

/** The history a launcher writes before run-start (start-run.ts): `starting`, its writer lock taken. */
function launcherHistory(name: string) {
  const id = newRunId().replace(/-[a-z0-9]+$/, `-${name}`);
  ids.push(id);
  const meta: RunMeta = { id, profile: 'local', startedAt: new Date().toISOString(), status: 'starting', config: { ...DEFAULT_TRAIN_CONFIG, ...tinyConfig, stem: 'cifar', steps: 3 }, hosts: [{ name: 'local', ranks: [0] }], worldSize: 1, versions: { node: process.versions.node }, controllerPid: process.pid };
  return { id, recorder: store.create(meta) };
}

describe('a follow that starts while another client is launching the run', () => {
  it('waits for the host record while the launcher lives, then follows the run to ok', async () => {
    const { id, recorder } = launcherHistory('launching');
    expect(store.writerAlive(id)).toBe(true);
    const attached = follower.attachRun(id);
    let settled = false;
    void attached.then(() => (settled = true), () => (settled = true));
    // The launcher is slow (a loaded machine): the follow must not have given up meanwhile.
    await new Promise((r) => setTimeout(r, 1500));
    expect(settled, 'the follow did not wait for the launch').toBe(false);
    const start = await hostCmd(localWorkdir(paths.dataDir), ['run-start'], { stdin: spec({ runId: id, host: 'local', worldSize: 1, ranks: [{ rank: 0, localRank: 0 }], masterPort: await freePort(), config: { steps: 3, engine: 'tfjs' } }) + '\n' });
    expect(start.code, start.stdout + start.stderr).toBe(0);
    recorder.close(); // the launcher goes (a --detach launch returns); the follower keeps the history
    const attachment = await attached;
    expect(attachment.live).toBe(true);
    const result = await follower.runResult(id)!;
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    expect(result.status).toBe('ok');
    await until('the history to say ok', () => store.meta(id)?.status === 'ok', 30_000);
  }, 180_000);

  it('does not wait for a launcher that is gone: no record is the run’s end at once', async () => {
    const { id, recorder } = launcherHistory('gone');
    recorder.close();
    writeFileSync(join(store.runsDir, id, 'writer.lock'), '999999999 1\n'); // a launcher killed before run-start
    expect(store.writerAlive(id)).toBe(false);
    const t0 = Date.now();
    await follower.attachRun(id);
    const result = await follower.runResult(id);
    expect(result?.error?.code).toBe('no-such-run');
    expect(Date.now() - t0, 'waited for a launcher that is gone').toBeLessThan(LAUNCH_WAIT_MS);
  }, 120_000);
});
