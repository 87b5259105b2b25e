// The cluster launch this dashboard started, while its hosts are prepared: each host's connect and
// deploy progress (the Api's onDeployProgress messages that carry `launch`), then the run id once
// startRun resolves (the Live view goes on with "starting ranks" from the run's own events).
// startRun resolves only after every host is deployed, so the first launch message of the chosen
// profile after "Start run" names the run; messages of any other run are ignored.
import { toApiError, type ApiErrorInfo, type DeployProgress } from '../../../electron/common';
import { applyProgress, waitingRows, type LaunchHostRow } from '../lib/launch-progress';

export type LaunchState = 'idle' | 'preparing' | 'started' | 'failed';

export const launching = $state({
  state: 'idle' as LaunchState,
  profile: '',
  runId: '',
  /** Ranks the run will have (the Launch form's world preview). */
  worldSize: 0,
  startedAt: 0,
  hosts: [] as LaunchHostRow[],
  /** Why the launch failed (startRun's error), shown with the host rows. */
  error: null as ApiErrorInfo | null,
});

export function beginLaunch(profile: string, hosts: string[], worldSize: number, now = Date.now()): void {
  launching.state = 'preparing';
  launching.profile = profile;
  launching.runId = '';
  launching.worldSize = worldSize;
  launching.startedAt = now;
  launching.hosts = waitingRows(hosts, now);
  launching.error = null;
}

export function takeLaunchProgress(p: DeployProgress, now = Date.now()): void {
  if (!p.launch || launching.state !== 'preparing' || p.launch.profile !== launching.profile) return;
  if (!launching.runId) launching.runId = p.launch.runId;
  else if (p.launch.runId !== launching.runId) return;
  launching.hosts = applyProgress(launching.hosts, p, now);
}

export function launchStarted(runId: string): void {
  // Rows of another client's launch of the same profile adopted by mistake: not this run's.
  if (launching.runId && launching.runId !== runId) launching.hosts = [];
  launching.runId = runId;
  launching.state = 'started';
}

export function launchFailed(err: unknown): void {
  launching.state = 'failed';
  launching.error = toApiError(err);
  // A launch that failed after its run id was made is recorded under it (core says which): the
  // banner links to that record (issue 22). A local launch has no progress messages: only the error names it.
  if (!launching.runId && launching.error.runId) launching.runId = launching.error.runId;
}
