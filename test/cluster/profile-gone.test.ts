// Issue 24 defect 8 on a real sshd host: a run whose profile was deleted after its start stays
// attachable and stoppable (the run's record holds the profile it ran with); before, attach and
// stop refused with `no profile named …` and the run could only be killed by hand.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leftovers, startHosts, trainerProcesses, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { runCli } from '../helpers/cli';
import { PACED_HOST, tinyRun } from '../helpers/tiny';

let cluster: SshdCluster;
let dir: string;
let env: NodeJS.ProcessEnv;
const tiny = tinyRun();

async function cli(args: string[]) {
  const r = runCli(args, { env });
  const exit = await r.exit;
  return { ...r, code: exit.code };
}

beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(1);
  dir = mkdtempSync(join(tmpdir(), 'cohort-profile-gone-'));
  const knownHosts = join(dir, 'known_hosts');
  copyFileSync(cluster.knownHostsPath, knownHosts);
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: knownHosts, SSH_AUTH_SOCK: '' };
  const h = cluster.hosts[0]!;
  const file = join(dir, 'solo.json');
  writeFileSync(file, JSON.stringify({ name: 'solo', hosts: [{ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir, env: { ...PACED_HOST } }] })); // until stopped: paced (PACED_HOST)
  expect((await cli(['profiles', 'import', file])).code).toBe(0);
});

afterAll(async () => {
  const id = cluster?.id;
  await cluster?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

describe.skipIf(SSHD_MISSING)('a run outlives its profile (issue 24 defect 8)', () => {
  it('after `profiles rm`, the run is still attached to and stopped: cancelled, nothing left on the host', async () => {
    const r = runCli(['run', '--profile', 'solo', '--steps', '100000', ...tiny, '--detach', '--json'], { env, json: true });
    expect((await r.exit).code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    const state = join(cluster.hosts[0]!.workdir, 'runs', runId, 'state.json');
    const end = Date.now() + 120_000;
    while (!(existsSync(state) && (JSON.parse(readFileSync(state, 'utf8')) as { lastStep?: number }).lastStep) && Date.now() < end) await new Promise((res) => setTimeout(res, 250));
    expect((await cli(['profiles', 'rm', 'solo'])).code).toBe(0);

    const attach = runCli(['attach', runId, '--json'], { env, json: true });
    await attach.waitFor((e) => e.type === 'step', 60_000);
    const stop = await cli(['stop', runId]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(new RegExp(`run ${runId}: cancelled`));
    expect((await attach.exit).code, attach.stderr).toBe(130);
    expect(await trainerProcesses(cluster)).toEqual([]);
  }, 300_000);
});
