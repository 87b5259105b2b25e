// The local history keeps what a run measured even when no client followed it: a run started with
// --detach that ends on its own is replayed from its hosts' record by the next `runs list`, so it
// has its median, spread and curves, not only its end state. Real CLI, real rank process.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

it('a detached run that ended unfollowed gets its measurements on the next runs list', async () => {
  const data = tempDataDir();
  dirs.push(data);
  const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
  const start = runCli(['run', '--local', ...tinyRun({ classes: null, steps: 5, warmupSteps: 0 }), '--detach'], { env });
  expect((await start.exit).code, start.stderr).toBe(0);
  const runId = start.stdout.trim();
  const hostRecord = join(data, 'local', 'runs', runId, 'events.jsonl');
  for (const t0 = Date.now(); !(existsSync(hostRecord) && readFileSync(hostRecord, 'utf8').includes('"type":"done"')); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() - t0 > 120_000) throw new Error('the detached run did not finish in 120 s');
  }
  const list = runCli(['runs', 'list', '--json'], { env });
  expect((await list.exit).code, list.stderr).toBe(0);
  const m = (JSON.parse(list.stdout) as RunMeta[]).find((r) => r.id === runId)!;
  expect(m).toMatchObject({ status: 'ok', steps: 5, throughput: { windows: 5 } });
  expect(m.medianGlobalSamplesPerSec).toBeGreaterThan(0);
  expect(existsSync(join(data, 'runs', runId, 'series.json'))).toBe(true);
}, 180_000);
