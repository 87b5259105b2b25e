// A cluster launch's per-host progress before the run exists (connect, deploy bytes, cached,
// failed), folded from the Api's DeployProgress messages whose `launch` names the run. Plain TS:
// the state module (state/launch-progress.svelte.ts) and its unit test share it.
import type { ApiErrorInfo, DeployProgress } from '../../../electron/common';

export type LaunchHostPhase = DeployProgress['phase'] | 'waiting';

export interface LaunchHostRow {
  host: string;
  phase: LaunchHostPhase;
  bytes: number;
  totalBytes: number;
  message: string;
  error: ApiErrorInfo | null;
  /** When this host's first progress arrived (ms since epoch); its elapsed time counts from here. */
  since: number;
  /** When it finished (deployed, cached or failed); null while it is still going. */
  endedAt: number | null;
}

/** What each phase reads as in the page (text, never colour alone). */
export const PHASE_TEXT: Record<LaunchHostPhase, string> = {
  waiting: 'waiting',
  connect: 'connecting',
  check: 'checking the bundle',
  upload: 'deploying',
  verify: 'verifying the upload',
  cached: 'cached',
  done: 'deployed',
  failed: 'failed',
};

export const isEnded = (p: LaunchHostPhase): boolean => p === 'done' || p === 'cached' || p === 'failed';

export function waitingRows(hosts: string[], now: number): LaunchHostRow[] {
  return hosts.map((host) => ({ host, phase: 'waiting', bytes: 0, totalBytes: 0, message: '', error: null, since: now, endedAt: null }));
}

/** Folds one progress message into the rows (a host not listed yet is appended). */
export function applyProgress(rows: LaunchHostRow[], p: DeployProgress, now: number): LaunchHostRow[] {
  const i = rows.findIndex((r) => r.host === p.host);
  const prev = i >= 0 ? rows[i]! : undefined;
  const row: LaunchHostRow = {
    host: p.host,
    phase: p.phase,
    // 'failed' carries no byte counts: keep how far the upload got.
    bytes: p.phase === 'failed' ? (prev?.bytes ?? 0) : p.bytes,
    totalBytes: p.phase === 'failed' ? (prev?.totalBytes ?? 0) : p.totalBytes,
    message: p.message ?? (p.phase === 'failed' ? (p.error?.message ?? '') : ''),
    error: p.error ?? (p.phase === 'failed' ? { name: 'Error', code: 'deploy-failed', message: p.message ?? 'failed' } : null),
    since: prev && prev.phase !== 'waiting' ? prev.since : now,
    endedAt: isEnded(p.phase) ? (prev?.endedAt ?? now) : null,
  };
  const out = rows.slice();
  if (i >= 0) out[i] = row;
  else out.push(row);
  return out;
}
