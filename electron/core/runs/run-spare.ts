// Bad node out, the client's part (issue 21 item 5): the leader agent decided that a lost follower
// host is excluded and its ranks move to a spare host of the profile (the `restart` event's
// excluded/replacement, waitingFor the spare). A client can only start processes, so the
// controller following the run starts the spare's agent here: the bundle checked on it
// (ensureBundle; planRun deployed it with the profile's other hosts), then `run-start` with the
// excluded host's spec under the spare's name (spareSpec), tried until the leader's wait is over.
// Once it runs, the controller follows the spare like any host, in the excluded host's place.
// A stop is final for a spare too (issue 24 item 3): once the spare answers, right before its
// run-start, the run's other hosts are asked whether a stop reached them (as before a relaunch,
// run-rejoin.ts); a stop that lands while its run-start is in flight is sent to it at once.
import { decodeLaunchSpec, type LaunchSpec } from '../../../trainer/protocol';
import { agentEnv, type HostRecordRef, type Profile, type RunMeta } from '../../common';
import { runHostCommand, type HostLink } from './host-link';
import { startReply } from './host-replies';
import type { Follow } from './controller-follow';
import { spareSpec, type HostLaunch, type SpareLaunch } from './run-plan';

/** The profile's spare hosts at these record locations (a host no longer in the profile is left out): planRun's and attachPlan's. */
export function spareLaunches(profile: Profile, refs: HostRecordRef[], link: (r: HostRecordRef) => HostLink): SpareLaunch[] {
  return refs.flatMap((r) => {
    const h = profile.hosts.find((x) => x.name === r.host);
    return h ? [{ host: h.name, link: link(r), env: agentEnv(h), record: r, ...(h.gpus ? { gpus: h.gpus } : {}) }] : [];
  });
}

/**
 * A `restart` that moves an excluded host's ranks to a spare: the run's history puts the spare in
 * that host's place (its record location from RunMeta.spareRecord, the ranks it takes), so attach,
 * stop and `runs show` reach it; undefined when the event names no spare of this run's.
 */
export function spareTookPlace(meta: Pick<RunMeta, 'record' | 'hosts' | 'spareRecord'>, e: { excluded?: string; replacement?: string }): Pick<RunMeta, 'record' | 'hosts'> | undefined {
  const ref = e.excluded && meta.spareRecord?.find((r) => r.host === e.replacement);
  const i = meta.hosts.findIndex((h) => h.name === e.excluded);
  if (!ref || i < 0 || !meta.record) return undefined;
  const hosts = meta.hosts.map((h, j) => (j === i ? { name: ref.host, ranks: h.ranks, replaces: h.name } : h));
  return { record: meta.record.map((r) => (r.host === e.excluded ? ref : r)), hosts };
}

/** What starting a spare needs of the controller following the run. */
export interface SpareShell {
  runId: string;
  /** The run's hosts (the excluded one still among them, with its spec when this client started the run). */
  hosts: readonly HostLaunch[];
  /** Each host's ranks (RunPlan.hostRanks), for a client that attached: it has no specs. */
  ranks?: Record<string, number[]> | undefined;
  /** The run still waits for this host (no stop, no end, the wait not over). */
  still(host: string, deadline: number): boolean;
  /** The stop question, as before a lost host's relaunch (issue 24 item 3): did a stop reach any of the
   *  run's hosts but `skip` (the excluded one: it is lost)? A stop is final: then no spare starts. */
  stopped(skip: string): Promise<boolean>;
  tell(level: 'info' | 'warn', host: string, message: string): void;
  /** The spare's agent runs: follow it in the excluded host's place. */
  follow(h: HostLaunch, excluded: string): void;
}

const BACKOFF_MS = [500, 1000, 2000, 4000];

/** A `restart` naming a replacement: that spare takes the excluded host's ranks (its relaunch is its start). */
export function noteReplacement(spares: SpareLaunch[] | undefined, e: { excluded?: string; replacement?: string }): void {
  const spare = e.excluded && spares?.find((s) => s.host === e.replacement);
  if (spare) spare.replaces = e.excluded;
}

/** The spare's agent runs: it takes the excluded host's place in the run's hosts (stops reach it), whose follow is retired. */
export function takePlace(hosts: HostLaunch[], follows: Follow[], h: HostLaunch, excluded: string): Follow {
  const i = hosts.findIndex((x) => x.host === excluded);
  if (i > 0) hosts[i] = h;
  for (const f of follows.filter((x) => x.host.host === excluded)) {
    f.retired = f.ended = true; // its record ended with the attempt it was lost in
    f.cmd?.kill();
  }
  const f: Follow = { host: h, offset: 0, ended: false, lastContact: Date.now() };
  follows.push(f);
  return f;
}

/** The run waits for `name`: when it is a spare a restart named, start its agent (async) and say true. */
export function startSpareFor(name: string, spares: SpareLaunch[] | undefined, deadline: number, sh: SpareShell): boolean {
  const spare = spares?.find((x) => x.host === name && x.replaces);
  if (spare) void startSpare(sh, spare, deadline);
  return !!spare;
}

