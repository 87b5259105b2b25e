// The global claim order of a multi-host run's slots (issue 24 item 3). Each host's slots are claimed
// all or none (leases.ts); across hosts, every run claims host after host in one order that all runs
// share, and a host is asked only once every host before it holds its slots. A run that waits holds
// slots only on hosts before the one it waits for, and the run it waits for holds that host and waits
// (if at all) only for hosts after it: no cycle of runs each holding what the next waits for, so no
// deadlock (the order of resources of Dijkstra's dining philosophers). Before it, each host's agent
// claimed its own slots as soon as it started: runs over h2,h3 and h3,h2 (or two runs over h2,h3
// whose starts interleaved) each held one host and queued for the other, forever.
//
// The order is of lease directories, not of profile host names (two profiles may name one machine
// differently): the key is the machine's id and the real path of the workdir, which every agent
// computes for itself and a follower sends the leader in its hello. The leader runs the sequence.
import { readFileSync, realpathSync } from 'node:fs';
import { hostname } from 'node:os';

/** This host's place in the claim order: its machine id (hostname where none) and the workdir's real path. */
export function claimKey(workdir: string): string {
  let machine = '';
  for (const f of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      machine = readFileSync(f, 'utf8').trim();
      if (machine) break;
    } catch {
      // next
    }
  }
  let dir = workdir;
  try {
    dir = realpathSync(workdir);
  } catch {
    // not there yet: the path as given
  }
  return `${machine || hostname()}:${dir}`;
}

export interface ClaimHost {
  host: string;
  /** claimKey of the host's workdir. */
  key: string;
  /** Holds its slots (a follower said `ready`; the leader's own claim succeeded). */
  held: boolean;
  /** Already asked to claim (a claim in progress: it queues until the slots free). */
  asked: boolean;
}

/**
 * The host to ask next: the first in claim order that does not hold its slots, unless it was already
 * asked (then nobody: its claim is under way). Undefined when every host holds (the run may go) or
 * one is being waited for. Ties of key (one workdir named twice) are ordered by host name.
 */
export function nextToClaim(hosts: readonly ClaimHost[]): ClaimHost | undefined {
  const first = [...hosts].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.host < b.host ? -1 : a.host > b.host ? 1 : 0)).find((h) => !h.held);
  return first && !first.asked ? first : undefined;
}
