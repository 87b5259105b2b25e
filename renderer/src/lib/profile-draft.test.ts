import { describe, expect, it } from 'vitest';
import { decodeProfile } from '../../../electron/common';
import { draftFrom, draftToInput } from './profile-draft';

describe('profile draft', () => {
  it('keeps a Slurm profile\'s scheduler through an edit (the form has no scheduler fields yet)', () => {
    const p = decodeProfile({ name: 'hpc', scheduler: { kind: 'slurm', partition: 'gpu', nodes: 2, tasksPerNode: 4 }, hosts: [{ name: 'login', address: 'login.example.org', workdir: '/scratch/me' }] });
    const d = draftFrom(p);
    d.hosts[0]!.user = 'me';
    const edited = decodeProfile(draftToInput(d));
    expect(edited.scheduler).toEqual(p.scheduler);
    expect(edited.hosts[0]!.user).toBe('me');
  });
});
