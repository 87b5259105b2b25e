// Network namespace plumbing for the sshd test harness: detection, a free /24, and bookkeeping
// of everything created so a later run can remove what a killed run left behind. Only objects
// recorded in this harness's registry are ever removed (never other projects' namespaces).
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where each live cluster records what it created (namespaces, links, subnet locks, pids). */
export const REGISTRY_DIR = '/tmp/cohort-sshd-harness';

export interface Registration {
  id: string;
  ownerPid: number;
  namespaces: string[];
  links: string[];
  /** Root-namespace routes we added (`unreachable 10.76.x.0/24`), deleted on teardown. */
  routes: string[];
  subnetLocks: string[];
  pids: number[];
  dir: string;
}

export async function ip(...args: string[]): Promise<string> {
  try {
    return (await run('ip', args, { encoding: 'utf8' })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** True when this process may create namespaces (root, iproute2 present, kernel allows it). */
export async function netnsAvailable(): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  const probe = `cohort-probe-${process.pid}`;
  try {
    await ip('netns', 'add', probe);
    await ip('netns', 'del', probe);
    return true;
  } catch {
    try {
      await ip('netns', 'del', probe);
    } catch {
      /* was never created */
    }
    return false;
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

/** Picks 10.<a>.<x>.0/24 subnets (one per `a`) not used by any address or route here, and locks them. */
export async function reserveSubnets(firstOctets: number[], owner: string): Promise<{ x: number; locks: string[] }> {
  mkdirSync(REGISTRY_DIR, { recursive: true });
  const used = (await ip('-4', '-o', 'addr')) + (await ip('-4', 'route', 'show', 'table', 'all'));
  const start = (process.pid * 7) % 200;
  for (let i = 0; i < 200; i++) {
    const x = 20 + ((start + i) % 200);
    if (firstOctets.some((a) => used.includes(`10.${a}.${x}.`))) continue;
    const locks: string[] = [];
    let ok = true;
    for (const a of firstOctets) {
      const lock = `${REGISTRY_DIR}/subnet-10.${a}.${x}.lock`;
      try {
        mkdirSync(lock);
        writeFileSync(`${lock}/owner`, `${process.pid} ${owner}\n`);
        locks.push(lock);
      } catch {
        // Taken: free it if its owner died (a killed run), else try the next subnet.
        const ownerPid = Number(readSafe(`${lock}/owner`).split(' ')[0]);
        if (ownerPid && !pidAlive(ownerPid)) rmSync(lock, { recursive: true, force: true });
        ok = false;
        break;
      }
    }
    if (ok) return { x, locks };
    for (const l of locks) rmSync(l, { recursive: true, force: true });
  }
  throw new Error('no free 10.x /24 subnet for the test hosts');
}

/** The environment entry sshd's SetEnv puts into every session of host `name` of cluster `id`. */
export const MARKER_VAR = 'COHORT_SSHD_HOST';
export function markerPrefix(id: string): string {
  return `${MARKER_VAR}=${id}/`;
}

/** Pids whose environment contains `needle` (e.g. `COHORT_SSHD_HOST=<id>/h1\0`). */
export function markedProcesses(needle: string): number[] {
  return pidsWhere((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(needle);
    } catch {
      return false; // exited meanwhile
    }
  });
}

/** The pids of /proc that pass `test` (one scan for markedProcesses and mentioning). */
function pidsWhere(test: (pid: number) => boolean): number[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d) && test(Number(d))).map(Number);
}

/** Does the process's command line or environment contain `needle`? */
export function processMentions(pid: number, needle: string): boolean {
  for (const f of ['cmdline', 'environ']) {
    try {
      if (readFileSync(`/proc/${pid}/${f}`, 'latin1').includes(needle)) return true;
    } catch {
      /* gone or not readable */
    }
  }
  return false;
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export function register(r: Registration): void {
  mkdirSync(REGISTRY_DIR, { recursive: true });
  writeFileSync(`${REGISTRY_DIR}/${r.id}.json`, JSON.stringify(r));
}

export function unregister(id: string): void {
  rmSync(`${REGISTRY_DIR}/${id}.json`, { force: true });
}

/**
 * Synchronous teardown (usable from a process 'exit' handler): kills every process in the
 * namespaces and the recorded pids, deletes namespaces and links, frees the subnet locks.
 */
/** Pids whose command line or environment contains `needle`. */
function mentioning(needle: string): number[] {
  return pidsWhere((pid) => processMentions(pid, needle));
}

/** Waits (at most `ms`, blocking: teardownSync runs in exit handlers) until each pid has exited or is a zombie. */
function awaitGone(pids: Iterable<number>, ms = 5000): void {
  const end = Date.now() + ms;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (const pid of pids) while (Date.now() < end && running(pid)) Atomics.wait(nap, 0, 0, 20);
}

/** A live process (not gone, not a zombie awaiting its parent's wait()). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

export function teardownSync(r: Registration): void {
  // A recorded pid may have been reused since a killed run: only kill it if it is still ours.
  const pids = new Set(r.pids.filter((pid) => processMentions(pid, r.dir) || processMentions(pid, r.id)));
  // Session processes carry the marker sshd's SetEnv gave them, even after they re-parent.
  for (const pid of markedProcesses(markerPrefix(r.id))) pids.add(pid);
  // And whatever else names the cluster's own directory, as the leftovers checks look for: a daemon's
  // own children are not registered (Slurm 22.05's slurmctld forks slurmscriptd, which keeps its command line).
  if (r.dir) for (const pid of mentioning(r.dir + '/')) if (pid !== process.pid && pid !== process.ppid) pids.add(pid);
  for (const ns of r.namespaces) {
    try {
      for (const p of execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(/\s+/)) if (p) pids.add(Number(p));
    } catch {
      /* namespace already gone */
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already exited */
    }
  }
  // SIGKILL is delivered asynchronously: a process busy in the kernel (a daemon writing its state on
  // a loaded machine) can still be listed right after kill() returns, and a leftovers check made then
  // names it (seen once in a fresh-clone run: slurm-cluster.test's SIGKILLed-run case, 1 pid left).
  awaitGone(pids);
  for (const ns of r.namespaces) {
    try {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  }
  for (const link of r.links) {
    try {
      execFileSync('ip', ['link', 'del', link], { stdio: 'ignore' });
    } catch {
      /* already gone (veths die with their namespace) */
    }
  }
  for (const route of r.routes ?? []) {
    try {
      execFileSync('ip', ['route', 'del', ...route.split(' ')], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  }
  for (const l of r.subnetLocks) rmSync(l, { recursive: true, force: true });
  rmSync(r.dir, { recursive: true, force: true });
  unregister(r.id);
}

/** Removes what earlier runs of this harness left behind when they were killed (owner pid dead). */
export function cleanupStale(): string[] {
  const removed: string[] = [];
  let files: string[] = [];
  try {
    files = readdirSync(REGISTRY_DIR).filter((f) => f.endsWith('.json'));
  } catch {
    return removed;
  }
  for (const f of files) {
    let r: Registration;
    try {
      r = JSON.parse(readFileSync(`${REGISTRY_DIR}/${f}`, 'utf8')) as Registration;
    } catch {
      continue;
    }
    if (pidAlive(r.ownerPid)) continue;
    teardownSync(r);
    removed.push(r.id);
  }
  return removed;
}
