// Slot leases: a run claims the slots its ranks use on a host before starting them. One directory
// per slot, `<workdir>/leases/slot-N/`, free when absent or empty, held while it holds one lease file
// `held-<nonce>.json` (run, agent pid, boot id). Every step is one atomic kernel operation, so exactly
// one claimer wins a slot, also when several take over the same stale lease at once:
//   - claim: the lease is written inside a private directory, which is then renamed onto `slot-N`;
//     rename(2) replaces only an absent or empty directory (ENOTEMPTY otherwise): one winner.
//   - take-over: a lease whose agent is dead (or the pid now belongs to another program), that was
//     written before the last reboot, or whose file is damaged (not a lease: `null`, truncated,
//     garbage) is stale. It is removed by its own unique name (a second remover gets ENOENT and a
//     fresh lease has another name, so nobody can remove a lease that was not judged stale), then
//     the claim is tried again like any other. A damaged file is named in a warning, never fatal.
//   - release: the holder removes its own file, then the directory if still empty.
// A host stays daemon-free: a crashed run's leases are taken over by the next run that wants the slot.
// (Before issue 24 a lease was `slot-N.json`, read, deleted and created again on take-over: two
// claimers could both win. A live lease in that form, from an agent of the older bundle, is respected.)
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LaunchSpec } from '../protocol';
import { readBootId } from '../util/boot-id';
import { agentAlive } from './run-record';

export interface Lease {
  runId: string;
  pid: number;
  bootId: string;
  slot: number;
  at: number;
}

export function bootId(): string {
  return readBootId() ?? 'unknown';
}

const leasesDir = (workdir: string) => join(workdir, 'leases');
const slotDir = (workdir: string, slot: number) => join(leasesDir(workdir), `slot-${slot}`);
const HELD = /^held-[0-9a-f]+\.json$/;
/** Tries per slot: each lost round means another claimer changed the slot meanwhile (took it over, released it). */
const ROUNDS = 8;

/** A lease file's content, or why it is not one. */
export function decodeLease(text: string): Lease | { damaged: string } {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return { damaged: text.trim() === '' ? 'empty' : `not JSON: ${JSON.stringify(text.slice(0, 40))}` };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { damaged: `not a lease object: ${JSON.stringify(o)?.slice(0, 40)}` };
  const l = o as Record<string, unknown>;
  const bad = (['runId', 'bootId'] as const).find((k) => typeof l[k] !== 'string') ?? (['pid', 'slot', 'at'] as const).find((k) => typeof l[k] !== 'number' || !Number.isFinite(l[k]));
  if (bad) return { damaged: `field ${bad} missing or of the wrong type` };
  return { runId: l.runId as string, pid: l.pid as number, bootId: l.bootId as string, slot: l.slot as number, at: l.at as number };
}

export type Holder = { file: string; lease: Lease } | { file: string; damaged: string };

/** The slot's holder now: undefined when the slot is free (absent, empty, or released while we looked). */
function holderOf(dir: string): Holder | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') return { file: dir, damaged: 'a file where the slot directory belongs' };
    throw err;
  }
  const name = names.find((n) => HELD.test(n)) ?? names[0];
  if (name === undefined) return undefined;
  const file = join(dir, name);
  if (!HELD.test(name)) return { file, damaged: `unexpected entry ${name} in the slot directory` };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return holderOf(dir); // released or taken over meanwhile
    throw err;
  }
  const l = decodeLease(text);
  return 'damaged' in l ? { file, damaged: l.damaged } : { file, lease: l };
}

/** Who holds a slot of a workdir now (undefined: free), read as claimSlots reads it: the one place that knows where a lease lives. */
export const slotHolder = (workdir: string, slot: number): Holder | undefined => holderOf(slotDir(workdir, slot));

const staleLease = (l: Lease, boot: string) => l.bootId !== boot || !agentAlive(l.pid, l.runId);

/** A live lease of the older form (`slot-N.json`, written by an agent of an older bundle), if any. */
function legacyHolder(workdir: string, slot: number, boot: string): Lease | undefined {
  try {
    const l = decodeLease(readFileSync(join(leasesDir(workdir), `slot-${slot}.json`), 'utf8'));
    return 'damaged' in l || staleLease(l, boot) ? undefined : l;
  } catch {
    return undefined;
  }
}

