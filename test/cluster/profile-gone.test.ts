// Issue 24 defect 8 on a real sshd host: a run whose profile was deleted after its start stays
// attachable and stoppable (the run's record holds the profile it ran with); before, attach and
// stop refused with `no profile named …` and the run could only be killed by hand.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { PACED_HOST, tinyRun } from '../helpers/tiny';

// solo: one host; its run goes until stopped: paced (PACED_HOST)
const fx = useCohortCluster(1, { enabled: !SSHD_MISSING, profiles: { solo: [{ host: 0, env: { ...PACED_HOST } }] } });
const tiny = tinyRun();

async function cli(args: string[]) {
  const r = fx().cli(args);
  const exit = await r.exit;
  return { ...r, code: exit.code };
}

describe.skipIf(SSHD_MISSING)('a run outlives its profile (issue 24 defect 8)', () => {
  it('after `profiles rm`, the run is still attached to and stopped: cancelled, nothing left on the host', async () => {
    const r = fx().cli(['run', '--profile', 'solo', '--steps', '100000', ...tiny, '--detach', '--json'], { json: true });
    expect((await r.exit).code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    const state = join(fx().cluster.hosts[0]!.workdir, 'runs', runId, 'state.json');
    const end = Date.now() + 120_000;
    while (!(existsSync(state) && (JSON.parse(readFileSync(state, 'utf8')) as { lastStep?: number }).lastStep) && Date.now() < end) await new Promise((res) => setTimeout(res, 250));
    expect((await cli(['profiles', 'rm', 'solo'])).code).toBe(0);

    const attach = fx().cli(['attach', runId, '--json'], { json: true });
    await attach.waitFor((e) => e.type === 'step', 60_000);
    const stop = await cli(['stop', runId]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(new RegExp(`run ${runId}: cancelled`));
    expect((await attach.exit).code, attach.stderr).toBe(130);
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 300_000);
});
