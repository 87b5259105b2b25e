import { describe, expect, it } from 'vitest';
import { checkDraft, emptyHost, fieldKey, type ProfileDraft } from './profile-draft';

const draft = (hosts: Partial<ReturnType<typeof emptyHost>>[], name = 'lab'): ProfileDraft => ({ name, masterAddr: '', rest: {}, hosts: hosts.map((h, i) => ({ ...emptyHost(i), ...h })) });

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
