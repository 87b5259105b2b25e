// Slot leases + queue and restarts from the last checkpoint (issue 12 host side), through the real
// host commands of the built bundle on one temp workdir.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { claimSlots, slotHolder } from '../../trainer/agent/leases';
import type { DoneEvent, RestartEvent, StepEvent } from '../../trainer/protocol';
import { eventsOf, freePort, hostCmd, hostTestScope, processesOf, ranksOf, readStateOf, spec, waitUntil } from '../helpers/host';
import { PACED_HOST } from '../helpers/tiny';
import { torchMissingReason } from '../helpers/torch';

const { workdir, runId } = hostTestScope();
/** A Python with torch where the engine's own search looks first; the torch restart test needs one. */
const hasTorch = ['/usr/bin/python3', 'python3'].some((python) => torchMissingReason(python) === undefined);
/** The torch engine's rank processes (python, `-X cohort_run=<id>` in their arguments). */
const torchRanksOf = (id: string) => processesOf(id).filter((p) => p.args.includes(`cohort_run=${id}`));
const twoRanks = [
  { rank: 0, localRank: 0 },
  { rank: 1, localRank: 1 },
];
const terminal = (wd: string, id: string) => {
  const s = readStateOf(wd, id);
  return s && ['ok', 'failed', 'cancelled'].includes(s.state) ? s : undefined;
};
async function start(wd: string, id: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const r = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks: twoRanks, masterPort: await freePort(), config, ...extra }) });
  expect(r.code, r.stdout).toBe(0);
  return JSON.parse(r.stdout) as { agentPid: number; state: string };
}

describe('slot leases', () => {
  it('a second run on busy slots is queued behind the first, starts when it ends, never both at once; queue:false refuses', async () => {
    const wd = workdir();
    const a = runId('lease-a');
    const b = runId('lease-b');
    const c = runId('lease-c');
    // A holds the slot while B queues and C asks (at width 1/4 a 6-step A ended before C started on a
    // quiet machine, and C ran: seen in a fresh-clone CI). Paced (PACED_HOST: a 250 ms sleep between
    // steps), its 40 steps last ≥ 10 s however fast the machine, and its ranks idle meanwhile.
    await start(wd, a, { steps: 40 }, { env: { ...PACED_HOST } });
    await waitUntil('run A running', () => readStateOf(wd, a)?.state === 'running');
    await start(wd, b, { steps: 3 });
    const q = await waitUntil('run B queued', () => (readStateOf(wd, b)?.state === 'queued' ? readStateOf(wd, b) : undefined), 10_000);
    expect(q.queuedBehind).toBe(a);
    // The record is two files (state.json, events.jsonl) written one after the other: the log line may land a moment after the state.
    await waitUntil('run B\'s queued log line', () => eventsOf(wd, b).some((e) => e.type === 'log' && e.message.includes(`queued behind ${a}`)), 5_000);
    await start(wd, c, { steps: 3 }, { queue: false });
    const refused = await waitUntil('run C refused', () => terminal(wd, c), 10_000);
    expect(refused).toMatchObject({ state: 'failed', error: { code: 'slots-busy' } });
    // the run that holds the slot when C asks: A, or B should A have ended first
    expect(refused.error!.message).toMatch(new RegExp(`busy with run (${a}|${b})`));
    let overlap = 0;
    let bRanSeen = false;
    await waitUntil(
      'run B to finish',
      () => {
        const ra = ranksOf(a).length;
        const rb = ranksOf(b).length;
        if (ra > 0 && rb > 0) overlap++;
        if (rb > 0) bRanSeen = true;
        return terminal(wd, b);
      },
      240_000,
      30,
    );
    expect(overlap).toBe(0);
    expect(bRanSeen).toBe(true);
    expect(terminal(wd, a)?.state).toBe('ok');
    expect(terminal(wd, b)?.state).toBe('ok');
    const hello = eventsOf(wd, b).find((e) => e.type === 'hello')!;
    expect(hello.time).toBeGreaterThanOrEqual(readStateOf(wd, a)!.endedAt!);
  }, 300_000);

  it('a stale lease (its agent dead, or another boot) is reclaimed', async () => {
    const wd = workdir();
    // Leases where and as the product writes them (claimSlots; slotHolder finds the file). Until session 7
    // these were `leases/slot-N.json`, the pre-issue-24 form, which the claim only reads to respect a live one.
    expect(claimSlots(wd, 'gone', [0], { pid: 2 ** 22 + 7 }).ok).toBe(true); // its agent dead
    // slot 1's holder is alive and names its run: only the boot id makes the lease stale
    const other = runId('other-boot');
    const holder = spawn('sh', ['-c', 'sleep 600; :', other], { stdio: 'ignore', detached: true });
    try {
      expect(claimSlots(wd, other, [1], { pid: holder.pid! }).ok).toBe(true);
      const h = slotHolder(wd, 1);
      if (!h || !('lease' in h)) throw new Error(`slot 1's lease: ${JSON.stringify(h)}`);
      writeFileSync(h.file, JSON.stringify({ ...h.lease, bootId: 'not-this-boot' }));
      const id = runId('stale');
      await start(wd, id, { steps: 1 });
      expect((await waitUntil('the run to end', () => terminal(wd, id))).state).toBe('ok');
      // Taken over, then released: the agent writes its end (the state above) before its exit effect
      // releases the slots, so a reader may see `ok` a moment before the leases go (ci14's second run,
      // 3 busy files at once). Waited for, then asserted.
      await waitUntil('both slots released', () => slotHolder(wd, 0) === undefined && slotHolder(wd, 1) === undefined, 10_000).catch(() => undefined);
      expect([slotHolder(wd, 0), slotHolder(wd, 1)]).toEqual([undefined, undefined]);
    } finally {
      process.kill(-holder.pid!, 'SIGKILL');
    }
  });
});

