// Issue 24 item 2 on the built-in local cluster, real CLI and real processes: the local history
// (meta.json, `runs list`, `runs show`) takes where a run stands from the one run view
// (trainer/protocol/run-view.ts) over its events, not from rules of its own. A rank killed after a
// checkpoint with --max-restarts 1: while the run restarts the history says `restarting` (it said
// `running` throughout before), and at the end it holds the view's restarts (1) and steps.
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDataDir } from '../helpers/cli';
import { leftovers, rankPid } from '../helpers/run-procs';
import { until } from '../helpers/until';
import { tinyRun } from '../helpers/tiny';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const tiny = tinyRun({ warmupSteps: 0, seed: 7 });

describe('the history from the run view (issue 24 item 2)', () => {
  it('a restart: meta says restarting while it restarts, then ok with restarts 1 and every step; runs show tells the restarts', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
    const run = runCli(['run', '--local', '--ranks', '2', '--steps', '12', '--checkpoint-every', '3', '--max-restarts', '1', ...tiny, '--json'], { env, json: true });
    await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    const runId = readdirSync(join(data, 'runs')).find((d) => /^\d{8}-\d{6}-/.test(d))!;
    const metaPath = join(data, 'runs', runId, 'meta.json');
    const status = () => (existsSync(metaPath) ? (JSON.parse(readFileSync(metaPath, 'utf8')) as { status: string }).status : undefined);
    expect(status()).toBe('running');
    const victim = rankPid(data, 1);
    expect(victim, 'rank 1 process').toBeDefined();
    process.kill(victim!, 'SIGKILL');
    // The restart event is in the record: the history says so until the run steps again.
    const seen = new Set<string>();
    const restarted = run.waitFor((e) => e.type === 'restart', 90_000);
    await until('the history to say restarting', () => {
      seen.add(status() ?? '');
      return seen.has('restarting');
    }, 90_000, 20);
    await restarted;
    const exit = await run.exit;
    expect(exit.code, run.stderr.slice(-2000)).toBe(0);
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { status: string; restarts?: number; steps?: number };
    expect(meta).toMatchObject({ status: 'ok', restarts: 1, steps: 12 });
    const show = runCli(['runs', 'show', runId], { env });
    expect((await show.exit).code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/^restarts: 1 /m);
    expect(await leftovers(data)).toEqual([]);
  }, 300_000);
});

