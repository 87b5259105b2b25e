import { describe, expect, it } from 'vitest';
import { ProfileError, decodeProfile, localProfile, parseProxyJump, profileWorldSize, resolveRunConfig } from './profile';

const lab = {
  name: 'lab',
  hosts: [{ name: 'h1', address: '10.77.0.1', port: 22, user: 'root', identityFile: '/path/id_ed25519', slots: 1, workdir: '/tmp/cohort-h1' }],
};

function hostsWith(second: Record<string, unknown>) {
  return { name: 'lab', hosts: [lab.hosts[0], { name: 'h2', address: '10.77.0.2', ...second }] };
}

describe('profile schema', () => {
  it('accepts the issue example and fills defaults', () => {
    const p = decodeProfile(lab);
    expect(p).toEqual({ v: 1, name: 'lab', hosts: [{ ...lab.hosts[0], env: {} }] });
    const q = decodeProfile(hostsWith({}));
    expect(q.hosts[1]).toEqual({ name: 'h2', address: '10.77.0.2', port: 22, slots: 1, workdir: '.cohort', env: {} });
    expect(profileWorldSize(q)).toBe(2);
  });

  it('names the profile, host and field in errors', () => {
    expect(() => decodeProfile(hostsWith({ port: 70000 }))).toThrow('profile "lab": hosts[1] (h2).port: must be ≤ 65535, got 70000');
    expect(() => decodeProfile(hostsWith({ slots: 0 }))).toThrow('profile "lab": hosts[1] (h2).slots: must be ≥ 1, got 0');
    expect(() => decodeProfile(hostsWith({ slots: 2, gpus: [0] }))).toThrow(/hosts\[1\] \(h2\)\.gpus: lists 1 GPU\(s\) but slots is 2/);
    expect(() => decodeProfile(hostsWith({ slots: 2, gpus: [0, -1] }))).toThrow(/hosts\[1\] \(h2\)\.gpus\[1\]: expected a GPU index/);
    expect(() => decodeProfile(hostsWith({ env: { 'BAD-NAME': 'x' } }))).toThrow(/hosts\[1\] \(h2\)\.env: "BAD-NAME" is not a valid/);
    expect(() => decodeProfile(hostsWith({ proxyJump: 'root@h1:99999' }))).toThrow(/hosts\[1\] \(h2\)\.proxyJump: hop 1 port must be 1\.\.65535/);
    expect(() => decodeProfile(hostsWith({ colour: 'red' }))).toThrow(/hosts\[1\] \(h2\)\.colour: unknown field/);
    expect(() => decodeProfile({ name: 'lab', hosts: [lab.hosts[0], { address: 'x' }] })).toThrow('profile "lab": hosts[1].name: expected a string, got nothing');
    expect(() => decodeProfile({ name: 'lab', hosts: [] })).toThrow('profile "lab": hosts: needs at least one host');
    expect(() => decodeProfile(hostsWith({ name: 'h1' }))).toThrow(/hosts\[1\] \(h1\)\.name: duplicate host name \(also hosts\[0\]\)/);
    expect(() => decodeProfile({ ...lab, name: 'local' })).toThrow(/"local" is reserved/);
    expect(() => decodeProfile({ ...lab, defaults: { batchSize: -1 } })).toThrow('profile "lab": defaults.batchSize: must be ≥ 1, got -1');
    expect(() => decodeProfile({ ...lab, defaults: { fp16: true, bf16: true } })).toThrow(/defaults\.bf16: choose one/);
    try {
      decodeProfile(hostsWith({ port: 'x' }));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProfileError);
      expect(err).toMatchObject({ profile: 'lab', host: 'h2', field: 'hosts[1] (h2).port' });
    }
  });

  it('keeps run defaults partial and applies them under overrides', () => {
    const p = decodeProfile({ ...lab, defaults: { batchSize: 32, steps: 100 } });
    expect(p.defaults).toEqual({ batchSize: 32, steps: 100 });
    expect(resolveRunConfig(p).batchSize).toBe(32);
    expect(resolveRunConfig(p, { batchSize: 8 }).batchSize).toBe(8);
    const byEpochs = resolveRunConfig(p, { epochs: 2 });
    expect([byEpochs.steps, byEpochs.epochs]).toEqual([0, 2]);
  });

  it('--require-gpu as a profile setting (defaults.requireGpu): every run of the profile asks for it; a bad value names the field', () => {
    const p = decodeProfile({ ...lab, defaults: { requireGpu: true } });
    expect(resolveRunConfig(p).requireGpu).toBe(true);
    expect(resolveRunConfig(p, { requireGpu: false }).requireGpu).toBe(false); // an explicit ask wins
    expect(resolveRunConfig(decodeProfile(lab)).requireGpu).toBe(false);
    expect(() => decodeProfile({ ...lab, defaults: { requireGpu: 'yes' } })).toThrow(/profile "lab": defaults\.requireGpu: /);
  });

  it('parses ProxyJump chains', () => {
    expect(parseProxyJump('h1')).toEqual([{ host: 'h1' }]);
    expect(parseProxyJump('alice@gw.example:2222,[fe80::1]:22')).toEqual([{ user: 'alice', host: 'gw.example', port: 2222 }, { host: 'fe80::1', port: 22 }]);
    expect(() => parseProxyJump('a b')).toThrow(/not \[user@\]host\[:port\]/);
    expect(() => decodeProfile(hostsWith({ proxyJump: 'h2' }))).toThrow(/cannot jump through itself/);
  });

  it('builds the built-in local profile', () => {
    const p = localProfile(3);
    expect(p.name).toBe('local');
    expect(profileWorldSize(p)).toBe(3);
    expect(() => decodeProfile(p, { allowLocal: true })).not.toThrow();
  });
});

