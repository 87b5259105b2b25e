// `run-rejoin --run ID` (trainer/agent/run-start.ts), the host command a client uses to relaunch a
// lost host's agent (a follower's, or the leader's) from the spec its workdir kept: the built bundle,
// real processes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alive } from '../helpers/cli';
import { freePort, hostCmd, hostTestScope, readStateOf, spec, waitUntil } from '../helpers/host';

const { workdir, runId } = hostTestScope();

/** A run dir as a killed host leaves it: spec.json, and state.json naming an agent that is gone. */
async function lostRecord(wd: string, id: string, o: { role: 'leader' | 'follower'; state?: string; maxRestarts?: number; restarts?: number }): Promise<void> {
  const dir = join(wd, 'runs', id);
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const control = { addr: '127.0.0.1', port: await freePort(), token: 'a-token-of-sixteen-chars' };
  writeFileSync(join(dir, 'spec.json'), spec({ runId: id, host: 'h3', role: o.role, worldSize: 2, ranks: [{ rank: o.role === 'leader' ? 0 : 1, localRank: 0 }], masterPort: await freePort(), control, maxRestarts: o.maxRestarts ?? 0, config: { steps: 5 } }) + '\n');
  const now = Date.now();
  // pid 2^22+1 is above Linux's pid_max default: never a live process
  writeFileSync(join(dir, 'state.json'), JSON.stringify({ v: 1, runId: id, host: 'h3', role: o.role, state: o.state ?? 'running', agentPid: 4194305, startedAt: now - 60_000, updatedAt: now - 30_000, lastStep: 4, restarts: o.restarts ?? 0 }) + '\n');
}

const reply = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!) as { agentPid?: number; state?: string; error?: { code: string; message: string } };

describe('run-rejoin', () => {
  it("relaunches a follower's dead agent from its kept spec; a second run-rejoin answers with the live agent instead of starting another", async () => {
    const wd = workdir();
    const id = runId('rejoin');
    await lostRecord(wd, id, { role: 'follower' });
    const r = await hostCmd(wd, ['run-rejoin', '--run', id]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const first = reply(r.stdout);
    expect(first.agentPid).toBeGreaterThan(0);
    expect(first.agentPid).not.toBe(4194305);
    expect(alive(first.agentPid!)).toBe(true);
    expect(readStateOf(wd, id)).toMatchObject({ agentPid: first.agentPid, role: 'follower' });

    const again = await hostCmd(wd, ['run-rejoin', '--run', id]);
    expect(again.code, again.stdout).toBe(0);
    expect(reply(again.stdout).agentPid).toBe(first.agentPid);

    // no leader listens here: stop the relaunched agent ourselves (it records cancelled and exits)
    process.kill(first.agentPid!, 'SIGTERM');
    await waitUntil('the agent to end', () => !alive(first.agentPid!), 15_000);
    expect(readStateOf(wd, id)?.state).toBe('cancelled');
  });

  it("relaunches a lost leader's agent over its record: with restarts left it keeps the run's start, restarts and last step and waits for its followers; with none left it ends failed host-lost", async () => {
    const wd = workdir();
    const lead = runId('rejoin-leader');
    await lostRecord(wd, lead, { role: 'leader', maxRestarts: 2, restarts: 1 });
    const before = readStateOf(wd, lead)!;
    const r = await hostCmd(wd, ['run-rejoin', '--run', lead]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const pid = reply(r.stdout).agentPid!;
    expect(alive(pid)).toBe(true);
    // waits for the rank on the other host (no follower here), its ranks not started
    await waitUntil('the relaunched leader to say it waits', () => readStateOf(wd, lead)?.state === 'restarting', 10_000);
    expect(readStateOf(wd, lead)).toMatchObject({ agentPid: pid, role: 'leader', restarts: 1, startedAt: before.startedAt, lastStep: 4, error: { code: 'host-lost', host: 'h3' } });
    process.kill(pid, 'SIGTERM');
    await waitUntil('the agent to end', () => !alive(pid), 15_000);

    const spent = runId('rejoin-leader-spent');
    await lostRecord(wd, spent, { role: 'leader', maxRestarts: 1, restarts: 1 });
    const s2 = await hostCmd(wd, ['run-rejoin', '--run', spent]);
    const pid2 = reply(s2.stdout).agentPid;
    if (pid2) await waitUntil('the spent leader to end', () => !alive(pid2), 15_000);
    expect(readStateOf(wd, spent)).toMatchObject({ state: 'failed', restarts: 1, error: { code: 'host-lost', host: 'h3' } });
    expect(readStateOf(wd, spent)?.error?.message).toMatch(/no restarts left \(--max-restarts 1\)/);
  });

  it('refuses an ended run, a missing record, and a rejoin already under way', async () => {
    const wd = workdir();
    const ended = runId('rejoin-ended');
    await lostRecord(wd, ended, { role: 'follower', state: 'failed' });
    expect(reply((await hostCmd(wd, ['run-rejoin', '--run', ended])).stdout).error).toMatchObject({ code: 'run-ended' });

    const none = await hostCmd(wd, ['run-rejoin', '--run', runId('rejoin-none')]);
    expect(none.code).toBe(5);
    expect(reply(none.stdout).error?.message).toMatch(/workdir was not kept/);

    const busy = runId('rejoin-busy');
    await lostRecord(wd, busy, { role: 'follower' });
    writeFileSync(join(wd, 'runs', busy, 'rejoin.lock'), '');
    expect(reply((await hostCmd(wd, ['run-rejoin', '--run', busy])).stdout).error).toMatchObject({ code: 'rejoin-busy' });
    expect(readStateOf(wd, busy)?.agentPid).toBe(4194305); // nothing was started
  });
});