describe('restarts from the last checkpoint', () => {
  const config = { steps: 10, checkpointEvery: 3, seed: 7 };

  it('--max-restarts 1: kill -9 of a rank after a checkpoint → restart event, ok, the same paramChecksum as an uninterrupted run', async () => {
    const wd = workdir();
    const ref = runId('ref');
    await start(wd, ref, config);
    const refDone = await waitUntil('the reference run', () => terminal(wd, ref));
    expect(refDone.state).toBe('ok');
    const refSum = (eventsOf(wd, ref).find((e) => e.type === 'done') as DoneEvent).paramChecksum;

    const id = runId('restart');
    await start(wd, id, config, { maxRestarts: 1 });
    await waitUntil('a checkpoint', () => eventsOf(wd, id).some((e) => e.type === 'checkpoint' && e.action === 'saved'));
    const rank1 = ranksOf(id).sort((x, y) => x.pid - y.pid)[1]!; // started second: rank 1
    const killedAt = Date.now();
    process.kill(rank1.pid, 'SIGKILL');
    const end = await waitUntil('the run to end', () => terminal(wd, id), 120_000);
    expect(end).toMatchObject({ state: 'ok', restarts: 1 });
    const ev = eventsOf(wd, id);
    const restart = ev.find((e): e is RestartEvent => e.type === 'restart')!;
    expect(restart).toMatchObject({ attempt: 1, host: 'h1' });
    expect(restart.resumeStep).toBeGreaterThanOrEqual(3);
    expect(ev.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep)).toBe(true);
    const firstAfter = ev.slice(ev.indexOf(restart)).find((e): e is StepEvent => e.type === 'step')!;
    expect(firstAfter.step).toBe(restart.resumeStep + 1);
    console.log(`restart: kill → restart event ${restart.time - killedAt} ms, kill → first step after resume ${firstAfter.time - killedAt} ms`);
    const done = ev.find((e): e is DoneEvent => e.type === 'done')!;
    expect(done.paramChecksum).toBe(refSum);
    await waitUntil('no process left', () => processesOf(id).length === 0, 10_000);
  }, 300_000); // two whole runs one after the other (reference + restarted) on a shared 2-core box

  it.skipIf(!hasTorch)('torch engine: --max-restarts 1, kill -9 of a rank after a checkpoint → restart, ok, the same paramChecksum as an uninterrupted run', async () => {
    const tconfig = { ...config, engine: 'torch', steps: 8 };
    const wd = workdir();
    const ref = runId('torch-ref');
    await start(wd, ref, tconfig);
    const refDone = await waitUntil('the torch reference run', () => terminal(wd, ref), 240_000);
    expect(refDone.state, JSON.stringify(refDone.error)).toBe('ok');
    const refSum = (eventsOf(wd, ref).find((e) => e.type === 'done') as DoneEvent).paramChecksum;

    const id = runId('torch-restart');
    await start(wd, id, tconfig, { maxRestarts: 1 });
    await waitUntil('a checkpoint', () => eventsOf(wd, id).some((e) => e.type === 'checkpoint' && e.action === 'saved'), 240_000);
    const victim = torchRanksOf(id).sort((x, y) => x.pid - y.pid)[1]!; // started second: rank 1
    process.kill(victim.pid, 'SIGKILL');
    const end = await waitUntil('the run to end', () => terminal(wd, id), 240_000);
    expect(end, JSON.stringify(end.error)).toMatchObject({ state: 'ok', restarts: 1 });
    const ev = eventsOf(wd, id);
    const restart = ev.find((e): e is RestartEvent => e.type === 'restart')!;
    expect(restart.resumeStep).toBeGreaterThanOrEqual(3); // the restart event names the step the engine really resumed from
    expect(ev.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep), JSON.stringify(ev.filter((e) => e.type === 'checkpoint' || e.type === 'restart'))).toBe(true);
    // one `done`, the run's: the first attempt's rank 0 ends with `done failed` when it sees its peer die
    // first, and that is not the run's end (seen in fresh-clone CI)
    const dones = ev.filter((e): e is DoneEvent => e.type === 'done');
    expect(dones.map((d) => d.status)).toEqual(['ok']);
    expect(dones[0]!.paramChecksum).toBe(refSum);
    await waitUntil('no process left', () => processesOf(id).length === 0, 10_000);
  }, 600_000);

  it('--max-restarts 0: the same kill fails the run, naming the rank', async () => {
    const wd = workdir();
    const id = runId('norestart');
    await start(wd, id, { ...config, steps: 100000 });
    await waitUntil('a checkpoint', () => eventsOf(wd, id).some((e) => e.type === 'checkpoint'));
    const rank1 = ranksOf(id).sort((x, y) => x.pid - y.pid)[1]!;
    const t0 = Date.now();
    process.kill(rank1.pid, 'SIGKILL');
    const end = await waitUntil('the run to fail', () => terminal(wd, id), 30_000);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(end).toMatchObject({ state: 'failed', restarts: 0, error: { host: 'h1', code: 'rank-exited' } });
    expect(eventsOf(wd, id).some((e) => e.type === 'restart')).toBe(false);
    await waitUntil('no process left', () => processesOf(id).length === 0, 10_000);
  });
});
