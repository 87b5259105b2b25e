// What a rank's exit means, for the agent shell (run-agent.ts) to hand the lifecycle: its own code or
// signal and log tail as an error (a signal this agent sent is no failure), rank 0's exit 0 without
// a `done` event, and the checkpoint interval a run with restarts gets when none was asked for.
import { runSwitches, type ErrorEvent, type EventPayload, type LaunchSpec } from '../protocol';
import { errorEvent } from './agent-state';
import type { RankExit, RankGroup } from './ranks';

/** The error a rank's exit reports, if any; `fromExit`: the rank had reported its own error first (the leader keeps that one). */
export function rankExitError(host: string, role: 'leader' | 'follower', { proc: p, code, signal }: RankExit): { event: ErrorEvent; fromExit: boolean } | undefined {
  if (code === 0) return undefined;
  if (signal && p.sent.has(signal) && !p.reportedError) return undefined;
  if (p.reportedError && role !== 'leader') return undefined; // a follower relayed the rank's own report already
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  const event = errorEvent({ host, rank: p.spec.rank, message: `rank ${p.spec.rank} on ${host} ${how}`, logTail: p.tail.get(), code: p.reportedError && p.errorCode ? p.errorCode : 'rank-exited' }, Date.now());
  return { event, fromExit: p.reportedError };
}

/** Exit 0 is not success by itself: rank 0 ends every run with a `done` event (both engines); the lifecycle decides whether it came. */
export function noDoneError(host: string, group: RankGroup): ErrorEvent | undefined {
  const rank0 = group.procs.find((p) => p.spec.rank === 0);
  if (!rank0) return undefined;
  return errorEvent({ host, rank: 0, message: `rank 0 on ${host} exited with code 0 without reporting the end of training (no done event)`, logTail: rank0.tail.get(), code: 'no-done', hint: `check rank 0's log on ${host}` }, Date.now());
}

/** With restarts on and no interval asked for, checkpoint every ~10% of the run. */
export function checkpointingOf(spec: Pick<LaunchSpec, 'maxRestarts' | 'config'>): { checkpointEvery: number } | undefined {
  if ((spec.maxRestarts ?? 0) === 0 || spec.config.checkpointEvery > 0) return undefined;
  return { checkpointEvery: Math.max(1, Math.round((spec.config.steps > 0 ? spec.config.steps : 1000) / 10)) };
}

/** The `env` event: the switches each rank of this host really starts with (told once, at the first start). */
export function envPayload(host: string, group: RankGroup): EventPayload {
  return { type: 'env', host, ranks: group.procs.map((p) => ({ rank: p.spec.rank, switches: runSwitches(p.env) })) };
}
