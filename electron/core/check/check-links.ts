// `cohort check`'s links, measured the way a run uses them (plain TCP between the hosts, not through
// SSH), with the bundle's `check-link` (trainer/agent/check-link.ts): every host listens on a free
// port (the leader on the profile's masterPort when it names one); every sender then starts at
// once, connects and times its round trips; the ring hops stream one after another on the
// client's "GO"; the followers that are not the leader's ring neighbour reach its port (the
// rendezvous), latency only. Spare hosts (issue 21 item 5) are not in the ring (they run no ranks):
// each connects to the leader's port as a spare taking a lost host's ranks would (its agent's
// control link, its ranks' rendezvous), latency only; and the ring links it would have in a lost
// follower's place (that follower's ring predecessor → the spare, the spare → its successor; the
// one to the leader is the rendezvous link already), latency only, kind 'spare'. Nothing is left
// running: each listener exits once served, is stopped by pid when its peer never came, or ends at
// its own timeout, which is waited for.
import type { HostCmdError } from '../../../trainer/protocol';
import type { CheckLink, CheckProblem, LinkSendReport } from '../../../trainer/protocol/check';
import type { Profile } from '../../common';
import { runHostCommand, type HostCommand, type HostLink } from '../runs/host-link';
import { lastJson, within } from './replies';

/** A listener's life beyond the streams: a dropped connection's 5 s limit, the pings, the answer. */
const LISTEN_SLACK_MS = 12_000;

export interface Listeners {
  /** The hosts they were started for, spares included (a later ring of other hosts needs new ones). */
  names: string[];
  /** Each listener's own timeout (ms). */
  listenMs: number;
  list: { name: string; link: HostLink; port: number; pid: number; cmd: HostCommand; out: () => string }[];
}

/**
 * Every host of the ring listens (its port once it answers, 0 when it could not). `earlyMs`: how much
 * sooner than the links they start (runCheck starts them beside check-host, whose limit that is).
 */
export async function startListeners(profile: Profile, ready: string[], links: Record<string, HostLink>, ms: number, earlyMs = 0): Promise<Listeners> {
  const { names, spares } = ringOf(profile, ready);
  const n = names.length;
  const sp = spareHops(names, spares);
  // Every listener lives through all the ring hops before its own (they run one after another).
  const listenMs = n * (ms + LISTEN_SLACK_MS) + earlyMs;
  const list = await Promise.all(
    [...names, ...(n > 1 ? spares : [])].map(async (name, i) => {
      const inbound = sp.filter((h) => h.to === name).length;
      const expect = i >= n ? inbound : (n > 1 ? 1 : 0) + (i === 0 ? Math.max(0, n - 2) + spares.length : 0) + inbound;
      const port = i === 0 && profile.masterPort ? profile.masterPort : 0;
      const cmd = await links[name]!.command(['check-link', 'listen', '--port', String(port), '--expect', String(expect), '--timeout-ms', String(listenMs)]);
      let out = '';
      let pid = 0;
      const gotPort = new Promise<number>((resolve) => {
        cmd.onStdout((b) => {
          out += b.toString('utf8');
          const j = lastJson<{ port?: number; pid?: number } & Partial<HostCmdError>>(out.split('\n')[0] + '\n');
          if (j?.pid) pid = j.pid;
          if (j?.port) resolve(j.port);
          if (j?.error) resolve(0);
        });
        void cmd.exit.then(() => resolve(0));
      });
      const port0 = await within(gotPort, 30_000, 0);
      return { name, link: links[name]!, port: port0, pid, cmd, out: () => out };
    }),
  );
  return { names: ready, listenMs, list };
}

/** The ring's hosts (in profile order) and the spares among `ready`. */
function ringOf(profile: Profile, ready: string[]): { names: string[]; spares: string[] } {
  const isSpare = (name: string) => !!profile.hosts.find((h) => h.name === name)?.spare;
  return { names: ready.filter((x) => !isSpare(x)), spares: ready.filter(isSpare) };
}

/**
 * The ring links a spare would have in a lost follower's place (ring order names[0..n-1], each host
 * sending to the next): the follower's predecessor → the spare, the spare → its successor, except the
 * spare → the leader (the spare's rendezvous link measures that path). `instead`: the follower replaced.
 */
