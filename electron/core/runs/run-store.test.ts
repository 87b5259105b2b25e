import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

const stepEvent = (n: number, rate: number) => makeEvent({ type: 'step', step: n, epoch: 0, loss: 2, globalSamplesPerSec: rate, stepTimeMs: 10, worldSize: 1, lr: 0.001, memory: [] });
const baseMeta = (id: string, status: string): RunMeta => ({ id, profile: 'local', startedAt: '2026-11-23T10:00:00.000Z', status, config: {}, hosts: [], worldSize: 1, versions: {} }) as unknown as RunMeta;

it('a rename persists in user.json (atomically, beside meta.json) and survives the recorder rewriting meta.json', () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  const rec = store.create(baseMeta('r2', 'running'));
  expect(store.rename('r2', '  fp16 + channels-last ')?.name).toBe('fp16 + channels-last');
  rec.update({ status: 'ok' }); // the recorder's copy of the meta has no name: it must not erase it
  rec.close();
  expect(store.meta('r2')).toMatchObject({ status: 'ok', name: 'fp16 + channels-last' });
  expect(new RunStore(join(dir, 'runs')).list()[0]?.name).toBe('fp16 + channels-last');
  expect(JSON.parse(readFileSync(join(dir, 'runs', 'r2', 'meta.json'), 'utf8')).name).toBeUndefined();
  expect(readdirSync(join(dir, 'runs', 'r2')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  expect(() => store.rename('r2', 'a\nb')).toThrow(/control characters/);
  expect(() => store.rename('r2', 'x'.repeat(81))).toThrow(/at most 80/);
  expect(store.rename('r2', '')?.name).toBeUndefined();
  expect(store.rename('nope', 'x')).toBeUndefined();
});

it('a cancelled run keeps what it measured: series.json and the spread are written by the recorder', () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  const rec = store.create(baseMeta('r3', 'running'));
  for (const [i, r] of [8, 10, 12].entries()) rec.record(stepEvent(i + 1, r));
  const throughput = rec.measured();
  rec.update({ status: 'cancelled', throughput, medianGlobalSamplesPerSec: throughput.median });
  rec.close();
  expect(store.meta('r3')).toMatchObject({ status: 'cancelled', medianGlobalSamplesPerSec: 10, throughput: { windows: 3, min: 8, max: 12 } });
  expect(JSON.parse(readFileSync(join(dir, 'runs', 'r3', 'series.json'), 'utf8'))).toMatchObject({ step: [1, 2, 3], samplesPerSec: [8, 10, 12] });
  expect(store.series('r3')?.samplesPerSec).toEqual([8, 10, 12]);
});

it('an old record (no series.json, no spread, a cancelled run without a median) is migrated from its events, losing nothing', () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const runDir = join(dir, 'runs', '20261101-100000-old1');
  mkdirSync(runDir, { recursive: true });
  // As an older Cohort wrote it: no throughput, median null after a cancel, events on disk.
  const old = { ...baseMeta('20261101-100000-old1', 'cancelled'), medianGlobalSamplesPerSec: null, steps: 3, profileSnapshot: { keep: 'me' } };
  writeFileSync(join(runDir, 'meta.json'), JSON.stringify(old));
  const eventsText = [stepEvent(1, 20), stepEvent(2, 30), stepEvent(3, 25)].map((e) => JSON.stringify(e)).join('\n') + '\n';
  writeFileSync(join(runDir, 'events.jsonl'), eventsText);
  const store = new RunStore(join(dir, 'runs'));
  const [m] = store.list();
  expect(m).toMatchObject({ medianGlobalSamplesPerSec: 25, throughput: { windows: 3, min: 20, max: 30 }, steps: 3, profileSnapshot: { keep: 'me' } });
  expect(readFileSync(join(runDir, 'events.jsonl'), 'utf8')).toBe(eventsText);
  expect(existsSync(join(runDir, 'series.json'))).toBe(true);
  expect(JSON.parse(readFileSync(join(runDir, 'meta.json'), 'utf8'))).toMatchObject({ throughput: { windows: 3 }, profileSnapshot: { keep: 'me' } });
  // A stale series.json (a crash between the two writes) is rebuilt, not trusted.
  writeFileSync(join(runDir, 'series.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(runDir, 'series.json'), 'utf8')), windows: 1 }));
  expect(store.series('20261101-100000-old1')?.windows).toBe(3);
});