describe('Slurm profiles (scheduler)', () => {
  const login = { name: 'login', address: 'login.example.org', user: 'me', identityFile: '~/.ssh/id_ed25519', workdir: '/scratch/me/cohort' };
  const issue = { name: 'hpc', scheduler: { kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 4, gpusPerNode: 4, timeLimit: '02:00:00', account: 'proj1', extraArgs: ['--constraint=a100'] }, hosts: [login] };

  it('accepts the issue example; world size = nodes × tasksPerNode', () => {
    const p = decodeProfile(issue);
    expect(p.scheduler).toEqual(issue.scheduler);
    expect(p.hosts).toEqual([{ ...login, port: 22, slots: 1, env: {} }]);
    expect(profileWorldSize(p)).toBe(8);
    expect(decodeProfile({ name: 'min', scheduler: { kind: 'slurm' }, hosts: [login] }).scheduler).toEqual({ kind: 'slurm', nodes: 1, tasksPerNode: 1, extraArgs: [] });
  });

  it('names the field and the fix', () => {
    const s = (patch: Record<string, unknown>) => ({ ...issue, scheduler: { ...issue.scheduler, ...patch } });
    expect(() => decodeProfile(s({ kind: 'pbs' }))).toThrow('profile "hpc": scheduler.kind: unsupported scheduler "pbs"; the one supported is "slurm"');
    expect(() => decodeProfile(s({ nodes: 0 }))).toThrow('profile "hpc": scheduler.nodes: must be ≥ 1, got 0');
    expect(() => decodeProfile(s({ timeLimit: '2h' }))).toThrow(/scheduler\.timeLimit: expected Slurm's time format .* got "2h"/);
    expect(() => decodeProfile(s({ partition: 'gpu queue' }))).toThrow(/scheduler\.partition: expected a partition name \(sinfo -s lists them\)/);
    expect(() => decodeProfile(s({ extraArgs: ['--nodes=4'] }))).toThrow('profile "hpc": scheduler.extraArgs[0]: --nodes is set from scheduler.nodes; set that field instead');
    expect(() => decodeProfile(s({ extraArgs: ['--output=x'] }))).toThrow(/extraArgs\[0\]: --output is set by Cohort for every run; remove it/);
    expect(() => decodeProfile(s({ extraArgs: ['constraint'] }))).toThrow(/extraArgs\[0\]: expected an sbatch option such as "--constraint=a100"/);
    expect(() => decodeProfile(s({ queue: 'x' }))).toThrow(/scheduler\.queue: unknown field/);
    expect(() => decodeProfile({ ...issue, hosts: [login, { ...login, name: 'login2' }] })).toThrow(/hosts: a Slurm profile has exactly one host, the login node \(got 2\)/);
    expect(() => decodeProfile({ ...issue, hosts: [{ ...login, slots: 4 }] })).toThrow(/hosts\[0\] \(login\)\.slots: the login node runs no ranks; give ranks per node as scheduler\.tasksPerNode/);
    expect(() => decodeProfile({ ...issue, masterAddr: '10.0.0.1' })).toThrow(/masterAddr: a Slurm run takes its rendezvous from the allocation/);
  });

  it("reads extraArgs as sbatch's getopt does: attached short values, clusters, long prefixes (issue 22 item 16)", () => {
    const s = (extraArgs: string[]) => ({ ...issue, scheduler: { ...issue.scheduler, extraArgs } });
    expect(() => decodeProfile(s(['-Jx']))).toThrow('scheduler.extraArgs[0]: "-Jx" (sbatch reads it as --job-name=x) is set by Cohort for every run; remove it');
    expect(() => decodeProfile(s(['-pnosuchpart']))).toThrow('scheduler.extraArgs[0]: "-pnosuchpart" (sbatch reads it as --partition=nosuchpart) is set from scheduler.partition; set that field instead');
    expect(() => decodeProfile(s(['--constraint=a100', '--job=x']))).toThrow('scheduler.extraArgs[1]: "--job=x" (sbatch reads it as --job-name=x) is set by Cohort');
    expect(() => decodeProfile(s(['-vHN2']))).toThrow(/"-vHN2" \(sbatch reads it as --nodes=2\) is set from scheduler\.nodes/);
    expect(() => decodeProfile(s(['--part=gpu']))).toThrow(/--partition=gpu\) is set from scheduler\.partition/);
    expect(() => decodeProfile(s(['--ntasks-per-n=2']))).toThrow(/--ntasks-per-node=2\) is set from scheduler\.tasksPerNode/);
    expect(() => decodeProfile(s(['-p']))).toThrow('scheduler.extraArgs[0]: -p is set from scheduler.partition');
    // Not Cohort's: an exact name wins over the owned ones it prefixes; values that merely contain a letter.
    for (const ok of [['--gpus=2'], ['--time-min=5'], ['-C', 'a100'].slice(0, 1), ['-Ca100'], ['-vH'], ['--constraint=p'], ['-wnode-p1'], ['--exclusive']]) {
      expect(decodeProfile(s(ok)).scheduler!.extraArgs, ok.join(' ')).toEqual(ok);
    }
  });
});
