// `run-rejoin --run ID` (trainer/agent/run-start.ts), the host command a client uses to relaunch a
// lost follower host's agent from the spec its workdir kept: the built bundle, real processes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alive } from '../helpers/cli';
import { freePort, hostCmd, hostTestScope, readStateOf, spec, waitUntil } from '../helpers/host';

const { workdir, runId } = hostTestScope();

/** A run dir as a killed host leaves it: spec.json, and state.json naming an agent that is gone. */
async function lostRecord(wd: string, id: string, o: { role: 'leader' | 'follower'; state?: string }): Promise<void> {
  const dir = join(wd, 'runs', id);
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const control = { addr: '127.0.0.1', port: await freePort(), token: 'a-token-of-sixteen-chars' };
  writeFileSync(join(dir, 'spec.json'), spec({ runId: id, host: 'h3', role: o.role, worldSize: 2, ranks: [{ rank: 1, localRank: 0 }], masterPort: await freePort(), control, config: { steps: 5 } }) + '\n');
  const now = Date.now();
  // pid 2^22+1 is above Linux's pid_max default: never a live process
  writeFileSync(join(dir, 'state.json'), JSON.stringify({ v: 1, runId: id, host: 'h3', role: o.role, state: o.state ?? 'running', agentPid: 4194305, startedAt: now - 60_000, updatedAt: now - 30_000, restarts: 0 }) + '\n');
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

  it("refuses a leader's record (its leader holds the run), an ended run, a missing record, and a rejoin already under way", async () => {
    const wd = workdir();
    const lead = runId('rejoin-leader');
    await lostRecord(wd, lead, { role: 'leader' });
    expect(reply((await hostCmd(wd, ['run-rejoin', '--run', lead])).stdout).error).toMatchObject({ code: 'not-follower' });

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
