// What the user says of a run at launch, and deleting runs (issue 22 item 11, CLI part): `cohort run
// --name --tag (repeatable) --notes` are recorded and shown by runs list/show; `cohort runs rm RUN...`
// deletes the local record only (the host's record stays) unless --hosts. Real CLI, a real local rank.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
afterAll(() => rmSync(data, { recursive: true, force: true }));
const TINY = tinyRun({ steps: 2, warmupSteps: 0 });

async function cli(...args: string[]) {
  const r = runCli(args, { env });
  const { code } = await r.exit;
  return { code, stdout: r.stdout, stderr: r.stderr };
}

let runId = '';

it('--name, --tag (twice) and --notes are recorded and shown', async () => {
  const r = await cli('run', '--local', ...TINY, '--name', 'bs2 base', '--tag', 'baseline', '--tag', 'cpu', '--notes', 'first line\nsecond line', '--detach');
  expect(r.code, r.stderr).toBe(0);
  runId = r.stdout.trim();
  const a = await cli('attach', runId); // to its end (no rank outlives the test)
  expect(a.code, a.stderr).toBe(0);
  const json = await cli('runs', 'list', '--json');
  expect((JSON.parse(json.stdout) as RunMeta[]).find((m) => m.id === runId)).toMatchObject({ name: 'bs2 base', tags: ['baseline', 'cpu'], notes: 'first line\nsecond line', status: 'ok' });
  const list = await cli('runs', 'list');
  expect(list.stdout).toMatch(new RegExp(`${runId} .* bs2 base #baseline #cpu\\n`));
  const show = await cli('runs', 'show', runId);
  expect(show.stdout).toContain('name: bs2 base\ntags: baseline, cpu\n');
  expect(show.stdout).toContain('notes:\n  first line\n  second line\n');
}, 180_000);

it('a bad --tag is refused before anything starts', async () => {
  const r = await cli('run', '--local', ...TINY, '--tag', 'two words');
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('--tag: tag "two words"');
}, 60_000);

it('runs rm deletes the local record and leaves the host\'s', async () => {
  const r = await cli('runs', 'rm', runId);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain(`deleted run ${runId}`);
  expect(existsSync(join(data, 'runs', runId))).toBe(false);
  expect(existsSync(join(data, 'local', 'runs', runId, 'events.jsonl'))).toBe(true);
  const show = await cli('runs', 'show', runId);
  expect(show.code).toBe(2);
  expect(show.stderr).toContain(`no run matches ${runId}`);
}, 60_000);

it("runs rm --hosts removes the local host's record too (the local profile's workdir)", async () => {
  const r = await cli('run', '--local', ...TINY, '--detach');
  expect(r.code, r.stderr).toBe(0);
  const id = r.stdout.trim();
  expect((await cli('attach', id)).code).toBe(0);
  const hostRecord = join(data, 'local', 'runs', id);
  expect(existsSync(join(hostRecord, 'events.jsonl'))).toBe(true);
  const rm = await cli('runs', 'rm', id, '--hosts');
  expect(rm.code, rm.stderr).toBe(0);
  expect(rm.stdout).toMatch(new RegExp(`${id} \\S+: removed ${hostRecord} \\(\\d+ files, `));
  expect(rm.stdout).toContain(`deleted run ${id} from`);
  expect(existsSync(hostRecord)).toBe(false);
  expect(existsSync(join(data, 'runs', id))).toBe(false);
}, 120_000);
