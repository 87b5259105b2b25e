// `cohort profiles add-slurm` and `profiles import` of a Slurm profile, through the real CLI (no cluster needed).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli';

const dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-profiles-'));
const env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data') };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[]) {
  const r = runCli(args, { env });
  const exit = await r.exit;
  return { stdout: r.stdout, stderr: r.stderr, code: exit.code };
}

describe('Slurm profiles from the CLI', () => {
  it('add-slurm saves a scheduler profile with the login node as its one host', async () => {
    const r = await cli(['profiles', 'add-slurm', 'hpc', 'me@login.example.org:2222', '--partition', 'gpu', '--nodes', '2', '--tasks-per-node', '4', '--gpus-per-node', '4', '--time', '02:00:00', '--account', 'proj1', '--extra-args=--constraint=a100 --qos=high', '--workdir', '/scratch/me/cohort']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/saved Slurm profile hpc \(2 node\(s\) × 4 rank\(s\) on partition gpu, login login\.example\.org\)/);
    const shown = JSON.parse((await cli(['profiles', 'show', 'hpc'])).stdout) as Record<string, unknown>;
    expect(shown.scheduler).toEqual({ kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 4, gpusPerNode: 4, timeLimit: '02:00:00', account: 'proj1', extraArgs: ['--constraint=a100', '--qos=high'] });
    expect(shown.hosts).toEqual([{ name: 'login', address: 'login.example.org', port: 2222, user: 'me', slots: 1, workdir: '/scratch/me/cohort', env: {} }]);
    expect((await cli(['profiles', 'list'])).stdout).toMatch(/hpc\s+8 rank\(s\)\s+slurm 2 node\(s\) × 4 partition gpu via me@login\.example\.org:2222/);
  });

  it('refuses bad scheduler input, naming the field and the fix', async () => {
    const r = await cli(['profiles', 'add-slurm', 'bad', 'login', '--time', '2h']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/scheduler\.timeLimit: expected Slurm's time format/);
    const n = await cli(['profiles', 'add-slurm', 'bad', 'login', '--nodes', 'two']);
    expect(n.stderr).toMatch(/--nodes must be a whole number, got "two"/);
  });

  it('profiles import accepts the issue example', async () => {
    const file = join(dir, 'hpc2.json');
    writeFileSync(file, JSON.stringify({ name: 'hpc2', scheduler: { kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 4, gpusPerNode: 4, timeLimit: '02:00:00', account: 'proj1', extraArgs: ['--constraint=a100'] }, hosts: [{ name: 'login', address: 'login.example.org', user: 'me', identityFile: '~/.ssh/id_ed25519', workdir: '/scratch/me/cohort' }] }));
    const r = await cli(['profiles', 'import', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/imported profile hpc2 \(8 rank\(s\)\)/);
  });
});
