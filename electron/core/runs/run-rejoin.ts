// One try at relaunching a lost host's agent of a run (`run-rejoin`), for the controller's
// relaunch loop (split from run-controller.ts, issue 24 item 7).
import { makeEvent, type CohortEvent } from '../../../trainer/protocol';
import { runHostCommand } from './host-link';
import { startReply } from './host-replies';
import type { HostLaunch } from './run-plan';

/**
 * One try: the bundle back on the host if it went (ensureBundle), then `run-rejoin`. The bundle
 * is checked before every try rather than after a failed one: over SSH a check of a present
 * bundle is two execs and a sha256 pass over its 3.2 MiB, 0.2 s on a loaded 2-core machine, a
 * quarter of one host command of the bundle (bench/results/bundle-check.md); tries happen only
 * while a lost host is waited for; and the check catches a damaged bundle too, where
 * run-rejoin's failure would only say "cannot find module" or worse. A host still down fails
 * at its connect, as run-rejoin would. `failure`: what to tell (none while it cannot be reached).
 */
export async function rejoinOnce(h: HostLaunch, runId: string, still: () => boolean = () => true, stopped?: () => Promise<boolean>): Promise<{ agentPid: number; redeployed: string | undefined } | { failure?: string; final?: boolean }> {
  let redeployed: string | undefined;
  // Past ensureBundle the host was reached: a run-rejoin failure after it is worth telling.
  const reached = !!h.link.ensureBundle;
  if (h.link.ensureBundle) {
    try {
      const b = await h.link.ensureBundle();
      if (b.redeployed) redeployed = `${(b.bytesSent / 2 ** 20).toFixed(1)} MiB to ${b.remoteDir}`;
    } catch (err) {
      const e = err as { code?: string; message: string; hint?: string };
      if (e.code !== 'bundle-mismatch' && e.code !== 'deploy-failed') return {}; // not reachable yet
      return { failure: `${e.message}${e.hint ? ` (${e.hint})` : ''}`, final: e.code === 'bundle-mismatch' };
    }
  }
  // A try that began while the host was down ends here once it answers: the run may have been
  // stopped meanwhile (a stop is final, issue 24 defect 6: seen relaunching h1 after another
  // client's stop, its connect attempt from before the stop completing when h1 came back).
  if (!still()) return { final: true };
  // A stop that reached the run's other hosts while this one was down is final here too (issue 24 item 3).
  if (await stopped?.()) return { final: true };
  let r: { code: number | null; stdout: string; stderr: string };
  try {
    r = await runHostCommand(h.link, ['run-rejoin', '--run', runId], { timeoutMs: 20_000 });
  } catch (err) {
    return reached ? { failure: (err as Error).message } : {};
  }
  const reply = startReply(r.stdout);
  if (r.code === 0 && reply?.agentPid) return { agentPid: reply.agentPid, redeployed };
  if (reply?.error?.code === 'rejoin-busy') return {}; // another client's relaunch holds the lock
  if (reply?.error) return { failure: reply.error.message ?? reply.error.code ?? 'refused', final: true };
  if (r.code === null && !reached) return {};
  const tail = r.stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 300);
  return { failure: `run-rejoin ${r.code === null ? 'did not finish' : `exited ${r.code}`}${tail ? `: ${tail}` : ''}` };
}

/** Between tries to reach a lost host and relaunch its agent. */
const RELAUNCH_BACKOFF_MS = [1000, 1000, 2000, 2000, 4000];

/**
 * The relaunch effect for one lost host: tries (rejoinOnce) with backoff while `still()` (the run
 * waits for the host, no stop, the wait not over), telling each different failure once. Resolves
 * `relaunched`, `refused` (the host answered and refused: trying again will not help) or `over`.
 */
export async function relaunchUntil(h: HostLaunch, runId: string, deadline: number, o: { still(): boolean; emit(e: CohortEvent): void; stopped?(): Promise<boolean>; retryMaxMs?: number }): Promise<'relaunched' | 'refused' | 'over'> {
  // a record being replayed (attach) may already show the run stepping again: give it a moment
  await new Promise((r) => setTimeout(r, 500));
  if (!o.still()) return 'over';
  o.emit(makeEvent({ type: 'log', level: 'info', host: h.host, message: `${h.host} was lost: trying to reach it to relaunch its agent of run ${runId} (for ${Math.round((deadline - Date.now()) / 1000)} s)` }));
  let attempt = 0;
  let told = ''; // the last failure told (each different one once, not every try)
  const tell = (message: string) => {
    if (message !== told) o.emit(makeEvent({ type: 'log', level: 'warn', host: h.host, message: (told = message) }));
  };
  while (o.still()) {
    const tried = await rejoinOnce(h, runId, () => o.still(), o.stopped);
    if ('agentPid' in tried) {
      const redeployed = tried.redeployed ? `re-deployed the trainer bundle to ${h.host} (${tried.redeployed}); ` : '';
      o.emit(makeEvent({ type: 'log', level: 'info', host: h.host, message: `${h.host} is back: ${redeployed}its agent of run ${runId} runs again (pid ${tried.agentPid}); the run restarts from its last checkpoint once it rejoins` }));
      return 'relaunched';
    }
    if (tried.failure) tell(`${h.host}: could not relaunch its agent of run ${runId}: ${tried.failure}`);
    if (tried.final) return 'refused';
    await new Promise((res) => setTimeout(res, Math.min(o.retryMaxMs ?? Infinity, RELAUNCH_BACKOFF_MS[Math.min(attempt++, RELAUNCH_BACKOFF_MS.length - 1)]!)));
  }
  return 'over';
}
