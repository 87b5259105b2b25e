// Issue 24 defect 4 on two real OpenSSH hosts (network namespaces), through the real `cohort` CLI:
// runs over the same hosts must never deadlock on their GPU slots (one slot per host).
//   - two runs started at once over the same two hosts in opposite order (h1,h2 and h2,h1): each
//     host's agent claimed its own slot, so each run held one host and queued for the other, forever
//   - six --detach runs, started in pairs on two profiles over the same two hosts in the same order:
//     queued runs split the hosts between them (four stayed queued with nothing running)
// Both end with every run ok, one at a time (never two runs on a slot at once).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeRunState, type RunStateRecord } from '../../trainer/protocol';
import { harnessMode, leftovers, startHosts, trainerProcesses, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { runCli, type CliRun } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

let cluster: SshdCluster;
let dir = '';
let env: NodeJS.ProcessEnv;
const clients: CliRun[] = [];
/** Runs started by the current test: a deadlock (the test failed) leaves them queued; stopped after it, so the next test starts clean. */
const started: string[] = [];
const tiny = tinyRun({ warmupSteps: 0 });

function cli(args: string[]): CliRun {
  const r = runCli(args, { env });
  clients.push(r);
  return r;
}

/** One run's record on one host (the hosts share this machine's filesystem). */
function stateOn(host: number, runId: string): RunStateRecord | undefined {
  const p = join(cluster.hosts[host]!.workdir, 'runs', runId, 'state.json');
  if (!existsSync(p)) return undefined;
  try {
    return decodeRunState(JSON.parse(readFileSync(p, 'utf8')));
  } catch {
    return undefined; // mid-replace
  }
}

/** When the run's ranks first started on a host: the agent's `env` event there (told as it starts them). */
function firstRanAt(host: number, runId: string): number | undefined {
  const p = join(cluster.hosts[host]!.workdir, 'runs', runId, 'events.jsonl');
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
      const where = runIds.map((id) => `${id}: ${[0, 1].map((h) => `${cluster.hosts[h]!.name} ${stateOn(h, id)?.state ?? '-'}${stateOn(h, id)?.queuedBehind ? ` behind ${stateOn(h, id)!.queuedBehind}` : ''}`).join(', ')}`);
      throw new Error(`runs still not ended after ${ms / 1000} s (a deadlock on the slots?):\n${where.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Every run ok on both hosts, and no two of them ever ran at once (one slot per host). */
function expectOkOneAtATime(runIds: string[]): void {
  for (const id of runIds) for (const h of [0, 1]) expect(stateOn(h, id)?.state, `${id} on ${cluster.hosts[h]!.name}`).toBe('ok');
  for (const h of [0, 1]) {
    const spans = runIds.map((id) => ({ id, from: firstRanAt(h, id)!, to: stateOn(h, id)!.endedAt! })).sort((a, b) => a.from - b.from);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.from, `${spans[i]!.id} started on ${cluster.hosts[h]!.name} before ${spans[i - 1]!.id} ended there`).toBeGreaterThanOrEqual(spans[i - 1]!.to);
  }
}

beforeAll(async () => {
  if (!NETNS) return;
  cluster = await startHosts(2);
  dir = mkdtempSync(join(tmpdir(), 'cohort-slot-deadlock-'));
  const knownHosts = join(dir, 'known_hosts');
  copyFileSync(cluster.knownHostsPath, knownHosts);
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: knownHosts, SSH_AUTH_SOCK: '' };
  const hosts = cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir }));
  for (const [name, list] of [['fwd', hosts], ['fwd2', hosts], ['rev', [hosts[1]!, hosts[0]!]]] as const) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ name, hosts: list }));
    const imported = cli(['profiles', 'import', file]);
    expect((await imported.exit).code, imported.stderr).toBe(0);
  }
  const deployed = cli(['deploy', 'fwd']);
  expect((await deployed.exit).code, deployed.stderr).toBe(0);
}, 300_000);

afterEach(async () => {
  const left = started.splice(0).filter((id) => !(ended(stateOn(0, id)) && ended(stateOn(1, id))));
  await Promise.all(left.map((id) => cli(['stop', id]).exit));
});

afterAll(async () => {
  for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  // a deadlocked run (the test failed) keeps its agents: dispose() kills every process of the hosts' sessions
  const id = cluster?.id;
  await cluster?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

describe.skipIf(!NETNS)('GPU slots on 2 real SSH hosts: no deadlock', () => {
  it('two runs at once over the same two hosts in opposite order (h1,h2 and h2,h1) both end ok, one after the other', async () => {
    const ids = await Promise.all([startDetached('fwd'), startDetached('rev')]);
    await allEnd(ids, 240_000);
    expectOkOneAtATime(ids);
    expect(await trainerProcesses(cluster)).toEqual([]);
  }, 400_000);

  it('six --detach runs started in pairs on two profiles over the same two hosts in the same order all end ok, one at a time', async () => {
    const ids: string[] = [];
    for (let pair = 0; pair < 3; pair++) ids.push(...(await Promise.all([startDetached('fwd'), startDetached('fwd2')])));
    await allEnd(ids, 420_000);
    expectOkOneAtATime(ids);
    expect(await trainerProcesses(cluster)).toEqual([]);
  }, 600_000);
});
