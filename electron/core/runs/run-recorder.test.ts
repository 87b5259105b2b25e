// Issue 24 defect 1 in milliseconds: an attach's replay (RunStore.reopen) never shrinks the local
// history; it replaces events.jsonl only once it holds as many events, and a short one leaves no file behind.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeEvent } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';
import { RunStore } from './run-store';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const ev = (n: number) => makeEvent({ type: 'log', level: 'info', message: `e${n}` });
const lines = (p: string) => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message: string }).message);

describe('RunStore.reopen (an attach replaying the hosts\' record)', () => {
  it('a short replay leaves the history whole; a whole one replaces it and writing goes on there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-recorder-'));
    dirs.push(dir);
    const store = new RunStore(dir);
    const meta = { id: '20261126-000000-abcd', profile: 'local', startedAt: new Date().toISOString(), status: 'running', config: {}, hosts: [], worldSize: 1, versions: {} } as unknown as RunMeta;
    const first = store.create(meta);
    for (let i = 0; i < 5; i++) first.record(ev(i));
    first.close();
    const history = join(dir, meta.id, 'events.jsonl');

    const blind = store.reopen(meta);
    blind.record(ev(0));
    blind.record(ev(1));
    expect(lines(history)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']); // untouched while the replay is shorter
    expect(blind.holdsHistory).toBe(false);
    expect(blind.events().map((e) => (e as { message: string }).message)).toEqual(['e0', 'e1']); // what this follow replayed (its seq)
    blind.close();
    expect(lines(history)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    expect(readdirSync(join(dir, meta.id)).filter((f) => f.startsWith('events.'))).toEqual(['events.jsonl']);

    const whole = store.reopen(meta);
    for (let i = 0; i < 5; i++) whole.record(ev(i));
    expect(whole.holdsHistory).toBe(true);
    whole.record(ev(5));
    whole.close();
    expect(lines(history)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
    expect(readdirSync(join(dir, meta.id)).filter((f) => f.startsWith('events.'))).toEqual(['events.jsonl']);
  });
});