/** Starts the spare's agent with the excluded host's ranks; tells each distinct failure once. */
export async function startSpare(sh: SpareShell, spare: SpareLaunch, deadline: number): Promise<void> {
  const excluded = spare.replaces;
  if (!excluded || !sh.still(spare.host, deadline)) return; // (an attach replaying an old restart: it is over)
  const from = sh.hosts.find((h) => h.host === excluded)?.spec ?? (await attachedSpec(sh, excluded, spare.host));
  if (!from) return;
  const spec = spareSpec(from, spare);
  sh.tell('info', spare.host, `${excluded} is excluded from run ${sh.runId}: starting the spare host ${spare.host}'s agent with its ranks ${spec.ranks.map((r) => r.rank).join(', ')}`);
  let told = '';
  const tell = (m: string) => {
    if (m !== told) sh.tell('warn', spare.host, (told = m));
  };
  // Asked once the spare answers, right before its run-start: a stop may have reached the run while
  // this client had not read it yet (another client's `cohort stop`, its record still being replayed).
  const ask = async () => sh.still(spare.host, deadline) && !(await sh.stopped(excluded));
  for (let attempt = 0; sh.still(spare.host, deadline); attempt++) {
    const failure = await startOnce(spare, spec, ask);
    if (typeof failure === 'number' && !sh.still(spare.host, deadline)) {
      // The run was stopped (or its wait ended) while the run-start was in flight: the stop reaches this agent too.
      sh.tell('info', spare.host, `run ${sh.runId} was stopped while the spare host ${spare.host}'s agent started: stopping it`);
      await runHostCommand(spare.link, ['run-stop', '--run', sh.runId, '--reason', 'stopped (the run was stopped while this spare host started)', '--wait-ms', '5000'], { timeoutMs: 10_000 }).catch(() => undefined);
      return;
    }
    if (typeof failure === 'number') {
      sh.tell('info', spare.host, `the spare host ${spare.host}'s agent of run ${sh.runId} runs (pid ${failure}) in place of ${excluded}; the run restarts from its last checkpoint once it joins`);
      return sh.follow({ host: spare.host, link: spare.link, spec }, excluded);
    }
    if (failure.stopped) return sh.tell('info', spare.host, `not starting the spare host ${spare.host}'s agent: run ${sh.runId} was stopped (or no longer waits for it)`);
    if (failure.message) tell(`${spare.host}: could not start the spare's agent of run ${sh.runId}: ${failure.message}`);
    if (failure.final) return;
    await new Promise((r) => setTimeout(r, BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]));
  }
}

/**
 * A client that attached has no launch specs: the excluded host's is the leader's (`run-spec`: the
 * run's rendezvous, control endpoint and settings) with that host's ranks from the run's history.
 */
async function attachedSpec(sh: SpareShell, excluded: string, spareHost: string): Promise<LaunchSpec | undefined> {
  const ranks = sh.ranks?.[excluded];
  const leader = sh.hosts[0];
  const cannot = (why: string) => void sh.tell('warn', spareHost, `the run moves ${excluded}'s ranks to the spare host ${spareHost}, but this client cannot start its agent: ${why}`);
  if (!ranks?.length || !leader) return cannot(`the run's history does not say which ranks ${excluded} ran; follow the run from the client that started it`);
  let r;
  try {
    r = await runHostCommand(leader.link, ['run-spec', '--run', sh.runId], { timeoutMs: 30_000 });
  } catch (err) {
    return cannot(`the leader ${leader.host} did not give the run's spec (${(err as Error).message})`);
  }
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let spec: LaunchSpec;
  try {
    spec = decodeLaunchSpec((JSON.parse(line) as { spec?: unknown }).spec);
  } catch (err) {
    return cannot(`the leader ${leader.host} did not give the run's spec (run-spec exited ${r.code}: ${(line || r.stderr.trim()).slice(0, 300)}; ${(err as Error).message}); its bundle may predate run-spec: follow the run from the client that started it`);
  }
  const { spares: _spares, slots: _slots, ...rest } = spec;
  return { ...rest, host: excluded, role: 'follower', leader: leader.host, ranks: [...ranks].sort((a, b) => a - b).map((rank, localRank) => ({ rank, localRank })) };
}

/** One try: the agent's pid, or why not (final: the host answered and refused; trying again will not
 *  help; stopped: `ask`, once the host answers, said the run no longer wants it). */
async function startOnce(spare: SpareLaunch, spec: LaunchSpec, ask: () => Promise<boolean>): Promise<number | { message?: string; final?: boolean; stopped?: true }> {
  if (spare.link.ensureBundle) {
    try {
      await spare.link.ensureBundle();
    } catch (err) {
      const e = err as { code?: string; message: string; hint?: string };
      if (e.code !== 'bundle-mismatch' && e.code !== 'deploy-failed') return { message: `not reachable (${e.message})` };
      return { message: `${e.message}${e.hint ? ` (${e.hint})` : ''}`, final: e.code === 'bundle-mismatch' };
    }
  }
  if (!(await ask())) return { stopped: true };
  let r: { code: number | null; stdout: string; stderr: string };
  try {
    r = await runHostCommand(spare.link, ['run-start'], { stdin: JSON.stringify(spec) + '\n', timeoutMs: 30_000 });
  } catch (err) {
    return { message: (err as Error).message };
  }
  const reply = startReply(r.stdout);
  if (r.code === 0 && reply?.agentPid) return reply.agentPid;
  if (reply?.error) return { message: reply.error.message ?? reply.error.code ?? 'refused', final: true };
  return { message: `run-start exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 300)}` };
}
