// `cohort runs rm RUN --hosts` for a Slurm run (issue 22 item 11), on a real Slurm cluster
// (slurmctld + slurmd in namespaces, a login node with sshd): the run's record is the shared
// workdir's slurm/<id> (spec, batch script, job output, every node's record with its checkpoints);
// the login node removes it and says what it removed, and refuses while Slurm still queues or runs
// the job (its own check, whatever a client's history says).
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLURM_MISSING, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { runCli } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

async function cli(...args: string[]) {
  const r = runCli(args, { env });
  const exit = await r.exit;
  return { stdout: r.stdout, stderr: r.stderr, code: exit.code };
}
const work = () => join(c.sharedDir, 'work');
const slurmDir = (runId: string) => join(work(), 'slurm', runId);
const localRecord = (runId: string) => join(dir, 'data', 'runs', runId);

/** Submits a run (--detach: sbatch accepted it); its id. */
async function submitted(...flags: string[]): Promise<string> {
  const r = await cli('run', '--profile', 'one', ...tinyRun(), ...flags, '--detach', '--json');
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
}

beforeAll(async () => {
  if (SLURM_MISSING) return;
  c = await startSlurmCluster({ nodes: 1 });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-rm-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '' };
  const file = join(dir, 'one.json');
  writeFileSync(file, JSON.stringify({ name: 'one', scheduler: { kind: 'slurm', partition: 'debug', nodes: 1 }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir: work() }] }));
  expect((await cli('profiles', 'import', file)).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await c?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SLURM_MISSING)('cohort runs rm --hosts of a Slurm run', () => {
  it("removes the ended run's slurm/<id> from the shared workdir through the login node, saying what it removed", async () => {
    const runId = await submitted('--steps', '2', '--checkpoint-every', '1');
    const a = await cli('attach', runId);
    expect(a.code, a.stderr).toBe(0);
    expect(readdirSync(join(slurmDir(runId), 'node-0', 'runs', runId, 'checkpoints')).length).toBeGreaterThan(0);
    const r = await cli('runs', 'rm', runId, '--hosts');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${runId} login: removed ${slurmDir(runId)} \\(\\d+ files, [\\d.]+ [KM]iB, \\d+ checkpoint files?\\)\\n`));
    expect(r.stdout).toContain(`deleted run ${runId} from`);
    expect(existsSync(slurmDir(runId))).toBe(false);
    expect(existsSync(localRecord(runId))).toBe(false);
  }, 300_000);

  it('the login node refuses while Slurm still has the job in its queue', async () => {
    const runId = await submitted('--steps', '100000');
    try {
      const shown = JSON.parse((await cli('runs', 'show', runId, '--json')).stdout) as { meta: { record: { workdir: string; entry: string }[] } };
      const rec = shown.meta.record[0]!;
      const r = await c.login$(`cd ${rec.workdir} && COHORT_WORKDIR=${rec.workdir} ${process.execPath} ${rec.entry} run-remove --run ${runId} --scheduler slurm; echo "exit $?"`);
      expect(r.stdout).toContain('"code":"run-live"');
      expect(r.stdout).toMatch(/Slurm job \d+ of run \S+ is (PENDING|CONFIGURING|RUNNING)/);
      expect(r.stdout).toMatch(/exit 1\n$/);
      expect(existsSync(join(slurmDir(runId), 'spec.json'))).toBe(true);
    } finally {
      expect((await cli('stop', runId)).code).toBe(0);
    }
  }, 300_000);
});
