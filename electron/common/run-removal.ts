// Deleting runs, as the Api says it (`cohort runs rm [--hosts] [--yes]` and History's Delete with
// "on their hosts too" are one core function, core/runs/delete-runs.ts): what a client asks, each
// host's answer, and what became of each run. Plain TypeScript.
import type { RunRemoveReply } from '../../trainer/protocol';
import type { RunMeta } from './api';

/** What a client asks besides the runs. */
export interface RemoveRunsOptions {
  /** Also remove each run's record on its hosts (`<workdir>/runs/<id>`: events, logs, checkpoints) first. */
  hosts?: boolean;
  /**
   * Where a host kept its record without refusing (not reached, failed): delete the local record
   * anyway (the CLI's `--yes`, the GUI's "Delete from this history anyway"). A host that refused
   * (something of the run still runs there) always keeps the local record too.
   */
  anyway?: boolean;
}

/** One host's answer. `removed` and `absent` leave nothing behind; the others keep the host's record. */
export interface HostRemoval {
  host: string;
  outcome: 'removed' | 'absent' | 'refused' | 'unreachable' | 'failed';
  /** One line for the user: what was removed, or why not and what to do. */
  detail: string;
  reply?: RunRemoveReply;
}

/** What became of one run: its local record deleted or kept, and each host's answer when asked. */
export interface DeletedRun {
  meta: RunMeta;
  deleted: boolean;
  hosts?: HostRemoval[];
}

/** Why a run's local record was kept: a host refused (never deletable), or hosts kept theirs (deletable with `anyway`). */
export function keptBecause(d: DeletedRun): 'refused' | 'unreachable' | 'failed' | undefined {
  if (d.deleted) return undefined;
  const hosts = d.hosts ?? [];
  if (hosts.some((h) => h.outcome === 'refused')) return 'refused';
  return hosts.some((h) => h.outcome === 'unreachable') ? 'unreachable' : 'failed';
}

/** A host's answer left nothing of the run there. */
export const hostCleared = (h: HostRemoval): boolean => h.outcome === 'removed' || h.outcome === 'absent';
