// Slurm runs through the real `cohort` CLI against a real Slurm cluster (slurmctld + 2 slurmd in
// network namespaces, a login node with sshd): one sbatch job whose srun starts one agent per node,
// followed through the login node. Same weights as a local run of the same world size; a run
// submitted while the partition is full waits as `queued` with Slurm's reason; stop = scancel and
// nothing left on any node (another client attached meanwhile); bad input refused before anything
// is submitted. The README's examples that name the Slurm profile `hpc` (`cohort probe hpc`, `cohort
// run --profile hpc --steps 500`) run here as a user types them (test/helpers/doc-examples.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortEvent, DoneEvent, ErrorEvent, LogEvent, StepEvent } from '../../trainer/protocol';
import { SLURM_MISSING, nodeTrainerProcesses as nodeTrainerProcessesOf, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { runCli } from '../helpers/cli';
import { asTyped, cohortOnPath, docExamples, needsSlurm, typeInBash } from '../helpers/doc-examples';
import { tinyConfig, tinyRun } from '../helpers/tiny';

let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

const tiny = tinyRun({ seed: 7 });
const of = <T extends CohortEvent['type']>(events: CohortEvent[], t: T) => events.filter((e) => e.type === t) as Extract<CohortEvent, { type: T }>[];

function importProfile(name: string, scheduler: Record<string, unknown>, workdir = join(c.sharedDir, 'work'), fields: Record<string, unknown> = {}): Promise<{ code: number | null; stderr: string }> {
  const file = join(dir, `${name}.json`);
  const h = c.login;
  writeFileSync(file, JSON.stringify({ name, ...fields, scheduler: { kind: 'slurm', ...scheduler }, hosts: [{ name: 'login', address: h.address, port: h.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir }] }));
  return cli(['profiles', 'import', file]);
}

async function cli(args: string[], json = false) {
  const r = runCli(args, { env, json });
  const exit = await r.exit;
  return { ...r, code: exit.code };
}

const nodeTrainerProcesses = () => nodeTrainerProcessesOf(c);

beforeAll(async () => {
  if (SLURM_MISSING) return;
  c = await startSlurmCluster({ nodes: 2, conf: ['PartitionName=one Nodes=n1 MaxTime=INFINITE State=UP'] });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-test-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '' };
  // `defaults`: the tiny run, for the README's `cohort run --profile hpc` typed without run flags.
  expect((await importProfile('hpc', { partition: 'debug', nodes: 2, tasksPerNode: 1 }, undefined, { defaults: { ...tinyConfig, batchSize: 2, warmupSteps: 1 } })).code).toBe(0);
}, 90_000);

