// `cohort runs show RUN` shows the hosts' truth (issue 22 item 17): a --detach run that ended ok on
// its host was still "starting" in `runs show` until `runs list` asked the hosts. Real CLI, a real
// rank; nothing runs `runs list` here.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

it('runs show (and runs export) of a detached run that ended on its host say ok, with what it measured', async () => {
  const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
  const start = runCli(['run', '--local', ...tinyRun({ steps: 4, warmupSteps: 0 }), '--detach'], { env });
  expect((await start.exit).code, start.stderr).toBe(0);
  const runId = start.stdout.trim();
  const hostRecord = join(data, 'local', 'runs', runId, 'events.jsonl');
  for (const t0 = Date.now(); !(existsSync(hostRecord) && readFileSync(hostRecord, 'utf8').includes('"type":"done"')); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() - t0 > 120_000) throw new Error('the detached run did not finish in 120 s');
  }
  const show = runCli(['runs', 'show', runId], { env });
  expect((await show.exit).code, show.stderr).toBe(0);
  expect(show.stdout).toContain(`run ${runId} (ok)`);
  expect(show.stdout).toMatch(/median throughput: \d/);
  const json = runCli(['runs', 'show', runId, '--json'], { env });
  expect((await json.exit).code, json.stderr).toBe(0);
  expect((JSON.parse(json.stdout) as { meta: RunMeta }).meta).toMatchObject({ status: 'ok', steps: 4 });
}, 180_000);

it('runs export of a detached run that ended says ok too', async () => {
  const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
  const start = runCli(['run', '--local', ...tinyRun({ steps: 3, warmupSteps: 0 }), '--detach'], { env });
  expect((await start.exit).code, start.stderr).toBe(0);
  const runId = start.stdout.trim();
  const hostRecord = join(data, 'local', 'runs', runId, 'events.jsonl');
  for (const t0 = Date.now(); !(existsSync(hostRecord) && readFileSync(hostRecord, 'utf8').includes('"type":"done"')); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() - t0 > 120_000) throw new Error('the detached run did not finish in 120 s');
  }
  const ex = runCli(['runs', 'export', runId, '--format', 'json'], { env });
  expect((await ex.exit).code, ex.stderr).toBe(0);
  expect((JSON.parse(ex.stdout) as { runs: RunMeta[] }).runs[0]).toMatchObject({ id: runId, status: 'ok', steps: 3 });
}, 180_000);
