// `cohort run --json` for scripts (issue 22 item 2, issue 15): the first line of every stream,
// foreground or detached, is an event carrying the run's id, and a failure still ends with `error`
// then `done`. Real CLI, a real local rank; the failed launch is a real refused TCP connection (a
// closed loopback port), so its run is recorded as failed and its id must still come first.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { freePort } from '../helpers/free-port';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), COHORT_KNOWN_HOSTS: join(data, 'known_hosts'), SSH_AUTH_SOCK: '' };
afterAll(() => rmSync(data, { recursive: true, force: true }));
const TINY = tinyRun({ steps: 2, warmupSteps: 0 });

async function recorded(): Promise<RunMeta[]> {
  const list = runCli(['runs', 'list', '--json'], { env });
  expect((await list.exit).code, list.stderr).toBe(0);
  return JSON.parse(list.stdout) as RunMeta[];
}

it('a foreground --json run starts with an event carrying runId, ends with done', async () => {
  const r = runCli(['run', '--local', '--json', ...TINY], { env, json: true });
  expect((await r.exit).code, r.stderr).toBe(0);
  const first = r.events[0] as { type: string; runId?: string };
  expect(first.runId).toMatch(/^\d{8}-\d{6}-/);
  expect(r.events.at(-1)!.type).toBe('done');
  expect((await recorded()).map((m) => m.id)).toContain(first.runId);
}, 180_000);

it('a --detach --json run starts with the same event', async () => {
  const r = runCli(['run', '--local', '--json', '--detach', ...TINY], { env, json: true });
  expect((await r.exit).code, r.stderr).toBe(0);
  const runId = (r.events[0] as { runId?: string }).runId!;
  expect(runId).toMatch(/^\d{8}-\d{6}-/);
  // Followed to its end, so no rank outlives the test.
  const a = runCli(['attach', runId, '--json'], { env, json: true });
  expect((await a.exit).code, a.stderr).toBe(0);
}, 180_000);

it('a launch that fails (connection refused) starts with its runId, then error, then done', async () => {
  // A port that was free a moment ago: nothing listens there, so connecting is refused.
  const port = await freePort();
  const key = join(data, 'id_test');
  writeFileSync(key, 'not a key\n', { mode: 0o600 });
  const file = join(data, 'gone.json');
  writeFileSync(file, JSON.stringify({ name: 'gone', hosts: [{ name: 'gone-1', address: '127.0.0.1', port, user: 'nobody', identityFile: key, slots: 1, workdir: '/tmp/cohort-gone' }] }));
  const imp = runCli(['profiles', 'import', file], { env });
  expect((await imp.exit).code, imp.stderr).toBe(0);
  const r = runCli(['run', '--profile', 'gone', '--json', ...TINY], { env, json: true });
  const exit = await r.exit;
  expect(exit.code, r.stdout + r.stderr).toBe(3);
  expect(r.events.map((e) => e.type)).toEqual(['log', 'error', 'done']);
  const runId = (r.events[0] as { runId?: string }).runId;
  expect(runId).toMatch(/^\d{8}-\d{6}-/);
  expect((await recorded()).find((m) => m.id === runId)).toMatchObject({ status: 'failed', profile: 'gone' });
}, 120_000);
