// `cohort run … | head -2`: a closed stdout must not kill the run. The real CLI trains a tiny
// local run with its stdout piped into a reader that closes after two lines; the CLI exits 0
// without an EPIPE trace and the run is recorded `ok`.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { COHORT, tempDataDir } from '../helpers/cli';

const dir = tempDataDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a closed stdout ends output quietly; the run goes on to its end and is recorded', async () => {
  const child = spawn(process.execPath, [COHORT, 'run', '--local', '--ranks', '1', '--steps', '8', '--image-size', '32', '--batch-size', '2', '--log-steps', '1'], {
    env: { ...process.env, COHORT_DATA_DIR: dir, COHORT_CONFIG_DIR: join(dir, 'config') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
  // Like `head -2`: read two lines, then close the pipe.
  let seen = '';
  child.stdout.on('data', (d: Buffer) => {
    seen += String(d);
    if (seen.split('\n').length > 2) child.stdout.destroy();
  });
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  expect(stderr).not.toMatch(/EPIPE|at .*\.js:\d+/);
  expect(code).toBe(0);
  const [runId] = readdirSync(join(dir, 'runs'));
  const meta = JSON.parse(readFileSync(join(dir, 'runs', runId, 'meta.json'), 'utf8')) as { status: string; steps: number };
  expect(meta).toMatchObject({ status: 'ok', steps: 8 });
}, 180_000);
