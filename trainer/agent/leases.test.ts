// Slot leases, in-process (the quick tier): all or none, take-over of stale and damaged leases,
// release. The race between processes is test/host/lease-race.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimSlots, decodeLease, releaseSlots } from './leases';

const root = mkdtempSync(join(tmpdir(), 'cohort-leases-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const wd = () => join(root, `w${n++}`);
/** This test process counts as a live agent of a run whose id is on its command line. */
const LIVE = readFileSync('/proc/self/cmdline', 'utf8').split('\0')[0]!;
const deadPid = () => spawnSync('true').pid!;
const heldFiles = (w: string, slot: number) => readdirSync(join(w, 'leases', `slot-${slot}`));

describe('claimSlots', () => {
  it('claims every slot or none, and says who holds the busy one', () => {
    const w = wd();
    expect(claimSlots(w, LIVE, [1])).toEqual({ ok: true, warnings: [] });
    const r = claimSlots(w, 'other', [0, 1, 2]);
    expect(r).toMatchObject({ ok: false, busyBy: LIVE, slot: 1 });
    // slot 0 was taken on the way and given back: free for a third run
    expect(claimSlots(w, 'third', [0]).ok).toBe(true);
  });

  it('a slot it already holds is held (the agent after run-start claimed for it)', () => {
    const w = wd();
    expect(claimSlots(w, LIVE, [0, 1]).ok).toBe(true);
    expect(claimSlots(w, LIVE, [0, 1]).ok).toBe(true);
    expect(heldFiles(w, 0)).toHaveLength(1);
  });

  it('a stale lease (its agent dead, or another boot) is taken over', () => {
    const w = wd();
    expect(claimSlots(w, 'gone', [0], { pid: deadPid() }).ok).toBe(true);
    expect(claimSlots(w, LIVE, [0])).toEqual({ ok: true, warnings: [] });
  });

  it('takeOver false leaves a stale lease for the agent (run-start)', () => {
    const w = wd();
    expect(claimSlots(w, 'gone', [0], { pid: deadPid() }).ok).toBe(true);
    expect(claimSlots(w, LIVE, [0], { takeOver: false })).toMatchObject({ ok: false, busyBy: 'gone' });
  });

  it.each([
    ['null', 'null'],
    ['truncated', '{"runId":"x","pi'],
    ['garbage', '\u0000\u0000\u0000'],
    ['empty', ''],
    ['an object without pid', '{"runId":"x","bootId":"b","slot":0,"at":0}'],
  ])('a damaged lease file (%s) is stale: taken over and named in a warning, never thrown', (_what, text) => {
    const w = wd();
    mkdirSync(join(w, 'leases', 'slot-0'), { recursive: true });
    const file = join(w, 'leases', 'slot-0', 'held-00aa.json');
    writeFileSync(file, text);
    const r = claimSlots(w, LIVE, [0]);
    expect(r.ok).toBe(true);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain(file);
    expect(r.warnings[0]).toContain('damaged');
  });

  it('a file where the slot directory belongs is damaged too', () => {
    const w = wd();
    mkdirSync(join(w, 'leases'), { recursive: true });
    writeFileSync(join(w, 'leases', 'slot-0'), 'null');
    const r = claimSlots(w, LIVE, [0]);
    expect(r.ok).toBe(true);
    expect(r.warnings[0]).toContain('slot-0');
  });

  it('a live lease of the older form (slot-N.json, an agent of the older bundle) is respected; a stale one ignored', () => {
    const w = wd();
    mkdirSync(join(w, 'leases'), { recursive: true });
    const boot = spawnSync('cat', ['/proc/sys/kernel/random/boot_id'], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(join(w, 'leases', 'slot-0.json'), JSON.stringify({ runId: LIVE, pid: process.pid, bootId: boot, slot: 0, at: 0 }));
    expect(claimSlots(w, 'other', [0])).toMatchObject({ ok: false, busyBy: LIVE });
    writeFileSync(join(w, 'leases', 'slot-0.json'), 'null');
    expect(claimSlots(w, 'other', [0]).ok).toBe(true);
  });

  it('release removes only this run and pid\'s leases, and frees the slot', () => {
    const w = wd();
    expect(claimSlots(w, LIVE, [0, 1]).ok).toBe(true);
    releaseSlots(w, 'not-me', [0, 1]);
    expect(claimSlots(w, 'other', [0]).ok).toBe(false);
    releaseSlots(w, LIVE, [0]);
    expect(readdirSync(join(w, 'leases'))).not.toContain('slot-0');
    expect(claimSlots(w, 'other', [0]).ok).toBe(true);
    expect(claimSlots(w, 'other', [1]).ok).toBe(false);
  });
});

describe('decodeLease', () => {
  it('reads a lease, names what is wrong with anything else', () => {
    expect(decodeLease('{"runId":"r","pid":3,"bootId":"b","slot":0,"at":1}')).toEqual({ runId: 'r', pid: 3, bootId: 'b', slot: 0, at: 1 });
    expect(decodeLease('null')).toEqual({ damaged: 'not a lease object: null' });
    expect(decodeLease('[1]')).toMatchObject({ damaged: expect.stringContaining('not a lease object') });
    expect(decodeLease('{"runId":1}')).toEqual({ damaged: 'field runId missing or of the wrong type' });
  });
});
