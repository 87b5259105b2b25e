// Issue 21 item 5 in the dashboard: a profile's `spare: true` host is not in the Launch view's world
// preview (it runs no ranks until a restart needs it), and an edit of the profile keeps the field.
import { describe, expect, it } from 'vitest';
import { decodeProfile } from '../../../electron/common';
import { draftFrom, draftToInput } from './profile-draft';
import { previewWorld } from './world';

const p = decodeProfile({ name: 'lab', hosts: [{ name: 'h1', address: 'a1' }, { name: 'h2', address: 'a2' }, { name: 'h3', address: 'a3', spare: true }] });

describe('spare hosts in the dashboard', () => {
  it('the world preview leaves the spare out: 2 ranks on h1, h2', () => {
    expect(previewWorld(p, 1).map((h) => [h.name, h.ranks])).toEqual([['h1', [0]], ['h2', [1]]]);
  });
  it('a profile edited in the form keeps spare: true', () => {
    const again = decodeProfile(draftToInput(draftFrom(p)));
    expect(again.hosts.map((h) => h.spare ?? false)).toEqual([false, false, true]);
  });
});
