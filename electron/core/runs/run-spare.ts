// Bad node out, the client's part (issue 21 item 5): the leader agent decided that a lost follower
// host is excluded and its ranks move to a spare host of the profile (the `restart` event's
// excluded/replacement, waitingFor the spare). A client can only start processes, so the
// controller following the run starts the spare's agent here: the bundle checked on it
// (ensureBundle; planRun deployed it with the profile's other hosts), then `run-start` with the
// excluded host's spec under the spare's name (spareSpec), tried until the leader's wait is over.
// Once it runs, the controller follows the spare like any host, in the excluded host's place.
import type { LaunchSpec } from '../../../trainer/protocol';
import { runHostCommand } from './host-link';
import { startReply } from './host-replies';
import type { Follow } from './controller-follow';
import { spareSpec, type HostLaunch, type SpareLaunch } from './run-plan';

/** What starting a spare needs of the controller following the run. */
export interface SpareShell {
  runId: string;
  /** The run's hosts (the excluded one still among them, with its spec). */
  hosts: readonly HostLaunch[];
  /** The run still waits for this host (no stop, no end, the wait not over). */
  still(host: string, deadline: number): boolean;
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
  if (!excluded) return;
  const from = sh.hosts.find((h) => h.host === excluded)?.spec;
  if (!from) {
    // UNFINISHED: a client that attached (`cohort attach`) has no launch specs, so it cannot start a spare.
    sh.tell('warn', spare.host, `the run moves ${excluded}'s ranks to the spare host ${spare.host}, but this client attached without the run's launch specs and cannot start its agent: follow the run from the client that started it`);
    return;
  }
  const spec = spareSpec(from, spare);
  sh.tell('info', spare.host, `${excluded} is excluded from run ${sh.runId}: starting the spare host ${spare.host}'s agent with its ranks ${spec.ranks.map((r) => r.rank).join(', ')}`);
  let told = '';
  const tell = (m: string) => {
    if (m !== told) sh.tell('warn', spare.host, (told = m));
  };
  for (let attempt = 0; sh.still(spare.host, deadline); attempt++) {
    const failure = await startOnce(spare, spec);
    if (typeof failure === 'number') {
      sh.tell('info', spare.host, `the spare host ${spare.host}'s agent of run ${sh.runId} runs (pid ${failure}) in place of ${excluded}; the run restarts from its last checkpoint once it joins`);
      return sh.follow({ host: spare.host, link: spare.link, spec }, excluded);
    }
    if (failure.message) tell(`${spare.host}: could not start the spare's agent of run ${sh.runId}: ${failure.message}`);
    if (failure.final) return;
    await new Promise((r) => setTimeout(r, BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]));
  }
}

/** One try: the agent's pid, or why not (final: the host answered and refused; trying again will not help). */
async function startOnce(spare: SpareLaunch, spec: LaunchSpec): Promise<number | { message?: string; final?: boolean }> {
  if (spare.link.ensureBundle) {
    try {
      await spare.link.ensureBundle();
    } catch (err) {
      const e = err as { code?: string; message: string; hint?: string };
      if (e.code !== 'bundle-mismatch' && e.code !== 'deploy-failed') return { message: `not reachable (${e.message})` };
      return { message: `${e.message}${e.hint ? ` (${e.hint})` : ''}`, final: e.code === 'bundle-mismatch' };
    }
  }
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
