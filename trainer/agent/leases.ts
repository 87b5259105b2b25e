// Slot leases: a run claims the slots its ranks use on a host before starting them, one file per
// slot under `<workdir>/leases/`, created with O_EXCL (two claimers cannot both win). A lease names
// the run, the agent pid and the boot id; one whose agent is dead (or the pid now belongs to
// another program) or that was written before the last reboot is stale and reclaimed. A host stays
// daemon-free: a crashed run's leases are cleaned up by the next run that wants the slot.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LaunchSpec } from '../protocol';
import { agentAlive } from './run-record';

export interface Lease {
  runId: string;
  pid: number;
  bootId: string;
  slot: number;
  at: number;
}

export function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

const leasePath = (workdir: string, slot: number) => join(workdir, 'leases', `slot-${slot}.json`);

function readLease(path: string): Lease | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Lease;
  } catch {
    return undefined; // gone, or half-written by a claimer that crashed between create and write
  }
}

function stale(l: Lease | undefined, boot: string): boolean {
  return l === undefined || l.bootId !== boot || !agentAlive(l.pid, l.runId);
}

/** The slots a host's ranks use: the spec's own list, else each rank's GPU or local rank. */
export const slotsOf = (spec: Pick<LaunchSpec, 'slots' | 'ranks'>): number[] => spec.slots ?? spec.ranks.map((r) => r.gpu ?? r.localRank);

export type ClaimResult = { ok: true } | { ok: false; busyBy: string; slot: number };

/**
 * Claims every slot or none: on a busy slot it releases what it took and says who holds it.
 * Stale leases met on the way are removed and retried once.
 */
export function claimSlots(workdir: string, runId: string, slots: readonly number[], pid = process.pid): ClaimResult {
  mkdirSync(join(workdir, 'leases'), { recursive: true, mode: 0o700 });
  const boot = bootId();
  const taken: number[] = [];
  for (const slot of [...new Set(slots)].sort((a, b) => a - b)) {
    const path = leasePath(workdir, slot);
    const lease: Lease = { runId, pid, bootId: boot, slot, at: Date.now() };
    let claimed = false;
    for (let attempt = 0; attempt < 2 && !claimed; attempt++) {
      try {
        writeFileSync(path, JSON.stringify(lease) + '\n', { flag: 'wx', mode: 0o600 });
        claimed = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const held = readLease(path);
        if (held?.runId === runId && held.pid === pid) claimed = true; // ours already
        else if (stale(held, boot) && (held !== undefined || Date.now() - safeMtime(path) > 5000)) rmSync(path, { force: true });
        else {
          releaseSlots(workdir, runId, taken, pid);
          return { ok: false, busyBy: held?.runId ?? '(a run starting)', slot };
        }
      }
    }
    if (!claimed) {
      releaseSlots(workdir, runId, taken, pid);
      return { ok: false, busyBy: readLease(path)?.runId ?? '(a run starting)', slot };
    }
    taken.push(slot);
  }
  return { ok: true };
}

/** Removes this run's leases (only files that still name this run and pid). */
export function releaseSlots(workdir: string, runId: string, slots: readonly number[], pid = process.pid): void {
  for (const slot of slots) {
    const path = leasePath(workdir, slot);
    const held = readLease(path);
    if (held?.runId === runId && held.pid === pid) rmSync(path, { force: true });
  }
}

function safeMtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}
