// Bad node out before the first step (issue 21 item 5: a host with errors from the check): when
// every error `cohort check` found is on a follower host of a profile with spare hosts, those hosts
// are left out of the run and a spare each takes their place (`cohort run --check`); on a Slurm
// profile, when every error is on a node of the check's allocation and the partition had as many
// other usable nodes (CheckResult.allocation.spares), those nodes are left out with sbatch's
// --exclude and Slurm places the run on others; otherwise the run is refused as before. Pure: the
// CLI decides from the check's problems (sparesFor), core's startRun applies the choice to the
// profile it plans (StartRunRequest.exclude → withSpares; Slurm: the submission's --exclude), so the
// history records what ran (the spare in the host's place, `replaces`; RunMeta.excluded, and why).
import type { CheckProblem, CheckResult } from '../../trainer/protocol/check';
import { ProfileError, spareHosts, type Profile, type ProfileHost } from './profile';

export interface SpareMove {
  /** The host left out (the check found errors on it). */
  excluded: string;
  /** The spare host that runs its ranks instead; absent on a Slurm profile (Slurm gives the run other nodes of the partition). */
  replacement?: string;
}

/**
 * The hosts to leave out so that no error of the check is on a host the run uses, each with the
 * spare that takes its place; undefined when that cannot be: no error, an error on the leader, on
 * the whole cluster ('*'), on no host of the profile, or more erring followers than spares without
 * errors. A Slurm profile: the nodes with errors (no replacement: Slurm places the run), when each
 * is a node of the check's allocation and the partition had as many usable nodes besides them;
 * undefined too when the check could not tell the partition's other nodes. Warnings never exclude.
 */
export function sparesFor(profile: Pick<Profile, 'hosts' | 'scheduler'>, problems: readonly CheckProblem[], allocation?: CheckResult['allocation']): SpareMove[] | undefined {
  const bad = [...new Set(problems.filter((p) => p.severity === 'error').map((p) => p.host))];
  if (profile.scheduler) {
    // The partition's nodes, not the profile's hosts: every error on a node of the check's allocation
    // (not the login node, not '*'), and as many usable nodes besides it as are left out.
    if (!allocation?.spares || bad.length === 0 || !bad.every((b) => allocation.nodes.includes(b))) return undefined;
    return allocation.spares.filter((s) => !bad.includes(s)).length >= bad.length ? bad.map((excluded) => ({ excluded })) : undefined;
  }
  const leader = profile.hosts[0]?.name;
  const followers = profile.hosts.slice(1).filter((h) => !h.spare);
  if (bad.length === 0 || !bad.every((b) => followers.some((f) => f.name === b))) return undefined;
  const free = spareHosts(profile).filter((s) => !bad.includes(s.name) && s.name !== leader);
  if (free.length < bad.length) return undefined;
  return bad.map((excluded, i) => ({ excluded, replacement: free[i]!.name }));
}

/**
 * The profile the run plans: each excluded follower host's place taken by its spare (the spare's
 * address, user, workdir, env and GPUs, with the excluded host's slots, so the world and its ranks
 * stay as planned); the excluded host is out of the run. Throws ProfileError naming the host when
 * it is not a follower or no spare is left for it.
 */
export function withSpares(profile: Profile, exclude: readonly string[]): { profile: Profile; moves: SpareMove[] } {
  const moves: SpareMove[] = [];
  const hosts: ProfileHost[] = profile.hosts.map((h) => ({ ...h }));
  for (const name of exclude) {
    const i = hosts.findIndex((h) => h.name === name);
    if (i <= 0 || hosts[i]!.spare) throw new ProfileError(profile.name, 'exclude', i === 0 ? `${name} is the leader (rank 0, the run's record): it cannot be left out; fix it, or make another host the first` : `${name} is not a host that runs ranks in this profile (hosts: ${profile.hosts.map((h) => h.name).join(', ')})`, name);
    const j = hosts.findIndex((h) => h.spare && !exclude.includes(h.name));
    if (j < 0) throw new ProfileError(profile.name, 'exclude', `no spare host left to take ${name}'s ranks: add a host with "spare": true, or fix ${name}`, name);
    const { spare: _spare, ...spare } = hosts[j]!;
    const out = hosts[i]!;
    hosts[i] = { ...spare, slots: out.slots, ...(spare.gpus ? { gpus: spare.gpus.slice(0, out.slots) } : {}) };
    hosts.splice(j, 1);
    moves.push({ excluded: name, replacement: spare.name });
  }
  return { profile: { ...profile, hosts }, moves };
}

/** Why a host or node is left out: the check's errors on it, in one line (`code: message`, the first, and how many more). */
export function checkErrorsOn(problems: readonly CheckProblem[], host: string): string | undefined {
  const errors = problems.filter((p) => p.severity === 'error' && p.host === host);
  if (!errors.length) return undefined;
  return `cohort check found ${errors.length} error(s) on it: ${errors[0]!.code}: ${errors[0]!.message}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}`;
}