/** The slots a host's ranks use: the spec's own list, else each rank's GPU or local rank. */
export const slotsOf = (spec: Pick<LaunchSpec, 'slots' | 'ranks'>): number[] => spec.slots ?? spec.ranks.map((r) => r.gpu ?? r.localRank);

export type ClaimResult = ({ ok: true } | { ok: false; busyBy: string; slot: number }) & {
  /** Stale leases that were damaged files (named, with what was wrong), taken over on the way. */
  warnings: string[];
};

export interface ClaimOpts {
  /** The agent the leases name (default: this process). run-start claims for the agent it started. */
  pid?: number;
  /** Take over stale leases (default true). False: a stale lease counts as busy (left to the agent, which says so). */
  takeOver?: boolean;
}

/** Claims every slot or none: on a busy slot it releases what it took and says who holds it. */
export function claimSlots(workdir: string, runId: string, slots: readonly number[], opts: ClaimOpts = {}): ClaimResult {
  const pid = opts.pid ?? process.pid;
  mkdirSync(leasesDir(workdir), { recursive: true, mode: 0o700 });
  const boot = bootId();
  const warnings: string[] = [];
  const taken: number[] = [];
  for (const slot of [...new Set(slots)].sort((a, b) => a - b)) {
    const r = claimOne(workdir, slot, { runId, pid, bootId: boot, slot, at: Date.now() }, opts.takeOver ?? true, warnings);
    if (r !== true) {
      releaseSlots(workdir, runId, taken, pid);
      return { ok: false, busyBy: r, slot, warnings };
    }
    taken.push(slot);
  }
  return { ok: true, warnings };
}

/** true when held (now or already by this run and pid), else who holds the slot. */
function claimOne(workdir: string, slot: number, lease: Lease, takeOver: boolean, warnings: string[]): true | string {
  const legacy = legacyHolder(workdir, slot, lease.bootId);
  if (legacy) return legacy.runId;
  const dir = slotDir(workdir, slot);
  const nonce = randomBytes(8).toString('hex');
  const mine = join(leasesDir(workdir), `.claim-${lease.pid}-${nonce}`);
  mkdirSync(mine, { mode: 0o700 });
  writeFileSync(join(mine, `held-${nonce}.json`), JSON.stringify(lease) + '\n', { mode: 0o600 });
  try {
    for (let round = 0; round < ROUNDS; round++) {
      try {
        renameSync(mine, dir);
        return true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR') throw err;
      }
      const h = holderOf(dir);
      if (h === undefined) continue; // released meanwhile: try again
      if ('lease' in h && h.lease.runId === lease.runId && h.lease.pid === lease.pid) return true; // ours already
      if ('lease' in h && !staleLease(h.lease, lease.bootId)) return h.lease.runId;
      if (!takeOver) return 'lease' in h ? h.lease.runId : '(a damaged lease)';
      // Stale: remove exactly the file judged stale (another taker may have removed it first: ENOENT).
      try {
        unlinkSync(h.file);
        if ('damaged' in h) warnings.push(`slot ${slot}: lease file ${h.file} was damaged (${h.damaged}); taken for stale and replaced`);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EISDIR' || code === 'EPERM') return `(${h.file}: ${'damaged' in h ? h.damaged : 'stale'}, and it cannot be removed: remove it by hand)`;
        if (code !== 'ENOENT') throw err;
      }
    }
    const h = holderOf(dir);
    return h && 'lease' in h ? h.lease.runId : '(a run claiming it)';
  } finally {
    rmSync(mine, { recursive: true, force: true }); // gone after a won rename; the unused lease after a lost one
  }
}

/** Removes this run's leases (only leases that still name this run and pid). */
export function releaseSlots(workdir: string, runId: string, slots: readonly number[], pid = process.pid): void {
  for (const slot of slots) {
    const dir = slotDir(workdir, slot);
    const h = holderOf(dir);
    if (!h || !('lease' in h) || h.lease.runId !== runId || h.lease.pid !== pid) continue;
    rmSync(h.file, { force: true });
    try {
      rmdirSync(dir); // a claimer may have renamed its lease in already: then ENOTEMPTY, and it stays
    } catch {
      // not empty or gone: either way no longer ours
    }
  }
}