export function spareHops(names: readonly string[], spares: readonly string[]): { from: string; to: string; spare: string; instead: string }[] {
  const n = names.length;
  const hops: { from: string; to: string; spare: string; instead: string }[] = [];
  for (const spare of spares) {
    for (let i = 1; i < n; i++) {
      const instead = names[i]!;
      const next = names[(i + 1) % n]!;
      if (!hops.some((h) => h.from === names[i - 1] && h.to === spare)) hops.push({ from: names[i - 1]!, to: spare, spare, instead });
      if ((i + 1) % n !== 0 && !hops.some((h) => h.from === spare && h.to === next)) hops.push({ from: spare, to: next, spare, instead });
    }
  }
  return hops;
}

/** A ring link a spare would need does not connect: a restart that moves that follower's ranks to the spare would fail. */
function spareLinkProblem(profile: Profile, hop: { from: string; to: string; spare: string; instead: string }, port: number, why: string): CheckProblem {
  const other = hop.from === hop.spare ? hop.to : hop.from;
  return {
    severity: 'error',
    host: hop.spare,
    code: 'spare-unreachable',
    message: `${hop.from} cannot open a TCP connection to ${hop.to} on port ${port} (${why}): if the spare host ${hop.spare} took ${hop.instead}'s ranks, the ranks' ring ${hop.from} → ${hop.to} would fail`,
    hint: `allow TCP between ${hop.spare} and ${other} (${hop.to}'s inbound and ${hop.from}'s outbound firewall rules: a run's ranks listen on free ports), or remove "spare": true from ${hop.spare} in ${profile.name}`,
  };
}

/** A spare host that cannot reach the leader: a restart that moves a lost host's ranks to it would fail (spare-missing). */
function spareProblem(profile: Profile, spare: string, leader: string, port: number, why: string): CheckProblem {
  return {
    severity: 'error',
    host: spare,
    code: 'spare-unreachable',
    message: `the spare host ${spare} cannot open a TCP connection to the leader ${leader} on port ${port} (${why}): a restart that moves a lost host's ranks to ${spare} would fail`,
    hint: `allow TCP from ${spare} to ${leader} (${spare}'s outbound and ${leader}'s inbound firewall rules: a run listens on the rendezvous port ${profile.masterPort ?? '(a free port)'} and one free port per rank), or remove "spare": true from ${spare} in ${profile.name}`,
  };
}

/**
 * Listeners exit once served; one whose peer never connected (a firewall) is stopped by pid with
 * `check-link stop` (closing the SSH channel does not reliably end a remote process), else it ends
 * at its own timeout, which is waited for: nothing is left running.
 */
export async function stopListeners(l: Listeners): Promise<void> {
  await Promise.all(
    l.list.map(async (x) => {
      const exited = await within(x.cmd.exit.then(() => true), 1000, false);
      if (!exited && x.pid) await runHostCommand(x.link, ['check-link', 'stop', '--pid', String(x.pid)], { timeoutMs: 15_000 });
      await within(x.cmd.exit.then(() => undefined), l.listenMs + 5000, undefined);
      x.cmd.kill();
    }),
  );
}