/** What the README says each `hpc` example does, as lines of its output (every example there must have one). */
const HPC_EXPECT: Record<string, RegExp[]> = {
  // "Slurm version, partitions (state, nodes, time limit, gres), nodes, your accounts, and whether a compute node sees the workdir"
  'cohort probe hpc': [/^login: Linux /m, /^  Slurm 22\.\d+/m, /^  partition debug \(default\): up, 2\/2 node\(s\) idle, time limit \S+/m, /^  partition one: up, 1\/1 node\(s\) idle/m, /^  node n1: idle, 2 CPU\(s\), \d+ MiB/m, /^  node n2: /m, /^  accounts: /m, /^  workdir: seen from a compute node \(node v\d+/m],
  // "one sbatch job; queued → starting → running"
  'cohort run --profile hpc --steps 500': [/submitted Slurm job \d+/, /Slurm job \d+ runs on n1, n2/, /Step: 2\/2/],
};

afterAll(async () => {
  await c?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SLURM_MISSING)('Slurm runs through the login node', () => {
  it('a 2-node run finishes ok with every rank in the step events and the paramChecksum of a local run', async () => {
    const steps = ['--steps', '3'];
    const [slurm, local] = await Promise.all([cli(['run', '--profile', 'hpc', ...steps, ...tiny, '--json'], true), cli(['run', '--local', '--ranks', '2', ...steps, ...tiny, '--json'], true)]);
    expect(slurm.code, slurm.stderr).toBe(0);
    expect(local.code, local.stderr).toBe(0);
    const logs = of(slurm.events, 'log').map((l: LogEvent) => l.message);
    expect(logs.some((m) => /^submitted Slurm job \d+/.test(m))).toBe(true);
    expect(logs.some((m) => /Slurm job \d+ runs on n1, n2/.test(m))).toBe(true);
    const st = of(slurm.events, 'step') as StepEvent[];
    expect(st.length).toBeGreaterThan(0);
    for (const s of st) expect(s.memory.map((m) => `${m.rank}@${m.host}`).sort()).toEqual(['0@n1', '1@n2']);
    const done = of(slurm.events, 'done')[0] as DoneEvent;
    const localDone = of(local.events, 'done')[0] as DoneEvent;
    expect(done.status).toBe('ok');
    expect(done.paramChecksum).toMatch(/^[0-9a-f]{16,}$/);
    expect(done.paramChecksum).toBe(localDone.paramChecksum);
    // The job is gone and nothing of it is left on any node.
    expect((await c.login$(`squeue -h -o %i`)).stdout.trim()).toBe('');
    expect(await nodeTrainerProcesses()).toEqual([]);
    const hist = JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as { id: string; status: string; worldSize: number }[];
    expect(hist[0]).toMatchObject({ status: 'ok', worldSize: 2 });
  }, 240_000);

  it("the README's hpc examples as typed: probe shows Slurm's view, run is one sbatch job on both nodes", async () => {
    const examples = docExamples().filter((e) => needsSlurm(e.text));
    expect(examples.map((e) => e.text)).toEqual(expect.arrayContaining(Object.keys(HPC_EXPECT)));
    const bin = cohortOnPath(dir);
    for (const ex of examples) {
      const typed = asTyped(ex.text, '', '');
      const r = await typeInBash(typed, { cwd: dir, env, bin });
      expect(r.code, `${typed} (${ex.from}):\n${r.out}`).toBe(0);
      expect(HPC_EXPECT[ex.text], `${ex.text} (${ex.from}) has no output check here`).toBeDefined();
      for (const re of HPC_EXPECT[ex.text]!) expect(r.out, `${typed} (${ex.from})`).toMatch(re);
    }
    expect((await c.login$(`squeue -h -o %i`)).stdout.trim()).toBe('');
  }, 240_000);

  it('refuses bad input before submitting: unknown partition, more nodes than the partition has', async () => {
    expect((await importProfile('nopart', { partition: 'nope', nodes: 1 })).code).toBe(0);
    expect((await importProfile('toobig', { partition: 'one', nodes: 2 })).code).toBe(0);
    const before = (await c.login$(`scontrol show jobs -o | grep -c JobId= || true`)).stdout.trim();
    const a = await cli(['run', '--profile', 'nopart', '--steps', '1', ...tiny]);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/scheduler\.partition "nope" does not exist on this cluster \(it has debug, one\)/);
    expect(a.stderr).toMatch(/set scheduler\.partition to one of: debug, one/);
    const b = await cli(['run', '--profile', 'toobig', '--steps', '1', ...tiny]);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toMatch(/scheduler\.nodes is 2 but partition one has 1 node\(s\)/);
    expect((await c.login$(`scontrol show jobs -o | grep -c JobId= || true`)).stdout.trim()).toBe(before);
  }, 120_000);

  it('refuses a workdir the compute nodes cannot see, before submitting; probe says so', async () => {
    // A tmpfs mounted only in the login node's mount namespace (its sshd's): files written there
    // through SSH exist on the login node and nowhere else, like a login node's local disk.
    const priv = join(c.sharedDir, 'login-only');
    await c.ssh.exec(c.login, `mkdir -p ${priv}`);
    const mnt = await c.ssh.exec(c.login, `nsenter -t ${c.login.sshdPid} -m mount -t tmpfs tmpfs ${priv} && nsenter -t ${c.login.sshdPid} -m touch ${priv}/login-mark && test ! -e ${priv}/login-mark && echo private`);
    expect(mnt.stdout.trim(), mnt.stderr).toBe('private');
    expect((await importProfile('private', { partition: 'debug', nodes: 1 }, join(priv, 'work'))).code).toBe(0);
    const cohortJobs = async () => (await c.login$(`scontrol show jobs -o`)).stdout.split('\n').filter((l) => /JobName=cohort-/.test(l)).length;
    const before = await cohortJobs();
    const r = await cli(['run', '--profile', 'private', '--steps', '1', ...tiny]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/the workdir \S+login-only\/work of login is not visible from the compute nodes of partition debug/);
    expect(r.stderr).toMatch(/on a filesystem the compute nodes mount/);
    expect(await cohortJobs()).toBe(before); // no batch job was submitted (the check's own srun is named "sh")
    const probe = JSON.parse((await cli(['probe', 'private', '--json'])).stdout) as { slurm?: { workdirShared: string; workdirNote?: string } }[];
    expect(probe[0]?.slurm?.workdirShared).toBe('no');
    expect(probe[0]?.slurm?.workdirNote).toMatch(/cannot read .*login-only\/work\/\.cohort-shared-/);
  }, 120_000);

  it('waits as queued with Slurm\'s reason while the partition is full, starts when the nodes free, and stop = scancel with nothing left', async () => {
    const blocker = (await c.login$(`sbatch --parsable --exclusive -N2 -p debug --wrap 'sleep 300'`)).stdout.trim();
    expect(blocker).toMatch(/^\d+$/);
    // The blocker must hold the nodes before ours is submitted (the previous test's job may still be
    // completing; a pending blocker would stand ahead of ours in the queue).
    for (let i = 0; i < 120 && (await c.login$(`squeue -h -j ${blocker} -o %T`)).stdout.trim() !== 'RUNNING'; i++) await new Promise((r) => setTimeout(r, 500));
    expect((await c.login$(`squeue -h -j ${blocker} -o %T`)).stdout.trim()).toBe('RUNNING');
    const run = runCli(['run', '--profile', 'hpc', '--steps', '100000', ...tiny, '--json'], { env, json: true });
    const queued = (await run.waitFor((e) => e.type === 'log' && /^queued: Slurm job \d+ is pending/.test(e.message), 60_000)) as LogEvent;
    expect(queued.message).toMatch(/pending \((Resources|Priority)\), position 1 in partition debug/);
    const runId = (JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as { id: string; status: string }[])[0]!;
    expect(runId.status).toBe('queued');
    await c.login$(`scancel ${blocker}`);
    await run.waitFor((e) => e.type === 'step' && e.step >= 2, 120_000);
    expect((await nodeTrainerProcesses()).length).toBeGreaterThan(0);
    // Another client attaches (the job is found by its name through the login node) and sees the steps.
    const att = runCli(['attach', runId.id, '--json'], { env, json: true });
    await att.waitFor((e) => e.type === 'step', 60_000);
    const stop = await cli(['stop', runId.id]);
    expect(stop.code, stop.stderr).toBe(0);
    const exit = await run.exit;
    expect(exit.code).toBe(130);
    expect(of(run.events, 'done')[0]).toMatchObject({ status: 'cancelled' });
    expect((await att.exit).code).toBe(130);
    expect(of(att.events, 'done')[0]).toMatchObject({ status: 'cancelled' });
    expect((await c.login$(`squeue -h -o %i`)).stdout.trim()).toBe('');
    expect(await nodeTrainerProcesses()).toEqual([]);
    const hist = (JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as { id: string; status: string }[]).find((r) => r.id === runId.id);
    expect(hist?.status).toBe('cancelled');
    expect(of(run.events, 'error') as ErrorEvent[]).toEqual([]);
  }, 300_000);
});
