// Ranks that share one machine's cores compute at the same time in a run, so `cohort check`
// measures them that way (the SSH check and the Slurm check alike, issue 21): hosts that report one
// kernel boot id are one machine (network namespaces, containers), and a host's own ranks (several
// slots, or Slurm tasks per node) share it too. Pure; one place for both checks and the Slurm node
// side, which decides there which nodes compute at once.

export interface SharingHost {
  host: string;
  /** The kernel's boot id (check-host's report); absent: the host counts as its own machine. */
  bootId?: string | undefined;
  cores: number;
  /** Ranks a run puts on this host (slots, tasks per node). */
  ranks: number;
}

export interface CoreSharing {
  /** The hosts of the machine with the most ranks, in the order given. */
  hosts: string[];
  ranks: number;
  /** e.g. "3 ranks on h1+h2+h3 (2 cores)": the prediction's `sharing`. */
  description: string;
}

/** The machine whose ranks share its cores the most, or undefined when no two ranks share one. */
export function coreSharing(hosts: readonly SharingHost[]): CoreSharing | undefined {
  const machines = new Map<string, SharingHost[]>();
  for (const h of hosts) {
    const key = h.bootId ?? `host ${h.host}`;
    machines.set(key, [...(machines.get(key) ?? []), h]);
  }
  const ranksOn = (g: SharingHost[]) => g.reduce((n, h) => n + h.ranks, 0);
  const group = [...machines.values()].sort((a, b) => ranksOn(b) - ranksOn(a))[0];
  if (!group || ranksOn(group) < 2) return undefined;
  return { hosts: group.map((h) => h.host), ranks: ranksOn(group), description: `${ranksOn(group)} ranks on ${group.map((h) => h.host).join('+')} (${group[0]!.cores} cores)` };
}
