import { describe, expect, it } from 'vitest';
import { decodeProfile } from '../../../electron/common';
import { checkDraft, draftFrom, draftToInput, emptyDraft, emptyHost, fieldKey, splitSbatchArgs, type ProfileDraft, type SlurmDraft } from './profile-draft';

const draft = (hosts: Partial<ReturnType<typeof emptyHost>>[], name = 'lab'): ProfileDraft => ({ ...emptyDraft(name), hosts: hosts.map((h, i) => ({ ...emptyHost(i), ...h })) });
const slurmDraft = (s: Partial<SlurmDraft>, login: Partial<ReturnType<typeof emptyHost>> = {}): ProfileDraft => {
  const d = draft([{ name: 'login', address: 'login.example.org', workdir: '/scratch/me', ...login }], 'hpc');
  return { ...d, scheduler: 'slurm', slurm: { ...d.slurm, ...s } };
};

describe('profile form validation', () => {
  it('maps error paths onto form fields, host names with dots included', () => {
    expect(fieldKey('hosts[1] (gpu.lab).port')).toBe('h1.port');
    expect(fieldKey('hosts[0] (a.b.c).gpus[1]')).toBe('h0.gpus');
    expect(fieldKey('hosts[2]')).toBe('h2.name');
    expect(fieldKey('name')).toBe('name');
    expect(fieldKey('masterAddr')).toBe('masterAddr');
  });

  it('reports every wrong field under its own key, not only the first', () => {
    const c = checkDraft(draft([{ name: 'gpu.one', address: '', port: '70000' }, { address: 'h2', slots: '0', user: 'a b' }], 'bad name'));
    expect(c.profile).toBeNull();
    expect(Object.keys(c.errors).sort()).toEqual(['h0.address', 'h0.port', 'h1.slots', 'h1.user', 'name']);
    expect(c.errors['h0.port']).toMatch(/65535/);
    expect(c.message).toMatch(/name/);
  });

  it('a valid form decodes to a profile with no errors', () => {
    const c = checkDraft(draft([{ address: '10.0.0.5' }]));
    expect(c.errors).toEqual({});
    expect(c.profile?.hosts[0]?.address).toBe('10.0.0.5');
  });
});

describe('profile draft', () => {
  it('keeps a Slurm profile\'s scheduler through an edit of its login node', () => {
    const p = decodeProfile({ name: 'hpc', scheduler: { kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 4, gpusPerNode: 4, timeLimit: '02:00:00', account: 'proj1', extraArgs: ['--constraint=a100', '--comment=a b'] }, hosts: [{ name: 'login', address: 'login.example.org', workdir: '/scratch/me' }] });
    const d = draftFrom(p);
    expect(d.scheduler).toBe('slurm');
    d.hosts[0]!.user = 'me';
    const edited = decodeProfile(draftToInput(d));
    expect(edited.scheduler).toEqual(p.scheduler);
    expect(edited.hosts[0]!.user).toBe('me');
  });
});

describe('Slurm profile form', () => {
  it('builds the scheduler block and one login host (no slots, no master address) from the fields', () => {
    const d = slurmDraft({ partition: 'debug', nodes: '2', tasksPerNode: '3', timeLimit: '10', extraArgs: '--constraint=a100 --qos=normal\n--exclusive' });
    d.hosts.push({ ...emptyHost(1), address: 'other' }); // hosts of the SSH choice are kept but not sent
    d.masterAddr = '10.0.0.1';
    const c = checkDraft(d);
    expect(c.errors).toEqual({});
    expect(c.profile?.scheduler).toEqual({ kind: 'slurm', partition: 'debug', nodes: 2, tasksPerNode: 3, timeLimit: '10', extraArgs: ['--constraint=a100', '--qos=normal', '--exclusive'] });
    expect(c.profile?.hosts.map((h) => h.name)).toEqual(['login']);
    expect(c.profile?.masterAddr).toBeUndefined();
    // Back to SSH hosts: both hosts and the master address again, no scheduler.
    const ssh = checkDraft({ ...d, scheduler: 'none' });
    expect(ssh.profile?.scheduler).toBeUndefined();
    expect(ssh.profile?.hosts).toHaveLength(2);
  });

  it('puts each wrong scheduler field\'s error under that field (the one profile decoder)', () => {
    const c = checkDraft(slurmDraft({ partition: 'no such', nodes: '0', tasksPerNode: 'x', gpusPerNode: '-1', timeLimit: '2 hours', account: 'a b', extraArgs: '--nodes=3' }, { address: '' }));
    expect(c.profile).toBeNull();
    expect(Object.keys(c.errors).sort()).toEqual(['h0.address', 'scheduler.account', 'scheduler.extraArgs', 'scheduler.gpusPerNode', 'scheduler.nodes', 'scheduler.partition', 'scheduler.tasksPerNode', 'scheduler.timeLimit']);
    expect(c.errors['scheduler.extraArgs']).toMatch(/--nodes is set from scheduler\.nodes; set that field instead/);
    expect(c.errors['scheduler.timeLimit']).toMatch(/HH:MM:SS/);
    expect(c.errors['scheduler.nodes']).toMatch(/≥ 1|at least 1|>= 1/);
  });

  it('maps scheduler error paths onto its fields', () => {
    expect(fieldKey('scheduler.partition')).toBe('scheduler.partition');
    expect(fieldKey('scheduler.extraArgs[1]')).toBe('scheduler.extraArgs');
    expect(fieldKey('scheduler')).toBe('scheduler.kind');
  });

  it('splits sbatch options on new lines and before each option, keeping spaces inside a value', () => {
    expect(splitSbatchArgs(' --constraint=a100  --exclusive\n\n-q normal --comment=a b ')).toEqual(['--constraint=a100', '--exclusive', '-q normal', '--comment=a b']);
  });
});
