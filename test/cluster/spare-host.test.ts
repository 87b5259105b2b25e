// Issue 21 item 5, "bad node out", on 4 real OpenSSH hosts (network namespaces), through the real
// `cohort` CLI: a profile of 4 hosts whose h4 is `spare: true` runs a 3-rank run (h1, h2, h3) with
// `--max-restarts 1` and checkpoints. h3 dies as a machine does after a checkpoint (link down, sshd
// and every process on it killed) and is NOT brought back: the leader excludes h3 and moves its rank
// to the spare h4 (the restart event names both and waits for h4, not h3); the client following the
// run starts h4's agent with h3's rank (electron/core/runs/run-spare.ts); the run resumes from the
// checkpoint without h3, ends ok with the paramChecksum of an uninterrupted 3-rank run of the same
// seed, and leaves 0 processes on every host. (Without a spare: host-restart.test.ts, unchanged.)
// First, on the same cluster, a HUNG host (issue 21 item 5: lost, hung, or errors from the check):
// rank 1 on h2 is stopped with SIGSTOP after a checkpoint (its agent and sshd stay up); the hang
// error names it, the leader excludes h2 (its agent told to end) and moves its rank to the spare h4;
// ok with the same uninterrupted checksum, 0 processes left. Its profile's hosts set
// COHORT_HANG_FLOOR_MS=5000 (the ranks' hang floor, read from the host env; the product's 10 s is
// test/local/hang-location*.test.ts's), and the hang sentence says so: the knob reaches the ranks.
import { describe, expect, it } from 'vitest';
import type { DoneEvent, ErrorEvent, RestartEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { QUICK_CLIENT_SSH, QUICK_HOST_TIMINGS, tinyRun } from '../helpers/tiny';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

const tiny = tinyRun({ warmupSteps: 0, seed: 7 });
// 10 steps, a checkpoint every 2 (were 14 and 3, issue 25: 4 steps less in each of the 2 runs); the crash
// still comes after the first checkpoint, with steps left to resume.
const STEPS = 10;
const fixed = ['--steps', String(STEPS), '--checkpoint-every', '2'];
const quick = (host: number, extra: Record<string, unknown> = {}) => ({ host, env: { ...QUICK_HOST_TIMINGS }, ...extra });
const fx = useCohortCluster(4, {
  enabled: NETNS,
  clientEnv: { COHORT_LOST_AFTER_MS: '20000', ...QUICK_CLIENT_SSH, COHORT_SSH_CONNECT_TIMEOUT_MS: '4000' },
  profiles: {
    trio: [quick(0), quick(1), quick(2)],
    // the leader waits 60 s for the spare (not the product's 180 s): without its start the run fails spare-missing soon
    'trio-spare': [{ host: 0, env: { ...QUICK_HOST_TIMINGS, COHORT_HOST_WAIT_MS: '60000' } }, quick(1), quick(2), quick(3, { spare: true })],
    'trio-spare-hang': [0, 1, 2, 3].map((i) => ({ host: i, env: { ...QUICK_HOST_TIMINGS, COHORT_HANG_FLOOR_MS: '5000', ...(i === 0 ? { COHORT_HOST_WAIT_MS: '60000' } : {}) }, ...(i === 3 ? { spare: true } : {}) })),
  },
  deploy: 'trio-spare',
});

/** The paramChecksum of an uninterrupted 3-rank run of the same seed (run once, for both cases). */
let reference: Promise<string> | undefined;
const uninterruptedChecksum = () =>
  (reference ??= (async () => {
    const ref = fx().cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--json'], { json: true });
    expect((await ref.exit).code, ref.stderr.slice(-3000)).toBe(0);
    return ref.events.find((e): e is DoneEvent => e.type === 'done')!.paramChecksum;
  })());

describe.skipIf(!NETNS)('bad node out: a lost host replaced by the profile\'s spare host, 4 real SSH hosts', () => {
  it('rank 1 on h2 stopped (SIGSTOP) after a checkpoint: the hang names it, restart names h2 excluded and h4 its replacement, ok with the uninterrupted paramChecksum, 0 processes left', async () => {
    const uninterrupted = await uninterruptedChecksum();
    const run = fx().cli(['run', '--profile', 'trio-spare-hang', ...fixed, ...tiny, '--max-restarts', '1', '--json'], { json: true });
    let stopped: number | undefined;
    try {
      await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
      const rank = (await fx().cluster.processes(1)).find((p) => /cohort-trainer\.mjs rank(\s|$)/.test(p.cmd));
      expect(rank, `rank 1's process on h2: ${(await fx().trainerProcesses([1])).join(' | ')}`).toBeDefined();
      process.kill((stopped = rank!.pid), 'SIGSTOP');
      const stoppedAt = Date.now();
      const restart = (await run.waitFor((e) => e.type === 'restart', 120_000)) as RestartEvent;
      expect(restart).toMatchObject({ attempt: 1, host: 'h2', rank: 1, code: 'rank-hung', excluded: 'h2', replacement: 'h4', waitingFor: ['h4'] });
      const first = run.events.find((e): e is ErrorEvent => e.type === 'error')!;
      expect(first).toMatchObject({ host: 'h2', rank: 1, code: 'rank-hung' });
      expect(first.message).toMatch(/at least 5 s, at most the peer timeout/); // the hosts' COHORT_HANG_FLOOR_MS reached the ranks
      const exit = await run.exit;
      expect(exit.code, run.stderr.slice(-3000)).toBe(0);
      const ev = run.events;
      expect(ev.some((e) => e.type === 'log' && /the spare host h4's agent of run .* runs \(pid \d+\) in place of h2/.test(e.message)), 'the client said it started h4').toBe(true);
      const after = ev.slice(ev.indexOf(restart));
      expect(after.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep)).toBe(true);
      expect(after.some((e) => 'host' in e && e.host === 'h4')).toBe(true);
      const done = ev.find((e): e is DoneEvent => e.type === 'done')!;
      expect(done).toMatchObject({ status: 'ok', steps: STEPS });
      expect(done.paramChecksum).toBe(uninterrupted);
      expect(ev.filter((e) => e.type === 'restart')).toHaveLength(1);
      await until('0 processes on every host', async () => (await fx().trainerProcesses()).length === 0, 15_000);
      process.stderr.write(`spare host (hung h2): SIGSTOP -> first error ${first.time - stoppedAt} ms, -> restart ${restart.time - stoppedAt} ms; restart -> done ${done.time - restart.time} ms\n`);
    } finally {
      if (stopped) {
        try {
          process.kill(stopped, 'SIGCONT');
        } catch {
          /* gone */
        }
      }
    }
  }, 600_000);

  it('h3 killed after a checkpoint and never back: restart names h3 excluded and h4 its replacement, the client starts h4\'s agent, ok with the uninterrupted paramChecksum, 0 processes left', async () => {
    const uninterrupted = await uninterruptedChecksum();

    const run = fx().cli(['run', '--profile', 'trio-spare', ...fixed, ...tiny, '--max-restarts', '1', '--json'], { json: true });
    try {
      await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
      // the spare runs nothing before the loss
      expect(await fx().trainerProcesses([3])).toEqual([]);
      await crashHost(fx().cluster, 2);
      const restart = (await run.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
      expect(restart).toMatchObject({ attempt: 1, host: 'h3', code: 'host-lost', excluded: 'h3', replacement: 'h4', waitingFor: ['h4'] });
      const exit = await run.exit;
      expect(exit.code, run.stderr.slice(-3000)).toBe(0);
      const ev = run.events;
      expect(ev.some((e) => e.type === 'log' && /the spare host h4's agent of run .* runs \(pid \d+\) in place of h3/.test(e.message)), 'the client said it started h4').toBe(true);
      expect(ev.slice(ev.indexOf(restart)).some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep)).toBe(true);
      // h4 ran rank 2 after the restart; h3 ran nothing after it (it is down)
      const after = ev.slice(ev.indexOf(restart));
      expect(after.some((e) => 'host' in e && e.host === 'h4')).toBe(true);
      expect(after.filter((e) => e.type === 'step' && 'host' in e && e.host === 'h3')).toEqual([]);
      const done = ev.find((e): e is DoneEvent => e.type === 'done')!;
      expect(done).toMatchObject({ status: 'ok', steps: STEPS });
      expect(done.paramChecksum).toBe(uninterrupted);
      expect(ev.filter((e) => e.type === 'restart')).toHaveLength(1);
      await until('0 processes on every host', async () => (await fx().trainerProcesses()).length === 0, 15_000);
      process.stderr.write(`spare host: restart event ${restart.time} -> done ${done.time} (${done.time - restart.time} ms)\n`);
    } finally {
      await fx().cluster.restartSshd(2);
      await fx().cluster.setLink(2, true);
    }
  }, 600_000);
});
