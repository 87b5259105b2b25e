// Issue 24's host-agent defects on real parts: the built bundle's host commands, real agents and
// ranks, a real tmpfs for the full disk. Each failed on the main of 2026-11-26 (04f6507).
// 3: ENOSPC from the 2-s state refresh killed the agent and left state.json `running` forever.
// 6: a run stopped while its host's agent was gone was relaunched by run-rejoin.
// 10: a follower that reached its leader after the leader refused its start (then: --no-queue, busy
//     slots; since the global claim order, a refusal before any hello: a missing engine) kept its
//     slots until its own connect timeout and ended `leader-unreachable`. Its lease check read the
//     pre-issue-24 path `leases/slot-0.json` until session 7 (asserting nothing); it reads slotHolder now.
// 12: a checkpoint temp file left by a write cut short stayed forever: a stale one written by hand
//     before a start, and a real rank SIGKILLed mid-write (held there by a test-only hook) before a resume.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { slotHolder } from '../../trainer/agent/leases';
import type { CheckpointEvent, DoneEvent, RestartEvent } from '../../trainer/protocol';
import { alive } from '../helpers/cli';
import { eventsOf, freePort, hostCmd, hostTestScope, ranksOf, readStateOf, spec, waitUntil } from '../helpers/host';
import { PACED_HOST } from '../helpers/tiny';

const { workdir, runId } = hostTestScope();
const DEAD_PID = 4194305; // above Linux's default pid_max: never a live process
const reply = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!) as { agentPid?: number; state?: string; error?: { code: string; message: string } };
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

