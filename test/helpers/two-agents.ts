// The setup of the host tests of a multi-host run, once: two real agents on loopback started with
// `run-start` as core starts them, as hosts h1 (leader, rank 0) and h2 (follower naming h1, rank 1),
// each in its own workdir, a control endpoint with a random token, a run of 100,000 steps (tinyConfig),
// and the wait until the leader's record has reached a step. What a file varies goes in `opts`.
// A run of 100,000 steps is one that only stays alive until the test's fault or stop: paced (PACED_HOST
// in both hosts' env, its ranks sleep between steps); a file's own env is merged over it.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { LaunchSpec } from '../../trainer/protocol';
import { freePort, hostCmd, processesOf, readStateOf, spec, waitUntil } from './host';
import { PACED_HOST } from './tiny';

type SpecFields = Partial<Omit<LaunchSpec, 'config'>>;

export interface TwoAgentsOptions {
  /** Fields of both hosts' specs (maxRestarts, env); `config` is merged over { steps: 100000 } (paced: see above). */
  spec?: SpecFields & { config?: Record<string, unknown> };
  /** Fields of the leader's spec only (spares, env). */
  leader?: SpecFields;
  /** Fields of the follower's spec only (env). */
  follower?: SpecFields;
  /** Wait until the leader's record says this step (default 1; 0: no wait)... */
  untilStep?: number;
  /** ...within this long (default 120 s). */
  withinMs?: number;
}

export interface TwoAgents {
  /** The agents' pids, from run-start's answers. */
  leaderPid: number;
  followerPid: number;
}

/** Starts run `id` on two agents with workdirs w1 (h1) and w2 (h2); fails the test if either refuses. */
export async function startTwoAgents(id: string, [w1, w2]: [string, string], opts: TwoAgentsOptions = {}): Promise<TwoAgents> {
  const control = { addr: '127.0.0.1', port: await freePort(), token: randomBytes(16).toString('hex') };
  const { config, ...fields } = opts.spec ?? {};
  const common = { ...fields, runId: id, worldSize: 2, masterPort: await freePort(), control, config: { steps: 100000, ...config } };
  const env = (own?: Record<string, string>) => ({ ...(common.config.steps === 100000 ? PACED_HOST : {}), ...fields.env, ...own });
  const [a, b] = await Promise.all([
    hostCmd(w1, ['run-start'], { stdin: spec({ ...common, ...opts.leader, env: env(opts.leader?.env), host: 'h1', role: 'leader', ranks: [{ rank: 0, localRank: 0 }] }) }),
    hostCmd(w2, ['run-start'], { stdin: spec({ ...common, ...opts.follower, env: env(opts.follower?.env), host: 'h2', role: 'follower', leader: 'h1', ranks: [{ rank: 1, localRank: 0 }] }) }),
  ]);
  expect(a.code, a.stdout + a.stderr).toBe(0);
  expect(b.code, b.stdout + b.stderr).toBe(0);
  const agentPid = (r: { stdout: string }) => (JSON.parse(r.stdout) as { agentPid: number }).agentPid;
  const step = opts.untilStep ?? 1;
  if (step > 0) await waitUntil(`step ${step} in h1's record`, () => (readStateOf(w1, id)?.lastStep ?? 0) >= step, opts.withinMs ?? 120_000);
  return { leaderPid: agentPid(a), followerPid: agentPid(b) };
}

/** A host "crashes" as a machine does for its processes: its agent of run `id` and that agent's ranks SIGKILLed, its disk kept. */
export function crashAgent(id: string, agentPid: number): void {
  for (const p of processesOf(id).filter((x) => x.pid === agentPid || x.ppid === agentPid)) process.kill(p.pid, 'SIGKILL');
}

/**
 * The opening of the "stop sent while the leader was down" tests (issue 24): run `id` on two agents
 * with restarts left; h1 crashes (crashAgent); h2 stops its rank and waits for h1; the stop
 * (`run-stop`) reaches h2 only. What each test checks next stays in its file.
 */
export async function stopWhileLeaderDown(id: string, [w1, w2]: [string, string]): Promise<void> {
  const { leaderPid } = await startTwoAgents(id, [w1, w2], { spec: { maxRestarts: 2 } });
  crashAgent(id, leaderPid);
  await waitUntil('h2 to wait for h1', () => readStateOf(w2, id)?.state === 'restarting', 60_000);
  const stop = await hostCmd(w2, ['run-stop', '--run', id, '--reason', 'stopped by the user', '--wait-ms', '10000']);
  expect(stop.code, stop.stdout + stop.stderr).toBe(0);
}
