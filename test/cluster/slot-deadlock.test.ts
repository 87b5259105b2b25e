// Issue 24 defect 4 on two real OpenSSH hosts (network namespaces), through the real `cohort` CLI:
// runs over the same hosts must never deadlock on their GPU slots (one slot per host).
//   - two runs started at once over the same two hosts in opposite order (h1,h2 and h2,h1): each
//     host's agent claimed its own slot, so each run held one host and queued for the other, forever
//   - six --detach runs, started in pairs on two profiles over the same two hosts in the same order:
//     queued runs split the hosts between them (four stayed queued with nothing running)
// Both end with every run ok, one at a time (never two runs on a slot at once).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeRunState, type RunStateRecord } from '../../trainer/protocol';
import { harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import type { CliRun } from '../helpers/cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { tinyRun } from '../helpers/tiny';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

// fwd and fwd2: h1 then h2; rev: h2 then h1 (one slot each)
const fx = useCohortCluster(2, { enabled: NETNS, profiles: { fwd: [0, 1], fwd2: [0, 1], rev: [1, 0] }, deploy: 'fwd' });
/** Runs started by the current test: a deadlock (the test failed) leaves them queued; stopped after it, so the next test starts clean. */
const started: string[] = [];
const tiny = tinyRun({ warmupSteps: 0 });

const cli = (args: string[]): CliRun => fx().cli(args);
const hostName = (host: number): string => fx().cluster.hosts[host]!.name;

/** One run's record on one host (the hosts share this machine's filesystem). */
function stateOn(host: number, runId: string): RunStateRecord | undefined {
  const p = join(fx().cluster.hosts[host]!.workdir, 'runs', runId, 'state.json');
  if (!existsSync(p)) return undefined;
  try {
    return decodeRunState(JSON.parse(readFileSync(p, 'utf8')));
  } catch {
    return undefined; // mid-replace
  }
}

/** When the run's ranks first started on a host: the agent's `env` event there (told as it starts them). */
function firstRanAt(host: number, runId: string): number | undefined {
  const p = join(fx().cluster.hosts[host]!.workdir, 'runs', runId, 'events.jsonl');
  if (!existsSync(p)) return undefined;
  const hello = readFileSync(p, 'utf8')
    .split('\n')
    .find((l) => l.includes('"type":"env"'));
  return hello ? (JSON.parse(hello) as { time: number }).time : undefined;
}

async function startDetached(profile: string): Promise<string> {
  const r = cli(['run', '--profile', profile, '--steps', '3', ...tiny, '--detach', '--json']);
  const exit = await r.exit;
  expect(exit.code, r.stderr).toBe(0);
  const id = (JSON.parse(r.stdout.split('\n')[0]!) as { runId: string }).runId;
  started.push(id);
  return id;
}

const ended = (s: RunStateRecord | undefined) => s !== undefined && ['ok', 'failed', 'cancelled'].includes(s.state);

/** Waits for every run to end on both hosts; a deadlock shows as runs queued behind each other until the deadline. */
async function allEnd(runIds: string[], ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (runIds.every((id) => ended(stateOn(0, id)) && ended(stateOn(1, id)))) return;
    if (Date.now() > end) {
      const where = runIds.map((id) => `${id}: ${[0, 1].map((h) => `${hostName(h)} ${stateOn(h, id)?.state ?? '-'}${stateOn(h, id)?.queuedBehind ? ` behind ${stateOn(h, id)!.queuedBehind}` : ''}`).join(', ')}`);
      throw new Error(`runs still not ended after ${ms / 1000} s (a deadlock on the slots?):\n${where.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Every run ok on both hosts, and no two of them ever ran at once (one slot per host). */
function expectOkOneAtATime(runIds: string[]): void {
  for (const id of runIds) for (const h of [0, 1]) expect(stateOn(h, id)?.state, `${id} on ${hostName(h)}`).toBe('ok');
  for (const h of [0, 1]) {
    const spans = runIds.map((id) => ({ id, from: firstRanAt(h, id)!, to: stateOn(h, id)!.endedAt! })).sort((a, b) => a.from - b.from);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.from, `${spans[i]!.id} started on ${hostName(h)} before ${spans[i - 1]!.id} ended there`).toBeGreaterThanOrEqual(spans[i - 1]!.to);
  }
}

afterEach(async () => {
  const left = started.splice(0).filter((id) => !(ended(stateOn(0, id)) && ended(stateOn(1, id))));
  await Promise.all(left.map((id) => cli(['stop', id]).exit));
});

describe.skipIf(!NETNS)('GPU slots on 2 real SSH hosts: no deadlock', () => {
  it('two runs at once over the same two hosts in opposite order (h1,h2 and h2,h1) both end ok, one after the other', async () => {
    const ids = await Promise.all([startDetached('fwd'), startDetached('rev')]);
    await allEnd(ids, 240_000);
    expectOkOneAtATime(ids);
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 400_000);

  it('six --detach runs started in pairs on two profiles over the same two hosts in the same order all end ok, one at a time', async () => {
    const ids: string[] = [];
    for (let pair = 0; pair < 3; pair++) ids.push(...(await Promise.all([startDetached('fwd'), startDetached('fwd2')])));
    await allEnd(ids, 420_000);
    expectOkOneAtATime(ids);
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 600_000);
});
