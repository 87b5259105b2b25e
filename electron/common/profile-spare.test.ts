// Issue 21 item 5, the profile side of "bad node out": a host marked `spare: true` runs nothing at
// the start and takes a lost follower host's ranks on a restart. The schema's checks and the world.
import { describe, expect, it } from 'vitest';
import { decodeProfile, profileWorldSize, spareHosts, worldHosts } from './profile';

const host = (name: string, extra: Record<string, unknown> = {}) => ({ name, address: `10.77.0.${name.slice(1)}`, ...extra });

describe('profile: spare hosts', () => {
  it('a spare host is kept, runs no ranks (world size), and is listed apart from the world', () => {
    const p = decodeProfile({ name: 'lab', hosts: [host('h1'), host('h2'), host('h3'), host('h4', { spare: true })] });
    expect(p.hosts[3]).toMatchObject({ name: 'h4', spare: true });
    expect(p.hosts[1]).not.toHaveProperty('spare');
    expect(profileWorldSize(p)).toBe(3);
    expect(worldHosts(p).map((h) => h.name)).toEqual(['h1', 'h2', 'h3']);
    expect(spareHosts(p).map((h) => h.name)).toEqual(['h4']);
    // spare: false is the same as no field
    expect(decodeProfile({ name: 'lab', hosts: [host('h1'), host('h2', { spare: false })] }).hosts[1]).not.toHaveProperty('spare');
  });

  it('bad input: each error names the profile, the host and the field, and says what to do', () => {
    expect(() => decodeProfile({ name: 'lab', hosts: [host('h1'), host('h2', { spare: 'yes' })] })).toThrow(/profile "lab": hosts\[1\] \(h2\)\.spare: expected/);
    expect(() => decodeProfile({ name: 'lab', hosts: [host('h1', { spare: true }), host('h2')] })).toThrow('profile "lab": hosts[0] (h1).spare: the first host is the leader (rank 0, the run\'s record and rendezvous) and cannot be a spare; put a spare host after it');
    expect(() => decodeProfile({ name: 'lab', hosts: [host('h1'), host('h2', { spare: true })] })).toThrow(/hosts\[1\] \(h2\)\.spare: a spare takes the ranks of a lost follower host, and this profile has none/);
    expect(() => decodeProfile({ name: 'lab', hosts: [host('h1'), host('h2', { slots: 2 }), host('h3', { spare: true })] })).toThrow('profile "lab": hosts[2] (h3).spare: a spare takes all the ranks of a lost follower host: it needs slots ≥ 2 (the largest follower\'s), has 1; raise its slots or remove spare');
  });
});
