// Slurm ending a run (real slurmctld/slurmd in namespaces, through the login node): a job that
// reaches its time limit ends the run as failed with Slurm's reason; a node that dies (its slurmd
// and everything on it killed) fails the run naming that node. The two run side by side on their
// own partitions (Slurm's smallest time limit is a minute). Also `cohort probe` of a Slurm profile.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortEvent, ErrorEvent } from '../../trainer/protocol';
import type { HostProbe } from '../../electron/common';
import { SLURM_MISSING, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { runCli } from '../helpers/cli';
import { PACED_HOST, tinyRun } from '../helpers/tiny';

let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

const tiny = tinyRun();
const of = <T extends CohortEvent['type']>(events: CohortEvent[], t: T) => events.filter((e) => e.type === t) as Extract<CohortEvent, { type: T }>[];

async function cli(args: string[], json = false) {
  const r = runCli(args, { env, json });
  const exit = await r.exit;
  return { ...r, code: exit.code };
}

function importProfile(name: string, scheduler: Record<string, unknown>, workdir = join(c.sharedDir, 'work'), env?: Record<string, string>) {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ name, scheduler: { kind: 'slurm', ...scheduler }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir, ...(env ? { env } : {}) }] }));
  return cli(['profiles', 'import', file]);
}

beforeAll(async () => {
  if (SLURM_MISSING) return;
  c = await startSlurmCluster({ nodes: 3, conf: ['PartitionName=pair Nodes=n1,n2 State=UP', 'PartitionName=short Nodes=n3 MaxTime=00:01:00 State=UP'] });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-fail-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '' };
  expect((await importProfile('pair', { partition: 'pair', nodes: 2 })).code).toBe(0);
  // short's run trains until Slurm's 1-minute limit ends it: paced (PACED_HOST), its rank idles most of that minute
  expect((await importProfile('short', { partition: 'short', nodes: 1, timeLimit: '1' }, undefined, { ...PACED_HOST })).code).toBe(0);
}, 90_000);

afterAll(async () => {
  await c?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SLURM_MISSING)('Slurm ends runs', () => {
  it('probe describes the cluster through the login node and checks the workdir from a compute node', async () => {
    const r = await cli(['probe', 'pair', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [p] = JSON.parse(r.stdout) as HostProbe[];
    expect(p!.slurm?.version).toMatch(/^slurm(-wlm)? \d+\.\d+/);
    expect(p!.slurm?.partitions.map((x) => `${x.name}:${x.nodes}:${x.avail}:${x.timeLimit}`).sort()).toEqual(['debug:3:up:infinite', 'pair:2:up:infinite', 'short:1:up:1:00']);
    expect(p!.slurm?.nodes.map((n) => n.name).sort()).toEqual(['n1', 'n2', 'n3']);
    expect(p!.slurm?.accountsNote).toMatch(/accounts unknown/); // no slurmdbd on the test cluster
    expect(p!.slurm?.workdirShared).toBe('yes');
    expect(p!.slurm?.computeNode).toMatch(/^node v\d+/);
    // and what --engine torch needs there: python3 with torch, or said missing (which python3 a node's PATH
    // finds depends on the machine, so either answer is accepted, in its exact form)
    expect(p!.slurm?.computeNode).toMatch(/^node v\d+\S* · (torch \d+\.\d+\S* \(python3\)|no torch on python3 \(--engine torch unavailable; tfjs runs\))$/);
  }, 120_000);

  it('time limit → failed with Slurm\'s reason; a dead node → failed naming it', async () => {
    const timed = runCli(['run', '--profile', 'short', '--steps', '100000', ...tiny, '--json'], { env, json: true });
    const pair = runCli(['run', '--profile', 'pair', '--steps', '100000', ...tiny, '--json'], { env, json: true });
    await pair.waitFor((e) => e.type === 'step' && e.step >= 2, 120_000);
    // n2 dies: its slurmd and everything running on it.
    const n2 = c.nodes[1]!;
    c.killSlurmd(n2);
    await c.ssh.exec(n2.host, `ip netns pids ${n2.host.namespace} | xargs -r kill -9`);
    const pairExit = await pair.exit;
    expect(pairExit.code).toBe(1);
    const pairErrors = of(pair.events, 'error') as ErrorEvent[];
    expect(pairErrors[0]?.host, JSON.stringify(pairErrors)).toBe('n2');
    expect(of(pair.events, 'done')[0]).toMatchObject({ status: 'failed' });

    const timedExit = await timed.exit;
    expect(timedExit.code).toBe(1);
    const errs = of(timed.events, 'error') as ErrorEvent[];
    expect(errs.map((e) => e.message).join('\n')).toMatch(/Slurm ended job \d+: it reached its time limit \(JobState=TIMEOUT, Reason=TimeLimit\)/);
    expect(errs[0]?.code).toBe('slurm-timeout');
    expect(errs[0]?.hint).toMatch(/a time limit is not restarted, even with --max-restarts: ask for a longer limit/);
    expect(of(timed.events, 'done')[0]).toMatchObject({ status: 'failed' });
    expect(of(timed.events, 'env')[0]?.ranks[0]?.switches).toMatchObject(PACED_HOST); // the login host's env reached the rank: it was paced
    const hist = JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as { profile: string; status: string; error?: { message: string } }[];
    expect(hist.find((h) => h.profile === 'short')).toMatchObject({ status: 'failed' });
    expect(hist.find((h) => h.profile === 'short')?.error?.message).toMatch(/time limit/);
  }, 300_000);
});
