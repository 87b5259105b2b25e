// Bad node out before the first step (issue 21 item 5): which hosts `cohort run --check` leaves out
// for the check's errors, and the profile the run then plans (check-spares.ts).
import { describe, expect, it } from 'vitest';
import type { CheckProblem } from '../../trainer/protocol/check';
import { checkErrorsOn, sparesFor, withSpares } from './check-spares';
import { ProfileError, type Profile, type ProfileHost } from './profile';

const host = (name: string, extra: Partial<ProfileHost> = {}): ProfileHost => ({ name, address: `10.0.0.${name.slice(1)}`, port: 22, user: 'u', slots: 1, workdir: `/w/${name}`, env: {}, ...extra });
const profile = (hosts: ProfileHost[]): Profile => ({ name: 'p', hosts }) as Profile;
const trio = profile([host('h1'), host('h2'), host('h3'), host('h4', { spare: true, slots: 2, gpus: [0, 1], env: { A: '4' } })]);
const err = (h: string, code = 'port-blocked'): CheckProblem => ({ severity: 'error', host: h, code, message: `${h}: ${code}`, hint: '' });
const warn = (h: string): CheckProblem => ({ severity: 'warning', host: h, code: 'gpu-ecc', message: '', hint: '' });

describe('sparesFor: the hosts a run with --check leaves out', () => {
  it('errors only on one follower, a spare without errors: that follower out, the spare in', () => {
    expect(sparesFor(trio, [err('h3'), err('h3', 'mismatch-engine'), warn('h2'), warn('h4')])).toEqual([{ excluded: 'h3', replacement: 'h4' }]);
  });

  it('refused (undefined) when a spare cannot help: no error, the leader, the whole cluster, more erring followers than spares, an erring spare, no spare, Slurm', () => {
    expect(sparesFor(trio, [warn('h3')])).toBeUndefined();
    expect(sparesFor(trio, [err('h1')])).toBeUndefined();
    expect(sparesFor(trio, [err('h3'), err('*', 'mismatch-bundle')])).toBeUndefined();
    expect(sparesFor(trio, [err('h2'), err('h3')])).toBeUndefined();
    expect(sparesFor(trio, [err('h3'), err('h4', 'spare-unreachable')])).toBeUndefined();
    expect(sparesFor(profile([host('h1'), host('h2'), host('h3')]), [err('h3')])).toBeUndefined();
    expect(sparesFor({ ...trio, scheduler: { kind: 'slurm', nodes: 2, tasksPerNode: 1 } } as Profile, [err('h3')])).toBeUndefined(); // h3: no node of an allocation
  });
});

describe('sparesFor on a Slurm profile: the nodes left out with sbatch --exclude', () => {
  const hpc = { name: 'hpc', hosts: [host('login')], scheduler: { kind: 'slurm', nodes: 2, tasksPerNode: 1, extraArgs: [] } } as unknown as Profile;
  const alloc = (spares?: string[]) => ({ jobId: '7', nodes: ['n1', 'n2'], ...(spares ? { spares } : {}) });

  it('errors only on nodes of the allocation, as many other usable nodes in the partition: those nodes out, no replacement named (Slurm places the run)', () => {
    expect(sparesFor(hpc, [err('n2'), err('n2', 'check-host-failed'), warn('n1')], alloc(['n3']))).toEqual([{ excluded: 'n2' }]);
    expect(sparesFor(hpc, [err('n1'), err('n2')], alloc(['n3', 'n4']))).toEqual([{ excluded: 'n1' }, { excluded: 'n2' }]); // node 0 too: Slurm picks another
  });

  it('refused (undefined): no spare node, fewer than the nodes out, spares unknown, an error on the login node or the whole allocation, no allocation', () => {
    expect(sparesFor(hpc, [err('n2')], alloc([]))).toBeUndefined();
    expect(sparesFor(hpc, [err('n1'), err('n2')], alloc(['n3']))).toBeUndefined();
    expect(sparesFor(hpc, [err('n2')], alloc())).toBeUndefined();
    expect(sparesFor(hpc, [err('n2'), err('login', 'slurm-no-allocation')], alloc(['n3']))).toBeUndefined();
    expect(sparesFor(hpc, [err('n2'), err('*', 'mismatch-bundle')], alloc(['n3']))).toBeUndefined();
    expect(sparesFor(hpc, [err('n2')])).toBeUndefined();
    expect(sparesFor(hpc, [warn('n2')], alloc(['n3']))).toBeUndefined();
  });
});

describe('checkErrorsOn: why a host is left out', () => {
  it("the first error's code and message, and how many more; undefined without an error on it", () => {
    expect(checkErrorsOn([warn('n2'), err('n2'), err('n2', 'check-host-failed'), err('n1')], 'n2')).toBe('cohort check found 2 error(s) on it: port-blocked: n2: port-blocked (and 1 more)');
    expect(checkErrorsOn([warn('n2')], 'n2')).toBeUndefined();
  });
});

describe('withSpares: the profile the run plans', () => {
  it("the spare takes the excluded host's place with that host's slots (its own address, workdir, env, GPUs), no longer a spare; the host is out", () => {
    const { profile: p, moves } = withSpares(trio, ['h2']);
    expect(moves).toEqual([{ excluded: 'h2', replacement: 'h4' }]);
    expect(p.hosts.map((h) => h.name)).toEqual(['h1', 'h4', 'h3']);
    expect(p.hosts[1]).toEqual({ name: 'h4', address: '10.0.0.4', port: 22, user: 'u', slots: 1, gpus: [0], workdir: '/w/h4', env: { A: '4' } });
    expect(trio.hosts.map((h) => h.name)).toEqual(['h1', 'h2', 'h3', 'h4']); // the stored profile is not changed
  });

  it('refuses, naming the host, the leader, a host not in the world, and a host no spare is left for', () => {
    expect(() => withSpares(trio, ['h1'])).toThrow(/h1 is the leader/);
    expect(() => withSpares(trio, ['h9'])).toThrow(/h9 is not a host that runs ranks in this profile \(hosts: h1, h2, h3, h4\)/);
    expect(() => withSpares(trio, ['h4'])).toThrow(ProfileError);
    expect(() => withSpares(trio, ['h2', 'h3'])).toThrow(/no spare host left to take h3's ranks/);
  });
});
