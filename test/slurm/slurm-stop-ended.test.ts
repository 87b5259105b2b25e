// Issue 24 on a real Slurm cluster (slurmctld + slurmd in namespaces, a login node with sshd):
//   defect 2: `cohort stop` of a job that has already ended ok recorded the run `cancelled` (and a
//     reattach wiped its events); the run stays ok and nothing is scancelled.
//   defect 7: a site wrapper printing a notice on sbatch's stdout (before `--parsable`'s job id)
//     orphaned the job (Cohort said failed, 0 steps, while the job trained to ok). The wrapper is
//     bind-mounted over /usr/bin/sbatch in the login node's own mount namespace only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortEvent } from '../../trainer/protocol';
import { SLURM_MISSING, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { runCli } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;
const tiny = tinyRun();

async function cli(args: string[], json = false) {
  const r = runCli(args, { env, json });
  const exit = await r.exit;
  return { ...r, code: exit.code };
}

beforeAll(async () => {
  if (SLURM_MISSING) return;
  c = await startSlurmCluster({ nodes: 1 });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-stop-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '' };
  const file = join(dir, 'one.json');
  writeFileSync(file, JSON.stringify({ name: 'one', scheduler: { kind: 'slurm', partition: 'debug', nodes: 1 }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir: join(c.sharedDir, 'work') }] }));
  expect((await cli(['profiles', 'import', file])).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await c?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SLURM_MISSING)('Slurm: stop of an ended job, sbatch wrapper notices (issue 24)', () => {
  it('defect 2: cohort stop of a job that already ended ok leaves the run ok', async () => {
    const r = await cli(['run', '--profile', 'one', '--steps', '2', ...tiny, '--detach', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    // Wait for the job to have left the queue for good (COMPLETED).
    const deadline = Date.now() + 180_000;
    let state = '';
    while (Date.now() < deadline) {
      state = /JobState=(\S+)/.exec((await c.login$(`scontrol show job -o $(squeue -h --name=cohort-${runId} -o %i; cat ${c.sharedDir}/work/slurm/${runId}/job.json 2>/dev/null | sed 's/.*"jobId":"\\([0-9]*\\)".*/\\1/') 2>/dev/null | head -1`)).stdout)?.[1] ?? '';
      if (state === 'COMPLETED' || state === 'FAILED') break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    expect(state).toBe('COMPLETED');
    const stop = await cli(['stop', runId]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(new RegExp(`run ${runId}: ok`));
    const list = await cli(['runs', 'list', '--json']);
    expect((JSON.parse(list.stdout) as { id: string; status: string; steps?: number }[]).find((m) => m.id === runId)).toMatchObject({ status: 'ok', steps: 2 });
  }, 300_000);

  it('defect 7: a notice line before the job id on sbatch\'s stdout does not orphan the job', async () => {
    const real = join(c.sharedDir, 'sbatch.real');
    const wrapper = join(c.sharedDir, 'sbatch-wrapper');
    writeFileSync(wrapper, `#!/bin/sh\necho "NOTICE: this site accounts jobs to project demo"\nexec ${real} "$@"\n`, { mode: 0o755 });
    const mnt = await c.ssh.exec(c.login, `cp /usr/bin/sbatch ${real} && nsenter -t ${c.login.sshdPid} -m mount --bind ${wrapper} /usr/bin/sbatch && nsenter -t ${c.login.sshdPid} -m sh -c 'sbatch --version | head -1'`);
    expect(mnt.stdout.trim(), mnt.stderr).toMatch(/^NOTICE/); // the wrapper is in place for the login node's sshd sessions
    try {
      const r = await cli(['run', '--profile', 'one', '--steps', '2', ...tiny, '--json'], true);
      expect(r.code, r.stderr).toBe(0);
      const done = r.events.find((e): e is Extract<CohortEvent, { type: 'done' }> => e.type === 'done');
      expect(done).toMatchObject({ status: 'ok', steps: 2 });
    } finally {
      await c.ssh.exec(c.login, `nsenter -t ${c.login.sshdPid} -m umount /usr/bin/sbatch`);
    }
  }, 300_000);
});
