// Issue 24 defect 8 in milliseconds: a recorded run is reached with its own profile copy; the
// store is asked only for records without one (or with a damaged one).
import { describe, expect, it } from 'vitest';
import type { Profile, RunMeta } from '../../common';
import { runProfile } from './run-profile';

const snapshot = { name: 'gone', hosts: [{ name: 'h1', address: '10.0.0.1', port: 22, user: 'u', slots: 1, workdir: '/w' }] };
const meta = (extra: Partial<RunMeta>) => ({ id: 'r1', profile: 'gone', startedAt: '', status: 'running', config: {}, hosts: [], worldSize: 1, versions: {}, ...extra }) as unknown as RunMeta;
const store = (known: Profile[] = []) => ({
  asked: [] as string[],
  async get(name: string): Promise<Profile> {
    this.asked.push(name);
    const p = known.find((x) => x.name === name);
    if (!p) throw new Error(`no profile named "${name}"`);
    return p;
  },
});

describe('runProfile', () => {
  it('uses the run\'s own copy, even when the profile is gone from the store', async () => {
    const s = store();
    const p = await runProfile(meta({ profileSnapshot: snapshot }), s);
    expect(p?.hosts.map((h) => h.address)).toEqual(['10.0.0.1']);
    expect(s.asked).toEqual([]);
  });
  it('asks the store for a record without a copy; none for local', async () => {
    const s = store([snapshot as unknown as Profile]);
    expect((await runProfile(meta({}), s))?.name).toBe('gone');
    expect(s.asked).toEqual(['gone']);
    expect(await runProfile(meta({ profile: 'local' }), s)).toBeUndefined();
    await expect(runProfile(meta({ profileSnapshot: { name: 'x', hosts: 'not hosts' } }), store())).rejects.toThrow(/no profile named "gone"/);
  });
});
