// Durable runs on one host, through the real host commands of the built bundle (issue 12 host side,
// issue 14 item 1): real agents, real rank processes, real signals, a temp workdir.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeRunState } from '../../trainer/protocol';
import { eventsOf, freePort, hostCmd, hostTestScope, processesOf, ranksOf, readStateOf, spec, waitUntil } from '../helpers/host';

const { workdir, runId } = hostTestScope();
const twoRanks = [
  { rank: 0, localRank: 0 },
  { rank: 1, localRank: 1 },
];

describe('run-start / run-follow / run-stop / run-status', () => {
  it('a run outlives the process that started it; run-follow from 0 and from a mid offset gives every line exactly once', async () => {
    const wd = workdir();
    const id = runId('follow');
    const start = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks: twoRanks, masterPort: await freePort(), config: { steps: 14 } }) + '\n' });
    expect(start.code, start.stderr + start.stdout).toBe(0);
    const reply = JSON.parse(start.stdout) as { runId: string; agentPid: number; state: string };
    expect(reply).toMatchObject({ runId: id, host: 'h1' });
    // The launcher is gone; the agent is not its child any more, and it trains on.
    const agent = processesOf(id).find((p) => p.pid === reply.agentPid);
    expect(agent?.args).toMatch(/agent-run --run/);
    const follow0 = hostCmd(wd, ['run-follow', '--run', id, '--offset', '0']);
    await waitUntil('step 4 in the record', () => (readStateOf(wd, id)?.lastStep ?? 0) >= 4);
    const events = join(wd, 'runs', id, 'events.jsonl');
    // --offset counts bytes: a line with a non-ASCII character (a load warning's '≥', seen in a loaded
    // full run) puts a string index bytes early, so the offset is found in the bytes.
    const bytes = readFileSync(events);
    const mid = bytes.lastIndexOf(0x0a, bytes.length - 2) + 1; // start of the last whole line
    const followMid = hostCmd(wd, ['run-follow', '--run', id, '--offset', String(mid)]);
    const [a, b] = await Promise.all([follow0, followMid]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const all = readFileSync(events, 'utf8');
    expect(a.stdout).toBe(all);
    expect(b.stdout).toBe(Buffer.from(all).subarray(mid).toString('utf8'));
    const steps = a.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; step?: number }).filter((e) => e.type === 'step').map((e) => e.step);
    expect(steps).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    expect(readStateOf(wd, id)).toMatchObject({ state: 'ok', role: 'leader', restarts: 0 });
    expect(eventsOf(wd, id).at(-1)).toMatchObject({ type: 'done', status: 'ok' });
    for (const f of ['events.jsonl', 'state.json', 'spec.json', 'logs/rank-0.log', 'logs/rank-1.log']) expect(statSync(join(wd, 'runs', id, f)).mode & 0o777, f).toBe(0o600);
    await waitUntil('the agent to exit', () => processesOf(id).length === 0, 10_000);
    const st = await hostCmd(wd, ['run-status']);
    expect(st.code).toBe(0);
    expect(decodeRunState(JSON.parse(st.stdout))).toMatchObject({ runId: id, state: 'ok' });
    expect(JSON.parse(st.stdout).agentAlive).toBe(false);
  });

  it('run-stop ends the run: cancelled, 0 processes left', async () => {
    const wd = workdir();
    const id = runId('stop');
    const start = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks: twoRanks, masterPort: await freePort(), config: { steps: 100000 } }) });
    expect(start.code, start.stdout).toBe(0);
    await waitUntil('a step', () => (readStateOf(wd, id)?.lastStep ?? 0) >= 1);
    expect(ranksOf(id)).toHaveLength(2);
    const stop = await hostCmd(wd, ['run-stop', '--run', id, '--reason', 'test']);
    expect(stop.code, stop.stdout).toBe(0);
    expect(JSON.parse(stop.stdout)).toMatchObject({ state: 'cancelled', runId: id });
    await waitUntil('no process of the run', () => processesOf(id).length === 0, 5000);
    // a second run-start of the same id is refused
    const again = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 1, ranks: [{ rank: 0, localRank: 0 }], masterPort: await freePort(), config: { steps: 1 } }) });
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout).error.code).toBe('run-exists');
  });

  it('refuses a bad spec (exit 2) and an unknown run (exit 5) with one JSON error line', async () => {
    const wd = workdir();
    const bad = await hostCmd(wd, ['run-start'], { stdin: '{"runId":"x"}\n' });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error).toMatchObject({ code: 'bad-spec' });
    expect(JSON.parse(bad.stdout).error.message).toMatch(/host/);
    const escape = await hostCmd(wd, ['run-follow', '--run', '../../etc']);
    expect(escape.code).not.toBe(0);
    // one run-id rule (trainer/protocol/run-id.ts): the code names it, the message quotes the bad id
    expect(JSON.parse(escape.stdout).error).toMatchObject({ code: 'bad-run-id' });
    expect(JSON.parse(escape.stdout).error.message).toMatch(/"\.\.\/\.\.\/etc" is not a run id/);
    const none = await hostCmd(wd, ['run-follow', '--run', 'nope']);
    expect(none.code).toBe(5);
  });
});

describe('ranks never outlive their agent (issue 14 item 1)', () => {
  it('kill -9 of a detached agent: both ranks are gone within ~1 s; run-follow says agent lost (exit 4)', async () => {
    const wd = workdir();
    const id = runId('lifeline');
    const start = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks: twoRanks, masterPort: await freePort(), config: { steps: 100000 } }) });
    expect(start.code, start.stdout).toBe(0);
    await waitUntil('a step', () => (readStateOf(wd, id)?.lastStep ?? 0) >= 1);
    expect(ranksOf(id)).toHaveLength(2);
    const t0 = Date.now();
    process.kill(JSON.parse(start.stdout).agentPid, 'SIGKILL');
    await waitUntil('the ranks to exit', () => ranksOf(id).length === 0, 5000, 20);
    const ms = Date.now() - t0;
    console.log(`detached agent kill -9 → ranks gone in ${ms} ms`);
    expect(ms).toBeLessThan(1000);
    const f = await hostCmd(wd, ['run-follow', '--run', id]);
    expect(f.code).toBe(4);
    const st = await hostCmd(wd, ['run-status', '--run', id]);
    expect(JSON.parse(st.stdout)).toMatchObject({ state: 'running', agentAlive: false });
  });
});
