// The controller's stop commands (split from run-controller.ts, issue 24 item 7): `run-stop` on the
// leader (it stops its followers), then on each follower as a fallback; a scheduled run's stop is
// the scheduler's (scancel). Used by the stop-hosts effect and by a failed start.
import { HOST_CMD_EXIT, decodeRunState, makeEvent, type CohortEvent, type RunStatusLine } from '../../../trainer/protocol';
import type { HostQueries } from './controller-queries';
import { runHostCommand } from './host-link';
import { parseLine } from './host-replies';
import type { HostLaunch, RunPlan } from './run-plan';

export interface StopContext {
  plan: RunPlan;
  emit(e: CohortEvent): void;
  /** Ends a scheduled run's wait in the queue (the scheduler's job is going away). */
  abortWait(): void;
  /** Each run-stop's word: `reached` false when the host did not confirm (down, no answer): the stop
   *  is owed to it, and the history says so (RunMeta.stopOwed) until `runs list` delivers it. */
  stopAnswer?(host: string, reached: boolean): void;
}

/** run-stop on the leader, then the followers (each bounded); a scheduled run: scancel. */
export async function stopAll(ctx: StopContext, reason: string, waitMs: number): Promise<void> {
  const { plan } = ctx;
  if (plan.scheduler) {
    // The scheduler stops every node's agent (SIGTERM: each records the end), then nothing of the job is left.
    ctx.abortWait();
    try {
      await plan.scheduler.cancel();
    } catch (err) {
      ctx.emit(makeEvent({ type: 'log', level: 'warn', message: `could not cancel Slurm job ${plan.scheduler.id ?? ''}: ${(err as Error).message}` }));
    }
    return;
  }
  const [leader, ...followers] = plan.hosts;
  if (leader) await stopHost(ctx, leader, reason, waitMs);
  await Promise.all(followers.map((f) => stopHost(ctx, f, reason, Math.min(waitMs, 5000))));
}

/** run-stop on one host: its state record after the stop, or undefined (no record there, or no answer: told). */
export async function stopHost(ctx: StopContext, h: HostLaunch, reason: string, waitMs: number): Promise<RunStatusLine | undefined> {
  const runId = ctx.plan.runId;
  ctx.stopAnswer?.(h.host, false); // owed until it confirms
  try {
    const r = await runHostCommand(h.link, ['run-stop', '--run', runId, '--reason', reason, '--wait-ms', String(waitMs)], { timeoutMs: waitMs + 5000 });
    const line = parseLine(r.stdout);
    const confirmed = r.code === HOST_CMD_EXIT.noSuchRun || (!!line && 'runId' in line);
    ctx.stopAnswer?.(h.host, confirmed);
    if (r.code === HOST_CMD_EXIT.noSuchRun) return undefined; // no record on that host: nothing to stop
    if (!line || !('runId' in line)) {
      ctx.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: `${h.host}: run-stop did not confirm (exit ${r.code}): ${(line ? JSON.stringify(line.error) : r.stderr.trim()).slice(0, 300)}` }));
      return undefined;
    }
    return { ...decodeRunState(line), agentAlive: (line as { agentAlive?: boolean }).agentAlive === true };
  } catch (err) {
    ctx.stopAnswer?.(h.host, false);
    ctx.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: `${h.host}: could not ask it to stop: ${(err as Error).message}` }));
    return undefined;
  }
}

/**
 * Before a lost host's agent is relaunched (it answers again): did a stop reach another host of the
 * run meanwhile (its state record `cancelled`)? A `cohort stop` sent while this host was down left it
 * no stop marker, and a client replaying the records may not have read the others' end yet (issue 24
 * item 3). Then the stop is final here too: true, and this host gets its stop marker now (run-stop:
 * its agent is dead, so only the marker is written), so its own run-rejoin refuses whoever asks.
 * `others`: the run's hosts not lost themselves (a host still down would hold the answer up to its
 * connect timeout). The same question before a spare host's agent starts (run-spare.ts), h undefined.
 */
export async function stoppedElsewhere(ctx: StopContext, h: HostLaunch | undefined, others: HostLaunch[], queries: HostQueries): Promise<boolean> {
  const lines = await Promise.all(others.map((x) => queries.run(x.link, ['run-status', '--run', ctx.plan.runId]).then((r) => parseLine(r.stdout), () => undefined)));
  const stopped = lines.some((l) => !!l && 'runId' in l && decodeRunState(l).state === 'cancelled');
  // (a spare about to start, h undefined, has no record of the run to mark: it is just not started)
  if (stopped && h) await stopHost(ctx, h, 'stopped (the stop reached the other hosts of the run while this one was down)', 1000);
  return stopped;
}
