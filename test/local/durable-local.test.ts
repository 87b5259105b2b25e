// Issue 12 on the built-in local cluster, through the real CLI and real processes: a run outlives
// the CLI that started it (SIGKILL), `cohort attach` from a new process streams it with no gap and
// no duplicate step, `cohort stop` from a third process ends it (0 processes, history cancelled),
// and `run --detach --json` prints the run id first. Also measures attach latency.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EventLineDecoder, type CohortEvent, type StepEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { PACED_HOST, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const dirs: string[] = [];
const runIds: string[] = [];
afterAll(() => {
  for (const id of runIds) for (const p of processesOf(id)) process.kill(p, 'SIGKILL');
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

const tiny = tinyRun();
const steps = (events: CohortEvent[]) => events.filter((e): e is StepEvent => e.type === 'step').map((e) => e.step);

function processesOf(runId: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.split(/\s+/).includes(runId) && /cohort-trainer\.mjs/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

function hostSteps(data: string, runId: string): number[] {
  const p = join(data, 'local', 'runs', runId, 'events.jsonl');
  if (!existsSync(p)) return [];
  return readFileSync(p, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"type":"step"'))
    .map((l) => (JSON.parse(l) as StepEvent).step);
}


describe('durable local runs', () => {
  it('survives SIGKILL of its CLI; attach continues with no gap or duplicate; stop from a third process leaves 0 processes and history cancelled', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), ...PACED_HOST }; // until stopped: paced
    const first = runCli(['run', '--local', '--ranks', '2', '--steps', '100000', ...tiny, '--json'], { env, json: true });
    await first.waitFor((e) => e.type === 'step' && e.step >= 3, 180_000);
    const list = runCli(['runs', 'list', '--json'], { env });
    await list.exit;
    const runId = (JSON.parse(list.stdout) as { id: string }[])[0]!.id;
    runIds.push(runId);
    const seenByFirst = steps(first.events);
    first.child.kill('SIGKILL');
    await first.exit;

    // The run goes on without any client: its record on the host keeps growing.
    const atKill = Math.max(...hostSteps(data, runId));
    await until('steps to advance with no client', () => Math.max(...hostSteps(data, runId)) >= atKill + 2, 120_000);
    expect(processesOf(runId).length).toBeGreaterThanOrEqual(3); // agent + 2 ranks

    // Attach from a new process: the whole record, then live; measure command -> first live step.
    const before = Math.max(...hostSteps(data, runId));
    const t0 = Date.now();
    const attach = runCli(['attach', runId, '--json'], { env, json: true });
    await attach.waitFor((e) => e.type === 'step');
    const firstEventMs = Date.now() - t0;
    await attach.waitFor((e) => e.type === 'step' && e.step > before, 60_000);
    const firstLiveMs = Date.now() - t0;
    process.stderr.write(`attach latency: command -> first event ${firstEventMs} ms, -> first live step ${firstLiveMs} ms\n`);

    // Stop from a third process: no client process is signalled (the attach keeps running until the run ends).
    const stop = runCli(['stop', runId], { env });
    const stopExit = await stop.exit;
    expect(stopExit.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(/cancelled/);
    const attachExit = await attach.exit;
    expect(attachExit.code, attach.stderr).toBe(130);

    const seen = steps(attach.events);
    expect(seen.length).toBeGreaterThan(0);
    // No duplicate and no gap in what attach streamed; it covers everything the killed CLI saw.
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => seen[0]! + i));
    for (const s of seenByFirst) expect(seen).toContain(s);
    expect(seen.at(-1)!).toBeGreaterThan(before);

    expect(processesOf(runId)).toEqual([]);
    const after = runCli(['runs', 'list', '--json'], { env });
    await after.exit;
    expect((JSON.parse(after.stdout) as { id: string; status: string }[]).find((m) => m.id === runId)?.status).toBe('cancelled');
  });

  it('run --detach --json prints a first event carrying the runId and returns at once; the run trains on', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), ...PACED_HOST }; // until stopped: paced
    const r = runCli(['run', '--local', '--steps', '100000', ...tiny, '--detach', '--json'], { env, json: true });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId?: string }).runId!;
    expect(runId).toMatch(/^\d{8}-\d{6}-/);
    runIds.push(runId);
    await until('the detached run to step', () => hostSteps(data, runId).length >= 2, 120_000);
    const stop = runCli(['stop', runId], { env });
    expect((await stop.exit).code, stop.stderr).toBe(0);
    expect(processesOf(runId)).toEqual([]);
  });

  it('two attachers of one run in two processes both get the whole stream; the local history is written by one of them, whole and once', async () => {
    const data = tempDataDir();
    dirs.push(data);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), ...PACED_HOST }; // until stopped: paced
    const r = runCli(['run', '--local', '--steps', '100000', ...tiny, '--detach', '--json'], { env, json: true });
    expect((await r.exit).code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
    runIds.push(runId);
    await until('the detached run to step', () => hostSteps(data, runId).length >= 2, 120_000);
    const a = runCli(['attach', runId, '--json'], { env, json: true });
    await a.waitFor((e) => e.type === 'step');
    const b = runCli(['attach', runId, '--json'], { env, json: true });
    const mid = Math.max(...hostSteps(data, runId));
    await Promise.all([a, b].map((x) => x.waitFor((e) => e.type === 'step' && e.step > mid + 2, 60_000)));
    const stop = runCli(['stop', runId], { env });
    expect((await stop.exit).code, stop.stderr).toBe(0);
    expect((await a.exit).code, a.stderr).toBe(130);
    expect((await b.exit).code, b.stderr).toBe(130);
    const record = hostSteps(data, runId);
    expect(steps(a.events)).toEqual(record);
    expect(steps(b.events)).toEqual(record);
    // the history's copy: every line a whole event, each step once, the same steps as the hosts' record
    const text = readFileSync(join(data, 'runs', runId, 'events.jsonl'), 'utf8');
    const d = new EventLineDecoder();
    const decoded = [...d.push(text), ...d.end()];
    expect(decoded.filter((x) => x.kind !== 'event'), 'damaged lines in the history').toEqual([]);
    expect(steps(decoded.flatMap((x) => (x.kind === 'event' ? [x.event] : [])))).toEqual(record);
    expect((JSON.parse(readFileSync(join(data, 'runs', runId, 'meta.json'), 'utf8')) as { status: string }).status).toBe('cancelled');
  });
});
