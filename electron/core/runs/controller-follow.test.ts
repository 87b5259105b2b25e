// followReader: the bytes of one `run-follow` → the events they complete, given back to the
// controller (which reads the command's stdout itself: ARCHITECTURE.md "Two walks", walk b). What a
// re-follow relies on is pinned here in milliseconds: the offset counts whole lines only, so a
// chunk cut mid-line is never counted twice nor skipped; a host command's failure line is kept for
// its exit code, not told as an event; a damaged line becomes a warning in its place.
import { describe, expect, it } from 'vitest';
import { encodeEvent, makeEvent, type CohortEvent } from '../../../trainer/protocol';
import { followReader, type Follow } from './controller-follow';
import type { HostLaunch } from './run-plan';

const follow = (offset = 0): Follow => ({ host: { host: 'h1' } as HostLaunch, offset, ended: false, lastContact: 0 });
const step = (n: number): CohortEvent => makeEvent({ type: 'log', level: 'info', message: `line ${n}` }, 1000 + n);
const line = (e: CohortEvent) => encodeEvent(e) + '\n';

describe('followReader', () => {
  it('hands back each event once, in order, and counts only whole lines into the offset', () => {
    const f = follow(100);
    const read = followReader(f);
    const text = line(step(1)) + line(step(2)) + line(step(3));
    const cut1 = line(step(1)).length + 5; // inside line 2
    const cut2 = text.length - 3; // inside line 3
    const bytes = Buffer.from(text);
    const a = read(bytes.subarray(0, cut1));
    expect(a.map((e) => (e as { message: string }).message)).toEqual(['line 1']);
    expect(f.offset).toBe(100 + line(step(1)).length);
    const b = read(bytes.subarray(cut1, cut2));
    expect(b.map((e) => (e as { message: string }).message)).toEqual(['line 2']);
    expect(f.offset).toBe(100 + line(step(1)).length + line(step(2)).length);
    const c = read(bytes.subarray(cut2));
    expect(c.map((e) => (e as { message: string }).message)).toEqual(['line 3']);
    expect(f.offset).toBe(100 + bytes.length);
    expect(f.lastContact).toBeGreaterThan(0);
  });

  it('a chunk with no newline moves no offset until its line ends', () => {
    const f = follow();
    const read = followReader(f);
    const bytes = Buffer.from(line(step(7)));
    expect(read(bytes.subarray(0, 4))).toEqual([]);
    expect(read(bytes.subarray(4, 9))).toEqual([]);
    expect(f.offset).toBe(0);
    expect(read(bytes.subarray(9))).toHaveLength(1);
    expect(f.offset).toBe(bytes.length);
  });

  it("keeps the host command's failure line for its exit code, and turns a damaged line into a warning naming the host", () => {
    const f = follow();
    const read = followReader(f);
    const out = read(Buffer.from('{"error":{"code":"no-such-run","message":"no record of run r1"}}\n{"type":"step", broken\n' + line(step(1))));
    expect(f.hostError).toEqual({ code: 'no-such-run', message: 'no record of run r1' });
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ type: 'log', level: 'warn', host: 'h1' });
    expect((out[0] as { message: string }).message).toMatch(/^h1: record line is not a valid event/);
    expect(out[1]).toMatchObject({ type: 'log', message: 'line 1' });
  });
});
