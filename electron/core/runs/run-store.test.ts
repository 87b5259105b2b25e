import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { makeEvent } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';
import { RunStore } from './run-store';

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

it('writes run records private to the user (issue 14 item 7: the profile snapshot may carry secrets)', () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  const meta = { id: 'r1', profile: 'p', startedAt: new Date().toISOString(), status: 'running', config: {}, hosts: [], worldSize: 1, versions: {}, profileSnapshot: { hosts: [{ env: { API_KEY: 'secret' } }] } } as unknown as RunMeta;
  const rec = store.create(meta);
  rec.record(makeEvent({ type: 'log', level: 'info', host: 'h1', rank: 0, message: 'hi' }));
  rec.update({ status: 'ok' });
  rec.close();
  const mode = (p: string) => statSync(join(dir!, 'runs', 'r1', p)).mode & 0o777;
  expect({ dir: mode(''), logs: mode('logs'), meta: mode('meta.json'), events: mode('events.jsonl'), log: mode('logs/h1-0.log') }).toEqual({ dir: 0o700, logs: 0o700, meta: 0o600, events: 0o600, log: 0o600 });
  expect(store.meta('r1')?.status).toBe('ok');
});