describe('host agent defects (issue 24)', () => {
  it('defect 6: run-stop on a host whose agent is gone leaves a stop marker; run-rejoin then refuses to relaunch the run', async () => {
    const wd = workdir();
    const id = runId('stopped-lost');
    const dir = join(wd, 'runs', id);
    mkdirSync(join(dir, 'logs'), { recursive: true });
    const control = { addr: '127.0.0.1', port: await freePort(), token: 'a-token-of-sixteen-chars' };
    writeFileSync(join(dir, 'spec.json'), spec({ runId: id, host: 'h3', role: 'leader', worldSize: 2, ranks: [{ rank: 0, localRank: 0 }], masterPort: await freePort(), control, maxRestarts: 2, config: { steps: 5 } }) + '\n');
    const now = Date.now();
    // the leader host was lost mid-run (its agent died with it), with restarts left
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ v: 1, runId: id, host: 'h3', role: 'leader', state: 'restarting', agentPid: DEAD_PID, startedAt: now - 60_000, updatedAt: now - 30_000, lastStep: 4, restarts: 1 }) + '\n');
    const stop = await hostCmd(wd, ['run-stop', '--run', id, '--wait-ms', '200']);
    expect(stop.code, stop.stdout + stop.stderr).toBe(4); // agent lost: nothing to signal
    const rejoin = await hostCmd(wd, ['run-rejoin', '--run', id]);
    const r = reply(rejoin.stdout);
    if (r.agentPid) process.kill(r.agentPid, 'SIGKILL');
    expect(r.error, rejoin.stdout).toMatchObject({ code: 'run-stopped' });
    expect(r.error?.message).toMatch(/was stopped/);
  });

  it('defect 12: a checkpoint temp file whose writer died is removed before the ranks start; the run trains to ok', async () => {
    const wd = workdir();
    const id = runId('stale-temp');
    const ckpt = join(wd, 'runs', id, 'checkpoints');
    mkdirSync(ckpt, { recursive: true });
    const stale = `.ckpt-00000002.bin.${DEAD_PID}.0badc0de.tmp`;
    writeFileSync(join(ckpt, stale), Buffer.alloc(1 << 20)); // what a SIGKILL mid-write leaves
    const start = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 1, ranks: [{ rank: 0, localRank: 0 }], masterPort: await freePort(), config: { steps: 3, engine: 'tfjs' } }) + '\n' });
    expect(start.code, start.stdout + start.stderr).toBe(0);
    await waitUntil('the run to end', () => ['ok', 'failed', 'cancelled'].includes(readStateOf(wd, id)?.state ?? ''), 180_000, 200);
    expect(readStateOf(wd, id)?.state).toBe('ok');
    expect(readdirSync(ckpt)).not.toContain(stale);
  });

  it('defect 12 on a real rank: SIGKILLed in the middle of a checkpoint write, its partial temp file is removed when the agent resumes; the resumed run ends with the uninterrupted weights', async () => {
    const wd = workdir();
    const refWd = workdir();
    const id = runId('mid-write');
    const ref = runId('mid-write-ref');
    const ckpt = join(wd, 'runs', id, 'checkpoints');
    const hold = join(wd, 'hold-checkpoint-writes');
    // Paced (PACED_HOST) so the test sets the hold between two checkpoints; the reference trains the
    // same config with the same env but the hold, at the same time, in its own workdir.
    const config = { steps: 8, checkpointEvery: 2, seed: 7, engine: 'tfjs' };
    const one = { host: 'h1', worldSize: 1, ranks: [{ rank: 0, localRank: 0 }], config };
    // COHORT_TEST_CHECKPOINT_HOLD: a test-only pause inside the real write (trainer/train/checkpoint.ts,
    // testHoldMidWrite): the rank stops after the temp file's first chunk while the hold file exists,
    // so the SIGKILL lands mid-write every time (a plain tiny checkpoint is written in microseconds).
    const [a, b] = await Promise.all([
      hostCmd(wd, ['run-start'], { stdin: spec({ ...one, runId: id, masterPort: await freePort(), maxRestarts: 1, env: { ...PACED_HOST, COHORT_TEST_CHECKPOINT_HOLD: hold } }) + '\n' }),
      hostCmd(refWd, ['run-start'], { stdin: spec({ ...one, runId: ref, masterPort: await freePort(), env: { ...PACED_HOST } }) + '\n' }),
    ]);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    const saved = await waitUntil('a first checkpoint', () => eventsOf(wd, id).find((e): e is CheckpointEvent => e.type === 'checkpoint' && e.action === 'saved'), 180_000, 50);
    writeFileSync(hold, '');
    const temp = await waitUntil('a checkpoint write held mid-way', () => readdirSync(ckpt).find((f) => f.endsWith('.tmp')), 120_000, 50);
    const [, heldStep, writer] = /^\.step-(\d+)\.ckpt\.(\d+)\.[0-9a-f]+\.tmp$/.exec(temp)!;
    expect(ranksOf(id).map((p) => p.pid), 'the temp file names its writer, the rank').toContain(Number(writer));
    // partial: the header is on disk, the weights are not
    expect(statSync(join(ckpt, temp)).size).toBeLessThan(statSync(saved.path).size / 2);
    process.kill(Number(writer), 'SIGKILL');
    rmSync(hold); // the resumed rank writes freely
    const end = await waitUntil('the run to end', () => (['ok', 'failed', 'cancelled'].includes(readStateOf(wd, id)?.state ?? '') ? readStateOf(wd, id) : undefined), 180_000, 200);
    expect(end, JSON.stringify(end)).toMatchObject({ state: 'ok', restarts: 1 });
    expect(readdirSync(ckpt).filter((f) => f.endsWith('.tmp')), 'a temp file of a write cut short is left').toEqual([]);
    const ev = eventsOf(wd, id);
    expect(ev.some((e) => e.type === 'log' && e.message === `removed ${temp}, a checkpoint write cut short`)).toBe(true);
    const restart = ev.find((e): e is RestartEvent => e.type === 'restart')!;
    expect(restart.resumeStep).toBe(Number(heldStep) - config.checkpointEvery); // the last whole checkpoint
    expect(ev.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep)).toBe(true);
    const refEnd = await waitUntil('the reference run to end', () => (readStateOf(refWd, ref)?.state === 'ok' ? true : undefined), 180_000, 200);
    expect(refEnd).toBe(true);
    const sum = (w: string, r: string) => eventsOf(w, r).find((e): e is DoneEvent => e.type === 'done')?.paramChecksum;
    expect(sum(wd, id)).toBe(sum(refWd, ref));
    expect(sum(wd, id)).toMatch(/^[0-9a-f]{64}$/);
  }, 400_000);

  it('defect 10: a follower that reaches its leader after the leader refused its start hears the end at once, not its connect timeout', async () => {
    const lw = workdir();
    const fw = workdir();
    const id = runId('refused-start');
    const control = { addr: '127.0.0.1', port: await freePort(), token: 'a-token-of-sixteen-chars' };
    const common = { runId: id, worldSize: 2, masterPort: await freePort(), control, config: { steps: 3, engine: 'tfjs' } };
    // The leader refuses before any follower says hello: its engine is missing (a pinned Python that is
    // not there). Not busy slots any more: in the global claim order the leader claims only once every
    // follower has said hello, so a busy-slot refusal reaches a connected follower (claim-order.ts).
    const noEngine = { config: { steps: 3, engine: 'torch' }, env: { COHORT_PYTHON: join(lw, 'no-such-python') } };
    const lead = await hostCmd(lw, ['run-start'], { stdin: spec({ ...common, ...noEngine, host: 'h1', role: 'leader', ranks: [{ rank: 0, localRank: 0 }] }) + '\n' });
    expect(lead.code, lead.stdout + lead.stderr).toBe(0);
    await waitUntil('the leader to refuse its start', () => readStateOf(lw, id)?.state === 'failed', 60_000, 100);
    expect(readStateOf(lw, id)?.error).toMatchObject({ code: 'engine-unavailable' });
    const fol = await hostCmd(fw, ['run-start'], { stdin: spec({ ...common, host: 'h2', role: 'follower', leader: 'h1', ranks: [{ rank: 1, localRank: 0 }] }) + '\n' });
    expect(fol.code, fol.stdout + fol.stderr).toBe(0);
    const pid = reply(fol.stdout).agentPid!;
    // The follower's slot, read where the product keeps it (slotHolder), on every poll while it lives:
    // a follower is asked to claim only after its hello (the global claim order), and this leader
    // refused before any hello, so the slot is never held, and nothing is left when the follower ends.
    const held = new Set<string>();
    await waitUntil('the follower to end', () => {
      const h = slotHolder(fw, 0);
      if (h) held.add('lease' in h ? `${h.lease.runId} (pid ${h.lease.pid})` : `${h.file}: ${h.damaged}`);
      return !alive(pid);
    }, 60_000, 100);
    // the leader's end, not a connect timeout (leader-unreachable), and its slot is free
    expect(readStateOf(fw, id)).toMatchObject({ state: 'failed', error: { message: expect.stringMatching(/the leader ended the run: --engine torch: no Python with PyTorch found/) } });
    expect([...held], 'the follower held its slot while its leader had refused').toEqual([]);
    expect(slotHolder(fw, 0)).toBeUndefined();
  });

  // 40 steps (were 100, issue 25): the disk is full from the first step on, so 39 steps write nothing
  const FULL_DISK_STEPS = 40;
  it('defect 3: a full disk under the run keeps the agent alive and training; state.json reaches the end, not `running` forever', async () => {
    const wd = workdir();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', wd]);
    mounts.push(wd);
    const id = runId('full-disk');
    const start = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 1, ranks: [{ rank: 0, localRank: 0 }], masterPort: await freePort(), config: { steps: FULL_DISK_STEPS, engine: 'tfjs' } }) + '\n' });
    expect(start.code, start.stdout + start.stderr).toBe(0);
    const pid = reply(start.stdout).agentPid!;
    await waitUntil('a first step', () => (readStateOf(wd, id)?.lastStep ?? 0) >= 1, 120_000, 100);
    // fill the disk: dd stops at ENOSPC
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(wd, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
    } catch {
      // ENOSPC is the point
    }
    await waitUntil('the agent to end', () => !alive(pid), 180_000, 200);
    // It trains on (the ranks write nothing to the workdir): ok at the last step. A failure would have
    // to be a named one; what it must never be again is `running` with its agent gone.
    const st = readStateOf(wd, id);
    expect(st?.state, JSON.stringify(st)).toBe('ok');
    expect(st?.lastStep).toBe(FULL_DISK_STEPS);
  });
});
