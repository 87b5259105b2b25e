import { spawnSync } from 'node:child_process';
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

const metaOf = (id: string) => ({ id, profile: 'p', startedAt: new Date().toISOString(), status: 'running', config: {}, hosts: [], worldSize: 1, versions: {} }) as unknown as RunMeta;
const step = (n: number) => makeEvent({ type: 'step', step: n, epoch: 0, loss: 1, globalSamplesPerSec: 1, stepTimeMs: 1, worldSize: 1, lr: 0.1, memory: [] } as Parameters<typeof makeEvent>[0]);
const stepsIn = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { step: number }).step);
/** A pid that is certainly not running: a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

it('one writer per run: a second follower of the same run keeps a private copy; the history is written whole, once', () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  const first = store.reopen(metaOf('r2'));
  const second = store.reopen(metaOf('r2'));
  expect([first.keepsHistory, second.keepsHistory]).toEqual([true, false]);
  for (let n = 1; n <= 5; n++) {
    expect(first.record(step(n))).toBe(n - 1);
    expect(second.record(step(n))).toBe(n - 1);
  }
  second.update({ status: 'running' });
  expect(second.events().map((e) => (e as { step: number }).step)).toEqual([1, 2, 3, 4, 5]);
  first.update({ status: 'cancelled' });
  first.close();
  second.update({ status: 'ok' }); // a reader's view never reaches the history
  second.close();
  const runDir = join(dir, 'runs', 'r2');
  expect(stepsIn(join(runDir, 'events.jsonl'))).toEqual([1, 2, 3, 4, 5]);
  expect(store.meta('r2')?.status).toBe('cancelled');
  expect(readdirSync(runDir).filter((f) => /lock|reader/.test(f))).toEqual([]); // the lock released, the reader's copy removed
});

it("a dead writer's lock is reclaimed; a reader whose writer died before the end takes the history over", () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  const runDir = join(dir, 'runs', 'r3');
  mkdirSync(runDir, { recursive: true });
  writeFileSync(join(runDir, 'writer.lock'), `${deadPid()}\n`);
  const rec = store.reopen(metaOf('r3'));
  expect(rec.keepsHistory).toBe(true); // reclaimed from a killed holder
  rec.close();

  const writer = store.reopen(metaOf('r3'));
  const reader = store.reopen(metaOf('r3'));
  writer.record(step(1));
  reader.record(step(1));
  reader.record(step(2));
  // the writer's process dies without closing: its lock names a dead pid
  writeFileSync(join(runDir, 'writer.lock'), `${deadPid()}\n`);
  reader.update({ status: 'ok' });
  reader.close();
  expect(stepsIn(join(runDir, 'events.jsonl'))).toEqual([1, 2]);
  expect(store.meta('r3')?.status).toBe('ok');
  writer.close();
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

it("reads a run recorded before session 8 (error a string, its code in errorCode) in the one error shape; a patch writes that shape", () => {
  dir = mkdtempSync(join(tmpdir(), 'run-store-'));
  const store = new RunStore(join(dir, 'runs'));
  mkdirSync(join(dir, 'runs', 'old1'), { recursive: true });
  const old = { ...metaOf('old1'), status: 'failed', error: 'launch failed on h1: nobody@h1: all configured authentication methods failed (hint: load your key into ssh-agent)', errorCode: 'ssh-auth' };
  writeFileSync(join(dir, 'runs', 'old1', 'meta.json'), JSON.stringify(old));
  const want = { code: 'ssh-auth', message: 'launch failed on h1: nobody@h1: all configured authentication methods failed', hint: 'load your key into ssh-agent', host: 'h1' };
  expect(store.meta('old1')).toMatchObject({ error: want, errorCode: 'ssh-auth' });
  store.patch('old1', { steps: 0 });
  expect(JSON.parse(readFileSync(join(dir, 'runs', 'old1', 'meta.json'), 'utf8'))).toMatchObject({ error: want, errorCode: 'ssh-auth' });
});