/** The ring's hops and the rendezvous connections between `ready` (in profile order; spares reach the leader only), over `started` listeners or new ones. */
export async function measureLinks(profile: Profile, ready: string[], links: Record<string, HostLink>, ms: number, say: (l: string) => void, started?: Listeners): Promise<{ links: CheckLink[]; problems: CheckProblem[] }> {
  const { names, spares } = ringOf(profile, ready);
  const n = names.length;
  if (!n) return { links: [], problems: [] };
  const addr = (name: string, i: number) => (i === 0 ? profile.masterAddr : undefined) ?? profile.hosts.find((h) => h.name === name)!.address;
  say(`measuring ${n} link(s) along the ring (${ms / 1000} s each)`);
  const all = started ?? (await startListeners(profile, ready, links, ms));
  const listeners = all.list;
  const problems: CheckProblem[] = [];
  for (const l of listeners) {
    if (!l.port) {
      problems.push({ severity: 'error', host: l.name, code: 'listen-failed', message: `${l.name}: could not listen on a TCP port${profile.masterPort && l === listeners[0] ? ` (masterPort ${profile.masterPort})` : ''}: ${lastJson<Partial<HostCmdError>>(l.out())?.error?.message ?? l.cmd.stderr().trim()}`, hint: profile.masterPort ? `free port ${profile.masterPort} on ${l.name} or change the profile's masterPort` : `check ${l.name}'s network settings` });
      l.cmd.kill();
    }
  }
  const hops: { from: string; to: string; toIndex: number; kind: CheckLink['kind']; ms: number; spare?: true; instead?: ReturnType<typeof spareHops>[number] }[] = n > 1 ? names.map((from, i) => ({ from, to: names[(i + 1) % n]!, toIndex: (i + 1) % n, kind: 'ring', ms })) : [];
  if (n > 2) for (let i = 1; i < n - 1; i++) hops.push({ from: names[i]!, to: names[0]!, toIndex: 0, kind: 'rendezvous', ms: 0 });
  for (const from of spares) hops.push({ from, to: names[0]!, toIndex: 0, kind: 'rendezvous', ms: 0, spare: true });
  const at = (name: string) => listeners.findIndex((l) => l.name === name);
  if (n > 1) for (const h of spareHops(names, spares)) hops.push({ from: h.from, to: h.to, toIndex: at(h.to), kind: 'spare', ms: 0, instead: h });
  // Every sender starts at once (a host command's start, Node loading the bundle, is seconds on a
  // busy host: paid once, in parallel, not once per hop in turn). The ring hops then stream one
  // after another on "GO": hosts that share CPUs (namespaces on one machine, busy nodes) measured
  // the CPU, not the link, with every unshaped stream at full blast, and a ring never drives its
  // fast hops harder than its slowest.
  const senders = await Promise.all(
    hops.map(async (hop) => {
      const target = listeners[hop.toIndex];
      if (!target?.port) return undefined;
      const ring = hop.kind === 'ring';
      const cmd = await links[hop.from]!.command(['check-link', 'send', '--to', addr(hop.to, hop.toIndex), '--port', String(target.port), '--ms', String(hop.ms), ...(ring ? ['--start', 'stdin'] : [])], { openStdin: ring });
      let out = '';
      const ready = new Promise<boolean>((resolve) => {
        cmd.onStdout((b) => {
          out += b.toString('utf8');
          if (out.includes('"ready":true')) resolve(true);
        });
        void cmd.exit.then(() => resolve(false));
      });
      return { hop, cmd, ready, port: target.port, out: () => out };
    }),
  );
  await within(Promise.all(senders.map((x) => x?.ready)), 90_000, undefined);
  const finish = async (x: (typeof senders)[number]): Promise<CheckLink | undefined> => {
    if (!x) return undefined;
    const { hop, cmd } = x;
    if (cmd.writeStdin && cmd.endStdin) {
      cmd.writeStdin('GO\n');
      cmd.endStdin();
    }
    const exit = await within(cmd.exit, hop.ms + 90_000, undefined);
    if (!exit) cmd.kill();
    const rep = lastJson<LinkSendReport>(x.out());
    if (!rep?.ok) {
      const why = rep?.error?.message ?? (cmd.stderr().trim() || (exit ? `exit ${exit.code}` : `no answer within ${(hop.ms + 90_000) / 1000} s`));
      if (hop.spare) return void problems.push(spareProblem(profile, hop.from, hop.to, x.port, why));
      if (hop.instead) return void problems.push(spareLinkProblem(profile, hop.instead, x.port, why));
      problems.push({
        severity: 'error',
        host: hop.to,
        code: rep?.error?.code === 'connect-refused' ? 'port-refused' : 'port-blocked',
        message: `${hop.to} does not accept TCP connections from ${hop.from} on port ${x.port} (${why})${hop.toIndex === 0 ? ': the rendezvous of a run would fail' : ': the ranks\' ring would fail'}`,
        hint: `open inbound TCP on ${hop.to} from the other hosts of ${profile.name}: a run listens on the rendezvous port (${profile.masterPort ?? 'a free port'}) and one free port per rank; e.g. accept the cluster's subnet in ${hop.to}'s firewall (nftables/iptables, cloud security group)`,
      });
      return undefined;
    }
    return { from: hop.from, to: hop.to, mbps: rep.bytes && rep.ms ? Math.round((rep.bytes * 8) / (rep.ms * 1000)) : 0, latencyMs: Math.round((rep.rttMs ?? 0) * 100) / 100, kind: hop.kind };
  };
  const rendezvous = await Promise.all(senders.filter((x) => x && x.hop.kind !== 'ring').map(finish));
  const ring: (CheckLink | undefined)[] = [];
  for (const x of senders.filter((y) => !y || y.hop.kind === 'ring')) ring.push(await finish(x));
  const results = [...ring, ...rendezvous];
  await stopListeners(all);
  return { links: results.filter((x): x is CheckLink => !!x), problems };
}
