// Issue 24, defects 1 and 9, on the built-in local cluster through the real CLI and real processes:
//   1. attach never destroys the local history: a run whose client was killed ends ok on its host;
//      `cohort attach` while the host's record is gone kept 2 of its events, 0 steps, `failed`. Now the
//      history stays whole (the run is `lost` from here), and once the record is back an attach ends
//      it ok with every event and no stale error.
//   9. a truncated host state.json ends an attach with one clear error instead of looping forever on
//      "record line is not a valid event".
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { until as untilHelper } from '../helpers/until';
import { tinyRun } from '../helpers/tiny';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const tiny = tinyRun();
const lines = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).length : 0);
const json = (p: string) => JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;

const until = (what: string, fn: () => boolean, ms = 180_000): Promise<true> => untilHelper(what, () => fn() || undefined, ms, 200);

function hostEnded(data: string, runId: string): boolean {
  try {
    return json(join(data, 'local', 'runs', runId, 'state.json')).state === 'ok';
  } catch {
    return false;
  }
}

describe('attach and the local history (issue 24)', () => {
  it('defect 1: an attach that cannot read the host record keeps the history whole; a later one ends it ok with no stale error', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
    const first = runCli(['run', '--local', '--steps', '6', ...tiny, '--json'], { env, json: true });
    const hello = await first.waitFor((e) => e.type === 'step' && e.step >= 2, 180_000);
    expect(hello.type).toBe('step');
    first.child.kill('SIGKILL'); // the client dies; the run goes on on its host
    await first.exit;
    // The run's id from its folder (not `runs list`, which would settle the run from its hosts first).
    const runId = readdirSync(join(data, 'runs')).find((d) => /^\d{8}-\d{6}-/.test(d))!;
    const history = join(data, 'runs', runId, 'events.jsonl');
    const before = lines(history);
    expect(before).toBeGreaterThanOrEqual(3);
    await until('the run to end ok on its host', () => hostEnded(data, runId));

    // The host's record is away: attach must not touch the history.
    const record = join(data, 'local', 'runs', runId);
    const aside = join(data, 'record-aside');
    renameSync(record, aside);
    const blind = runCli(['attach', runId, '--json'], { env, json: true });
    await blind.exit;
    expect(lines(history)).toBeGreaterThanOrEqual(before);
    const m1 = json(join(data, 'runs', runId, 'meta.json'));
    expect(m1.status).toBe('lost');
    expect((m1.error as { message?: string } | undefined)?.message).toMatch(/has no record of run/); // the one error shape (issue 24 item 5)
    expect(m1.steps === undefined || (m1.steps as number) >= 2).toBe(true);

    // The record is back: the next attach replays it whole, ends ok, and the old error is gone.
    renameSync(aside, record);
    const again = runCli(['attach', runId, '--json'], { env, json: true });
    const exit = await again.exit;
    expect(exit.code, again.stderr).toBe(0);
    const m2 = json(join(data, 'runs', runId, 'meta.json'));
    expect(m2).toMatchObject({ status: 'ok', steps: 6 });
    expect(m2.error).toBeUndefined();
    expect(m2.errorCode).toBeUndefined();
    expect(lines(history)).toBeGreaterThan(before);
    expect(readdir(join(data, 'runs', runId)).filter((f) => f.startsWith('events.') && f !== 'events.jsonl')).toEqual([]);
  }, 400_000);

  it('defect 9: a truncated host state.json ends attach, said once as damaged (no endless retry, no "not a valid event")', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
    const r = runCli(['run', '--local', '--steps', '2', ...tiny, '--detach', '--json'], { env, json: true });
    expect((await r.exit).code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    await until('the run to end ok on its host', () => hostEnded(data, runId));
    const state = join(data, 'local', 'runs', runId, 'state.json');
    truncateSync(state, Math.floor(readFileSync(state).length / 2));

    const a = runCli(['attach', runId, '--json'], { env, json: true });
    // Today's main retries forever: bound the wait so the test fails instead of hanging.
    const killer = setTimeout(() => a.child.kill('SIGKILL'), 90_000);
    const exit = await a.exit;
    clearTimeout(killer);
    expect(exit.signal, `attach did not end; stderr: ${a.stderr.slice(-500)}`).toBeNull();
    // Said once, with the host's words; the events (drained meanwhile) told the end, ok: a warning then.
    const said = a.events.filter((e) => (e.type === 'error' || e.type === 'log') && e.code === 'record-damaged');
    expect(said).toHaveLength(1);
    expect((said[0] as { message: string }).message).toMatch(/state record .*state\.json is damaged/);
    expect(a.events.filter((e): e is ErrorEvent => e.type === 'error')).toEqual([]);
    expect(a.events.some((e) => e.type === 'log' && /not a valid event/.test(e.message))).toBe(false);
    expect(a.events.find((e) => e.type === 'done')).toMatchObject({ status: 'ok' });
    expect(exit.code, a.stderr).toBe(0);
  }, 300_000);
});

function readdir(d: string): string[] {
  return existsSync(d) ? readdirSync(d) : [];
}
