// `cohort check PROFILE`: the cluster doctor, in core so the CLI, `cohort serve` and the desktop app
// share it. In parallel over the hosts: reach each and deploy the bundle as a run does (SSH with
// host-key verification, Node, the cached bundle), then the bundle's `check-host`. Then plain
// TCP between the hosts along the ring the ranks would form, all hops at once as in a run
// (`check-link`), a one-rank compute time (History, a cached measurement, or `check-compute` once
// per distinct host type) and the prediction. Daemon-free: every host command exits on its own.
import { hostname } from 'node:os';
import type { HostCmdError, TrainConfig } from '../../../trainer/protocol';
import type { CheckHost, CheckLink, CheckProblem, CheckResult, ComputeReport, HostCheckReport, LinkSendReport } from '../../../trainer/protocol/check';
import { isLocalProfile, profileWorldSize, type Profile, type RunMeta } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import { runHostCommand, type HostLink } from '../runs/host-link';
import { consistency, hostProblems } from './analyze';
import { computeKey, fromHistory, hostType } from './compute-source';
import { predict } from './predict';
import { runSlurmCheck } from './slurm-check';

export interface CheckDeps {
  cluster: Pick<ClusterOps, 'deploy' | 'bundleLink'>;
  /** The local profile's host: this machine's bundle in its local workdir. */
  localLink: () => HostLink;
  /** Recorded runs (History), newest first. */
  history: () => RunMeta[];
  /** This profile's previous check (its compute measurement is reused when the key matches). */
  previous?: CheckResult | undefined;
}

export interface CheckOptions {
  acceptNewHostKeys?: boolean;
  /** How long each link streams (ms); COHORT_CHECK_LINK_MS in the CLI. */
  linkMs?: number;
  /** Skip the one-rank measurement when History and the previous check have none (prediction then says so). */
  noCompute?: boolean;
  onProgress?: (line: string) => void;
  /** Slurm: aborting (Ctrl-C) cancels the check's allocation. */
  signal?: AbortSignal;
}

const LINK_MS = 1500;
/** A listener's life beyond the stream: a dropped connection's 5 s limit, the pings, the answer. */
const LISTEN_SLACK_MS = 12_000;

export async function runCheck(profile: Profile, config: TrainConfig, deps: CheckDeps, o: CheckOptions = {}): Promise<CheckResult> {
  const t0 = Date.now();
  // A Slurm profile: the same checks inside one short allocation on the partition's nodes.
  if (profile.scheduler) return runSlurmCheck(profile, config, deps, { ...o, linkMs: o.linkMs ?? LINK_MS });
  const say = o.onProgress ?? (() => undefined);
  const problems: CheckProblem[] = [];
  const links: Record<string, HostLink> = {};
  const hosts: CheckHost[] = profile.hosts.map((h) => ({ host: h.name, address: h.address, reachable: false }));

  // 1. Reach, deploy, check-host: every host at once.
  say(`checking ${profile.hosts.length} host(s) of ${profile.name}`);
  if (isLocalProfile(profile)) {
    links[profile.hosts[0]!.name] = deps.localLink();
    hosts[0]!.reachable = true;
  } else {
    // The deploy a run does (cached when the bundle is there) is the reach check too: the SSH
    // connection with its host-key verification, Node ≥ 20, the workdir; each failure names the host.
    const deployed = await deps.cluster.deploy(profile, { ...(o.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}) });
    for (const d of deployed) {
      const h = hosts.find((x) => x.host === d.host)!;
      h.reachable = d.ok || !d.error?.code.startsWith('ssh-');
      if (d.ok) links[d.host] = deps.cluster.bundleLink(profile, d.host, d.remoteDir);
      else problems.push({ severity: 'error', host: d.host, code: d.error?.code ?? 'deploy-failed', message: d.error?.message ?? `${d.host}: deploy failed`, hint: d.error?.hint ?? `cohort deploy ${profile.name} --force` });
    }
  }
  await Promise.all(
    hosts.map(async (h) => {
      const link = links[h.host];
      if (!link) return;
      const r = await runHostCommand(link, ['check-host', '--engine', config.engine, ...pythonFlag(profile, h.host)], { timeoutMs: 90_000 });
      const received = Date.now();
      const report = lastJson<HostCheckReport & Partial<HostCmdError>>(r.stdout);
      if (!report || report.error || report.v !== 1) {
        problems.push({ severity: 'error', host: h.host, code: 'check-host-failed', message: `${h.host}: the check's host command failed (exit ${r.code}): ${report?.error?.message ?? (r.stderr.trim().split('\n').pop() || 'no answer')}`, hint: `cohort deploy ${profile.name} --force puts the bundle back; run "cohort probe ${profile.name}" to see the host` });
        delete links[h.host];
        return;
      }
      h.report = report;
      h.clockOffsetMs = report.timeMs - received;
      problems.push(...hostProblems(h));
    }),
  );
  const table = consistency(hosts, config.engine);
  problems.push(...table.problems);

  // 2. Links, measured the way a run uses them (only between hosts whose check-host answered).
  const ready = profile.hosts.filter((h) => links[h.name] && hosts.find((x) => x.host === h.name)?.report);
  const measured = ready.length >= 2 ? await measureLinks(profile, ready.map((h) => h.name), links, o.linkMs ?? LINK_MS, say) : { links: [], problems: [] };
  problems.push(...measured.problems);

  // 3. Compute time of one rank, then the prediction.
  const worldSize = profileWorldSize(profile); // spare hosts run no ranks
  const compute = await computeTime(profile, config, hosts, links, deps, o, say);
  problems.push(...compute.problems);
  const prediction = compute.ms === undefined ? undefined : { ...predict({ config, worldSize, computeMs: compute.ms, computeSource: compute.source, links: measured.links, shared: compute.shared }), computeKey: compute.key };
  return { v: 1, profile: profile.name, checkedAt: new Date(t0).toISOString(), durationMs: Date.now() - t0, hosts, links: measured.links, consistency: table.rows, problems, ...(prediction ? { prediction } : {}), ok: !problems.some((p) => p.severity === 'error') };
}

/**
 * Every ring hop i → i+1 (and the last back to the leader) streams at once, as the ranks' ring does;
 * followers that are not the leader's ring neighbour also connect to the leader's port (the
 * rendezvous; the profile's masterPort when it names one), latency only. Spare hosts (issue 21
 * item 5) are not in the ring (they run no ranks): each connects to the leader's port as a spare
 * taking a lost host's ranks would (its agent's control link, its ranks' rendezvous), latency only.
 * UNFINISHED: the links a spare would have to the lost host's ring neighbours are not measured.
 */
async function measureLinks(profile: Profile, ready: string[], links: Record<string, HostLink>, ms: number, say: (l: string) => void): Promise<{ links: CheckLink[]; problems: CheckProblem[] }> {
  const isSpare = (name: string) => !!profile.hosts.find((h) => h.name === name)?.spare;
  const names = ready.filter((x) => !isSpare(x)), spares = ready.filter(isSpare);
  const n = names.length;
  const addr = (name: string, i: number) => (i === 0 ? profile.masterAddr : undefined) ?? profile.hosts.find((h) => h.name === name)!.address;
  say(`measuring ${n} link(s) along the ring (${ms / 1000} s each)`);
  // Every listener lives through all the ring hops before its own (they run one after another).
  const listenMs = n * (ms + LISTEN_SLACK_MS);
  const listeners = await Promise.all(
    names.map(async (name, i) => {
      const expect = (n > 1 ? 1 : 0) + (i === 0 ? Math.max(0, n - 2) + spares.length : 0);
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
      return { name, port: port0, pid, cmd, out: () => out };
    }),
  );
  const problems: CheckProblem[] = [];
  for (const l of listeners) {
    if (!l.port) {
      problems.push({ severity: 'error', host: l.name, code: 'listen-failed', message: `${l.name}: could not listen on a TCP port${profile.masterPort && l === listeners[0] ? ` (masterPort ${profile.masterPort})` : ''}: ${lastJson<Partial<HostCmdError>>(l.out())?.error?.message ?? l.cmd.stderr().trim()}`, hint: profile.masterPort ? `free port ${profile.masterPort} on ${l.name} or change the profile's masterPort` : `check ${l.name}'s network settings` });
      l.cmd.kill();
    }
  }
  const hops: { from: string; to: string; toIndex: number; kind: CheckLink['kind']; ms: number; spare?: true }[] = n > 1 ? names.map((from, i) => ({ from, to: names[(i + 1) % n]!, toIndex: (i + 1) % n, kind: 'ring', ms })) : [];
  if (n > 2) for (let i = 1; i < n - 1; i++) hops.push({ from: names[i]!, to: names[0]!, toIndex: 0, kind: 'rendezvous', ms: 0 });
  for (const from of spares) hops.push({ from, to: names[0]!, toIndex: 0, kind: 'rendezvous', ms: 0, spare: true });
  const measure = async (hop: (typeof hops)[number]): Promise<CheckLink | undefined> => {
      const target = listeners[hop.toIndex]!;
      if (!target.port) return undefined;
      const r = await runHostCommand(links[hop.from]!, ['check-link', 'send', '--to', addr(hop.to, hop.toIndex), '--port', String(target.port), '--ms', String(hop.ms)], { timeoutMs: hop.ms + 90_000 });
      const rep = lastJson<LinkSendReport>(r.stdout);
      if (!rep?.ok) {
        const why = rep?.error?.message ?? (r.stderr.trim() || `exit ${r.code}`);
        if (hop.spare) return void problems.push(spareProblem(profile, hop.from, hop.to, target.port, why));
        problems.push({
          severity: 'error',
          host: hop.to,
          code: rep?.error?.code === 'connect-refused' ? 'port-refused' : 'port-blocked',
          message: `${hop.to} does not accept TCP connections from ${hop.from} on port ${target.port} (${why})${hop.toIndex === 0 ? ': the rendezvous of a run would fail' : ': the ranks\' ring would fail'}`,
          hint: `open inbound TCP on ${hop.to} from the other hosts of ${profile.name}: a run listens on the rendezvous port (${profile.masterPort ?? 'a free port'}) and one free port per rank; e.g. accept the cluster's subnet in ${hop.to}'s firewall (nftables/iptables, cloud security group)`,
        });
        return undefined;
      }
      return { from: hop.from, to: hop.to, mbps: rep.bytes && rep.ms ? Math.round((rep.bytes * 8) / (rep.ms * 1000)) : 0, latencyMs: Math.round((rep.rttMs ?? 0) * 100) / 100, kind: hop.kind };
  };
  // The rendezvous connections (latency only) at once; the ring hops one after another: hosts that
  // share CPUs (namespaces on one machine, busy nodes) measured the CPU, not the link, with every
  // unshaped stream at full blast, and a ring never drives its fast hops harder than its slowest.
  const rendezvous = await Promise.all(hops.filter((h) => h.kind === 'rendezvous').map(measure));
  const ring: (CheckLink | undefined)[] = [];
  for (const hop of hops.filter((h) => h.kind === 'ring')) ring.push(await measure(hop));
  const results = [...ring, ...rendezvous];
  // Listeners exit once served; one whose peer never connected (a firewall) is stopped by pid with
  // `check-link stop` (closing the SSH channel does not reliably end a remote process), else it
  // ends at its own timeout, which is waited for: nothing is left running.
  await Promise.all(
    listeners.map(async (l) => {
      const exited = await within(l.cmd.exit.then(() => true), 1000, false);
      if (!exited && l.pid) await runHostCommand(links[l.name]!, ['check-link', 'stop', '--pid', String(l.pid)], { timeoutMs: 15_000 });
      await within(l.cmd.exit.then(() => undefined), listenMs + 5000, undefined);
      l.cmd.kill();
    }),
  );
  return { links: results.filter((x): x is CheckLink => !!x), problems };
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

type Shared = { ms: number; ratio: number; sharing: string };

async function computeTime(profile: Profile, config: TrainConfig, hosts: CheckHost[], links: Record<string, HostLink>, deps: CheckDeps, o: CheckOptions, say: (l: string) => void): Promise<{ ms?: number; source: string; key?: string; shared?: Shared; problems: CheckProblem[] }> {
  const problems: CheckProblem[] = [];
  const ready = hosts.filter((h) => h.report && links[h.host] && !profile.hosts.find((x) => x.name === h.host)?.spare); // spares run no ranks
  if (!ready.length) return { source: 'no host answered', problems };
  const slotsOf = (h: CheckHost) => profile.hosts.find((x) => x.name === h.host)!.slots;
  const types = new Map<string, CheckHost>();
  for (const h of ready) {
    const t = hostType(h.report!, slotsOf(h));
    if (!types.has(t)) types.set(t, h);
  }
  // Ranks that share one machine's cores (several slots, or hosts reporting one kernel boot id:
  // namespaces, containers) compute at the same time in a run, so they are measured that way too.
  const kernels = new Map<string, CheckHost[]>();
  for (const h of ready) kernels.set(h.report!.bootId ?? `host ${h.host}`, [...(kernels.get(h.report!.bootId ?? `host ${h.host}`) ?? []), h]);
  const ranksOn = (g: CheckHost[]) => g.reduce((n, h) => n + slotsOf(h), 0);
  const group = [...kernels.values()].sort((a, b) => ranksOn(b) - ranksOn(a))[0]!;
  const worldSize = profileWorldSize(profile);
  const sharing = worldSize > 1 && ranksOn(group) > 1 ? `${ranksOn(group)} ranks on ${group.map((h) => h.host).join('+')} (${group[0]!.report!.cores} cores)` : undefined;
  const key = computeKey(config, [...types.keys(), ...(sharing ? [`sharing ${sharing}`] : [])]);
  const prev = deps.previous?.prediction;
  const cached = prev?.computeKey === key;
  // The slowdown of sharing, measured as a ratio (the ranks at once ÷ one of them alone, back to
  // back on the same machine) so that it holds whatever the one-rank time came from (History, a
  // cached or a fresh measurement) and a load that drifts between checks cancels out.
  let aloneHere: { host: string; ms: number } | undefined;
  const shared = async (aloneMs: number): Promise<Shared | undefined> => {
    if (!sharing) return undefined;
    const withRatio = (ratio: number): Shared => ({ ms: aloneMs * Math.max(1, ratio), ratio, sharing });
    if (cached && prev.sharedRatio !== undefined) return withRatio(prev.sharedRatio);
    if (o.noCompute) return undefined;
    const ref = aloneHere && group.some((h) => h.host === aloneHere!.host) ? aloneHere.ms : (await measureCompute(profile, config, group[0]!, links)).rep?.stepMs;
    say(`measuring ${sharing}: all at once`);
    const all = group.flatMap((h) => Array.from({ length: slotsOf(h) }, () => h));
    const reps = await Promise.all(all.map((h) => measureCompute(profile, config, h, links)));
    const ms = reps.map((r) => r.rep?.stepMs).filter((x): x is number => x !== undefined);
    if (ref !== undefined && ms.length === all.length) return withRatio(Math.max(...ms) / ref);
    const failed = reps.find((r) => r.rep?.stepMs === undefined) ?? reps[0]!;
    problems.push({ severity: 'warning', host: group[0]!.host, code: 'compute-unmeasured', message: `${sharing}: the ranks could not be measured computing at once (${failed.rep?.error?.message ?? (failed.r.stderr.trim().split('\n').pop() || 'no answer')}); the prediction takes one rank alone, too optimistic where they share cores`, hint: 'run the check again; a run of this plan shows the real step time' });
    return undefined;
  };
  const hist = fromHistory(deps.history(), profile, config);
  if (hist) return { ms: hist.ms, source: hist.source, key, ...opt(await shared(hist.ms)), problems };
  if (cached && prev.computeSource.startsWith('measured')) return { ms: prev.computeMs, source: `${prev.computeSource.replace(/ \(from the check of .*\)$/, '')} (from the check of ${deps.previous!.checkedAt})`, key, ...opt(await shared(prev.computeMs)), problems };
  if (o.noCompute) return { source: 'not measured (--no-compute) and none in History', key, problems };
  let worst: { ms: number; host: string } | undefined;
  for (const [, h] of types) {
    say(`measuring one rank's step on ${h.host} (${Math.max(1, Math.floor(h.report!.cores / slotsOf(h)))} thread(s))`);
    const { r, rep } = await measureCompute(profile, config, h, links);
    if (!rep?.ok || rep.stepMs === undefined) {
      problems.push({ severity: 'warning', host: h.host, code: 'compute-unmeasured', message: `${h.host}: one rank of this config could not be measured: ${rep?.error?.message ?? r.stderr.trim().split('\n').pop() ?? 'no answer'}`, hint: 'a run of this config would likely fail the same way: try it with cohort run --steps 2' });
      continue;
    }
    if (!worst || rep.stepMs > worst.ms) worst = { ms: rep.stepMs, host: h.host };
    aloneHere ??= { host: h.host, ms: rep.stepMs };
    if (group.some((g) => g.host === h.host)) aloneHere = { host: h.host, ms: rep.stepMs };
  }
  if (!worst) return { source: 'not measured', key, problems };
  const typesNote = types.size > 1 ? `, the slowest of ${types.size} host types` : '';
  return { ms: worst.ms, source: `measured: one rank alone on ${worst.host} for a few steps${typesNote}, ${new Date().toISOString()} from ${hostname()}`, key, ...opt(await shared(worst.ms)), problems };
}

const opt = (shared: Shared | undefined) => (shared ? { shared } : {});

/** `check-compute` on a host: one rank of the planned config for a few steps, with the threads a run would give it. */
async function measureCompute(profile: Profile, config: TrainConfig, h: CheckHost, links: Record<string, HostLink>) {
  const slots = profile.hosts.find((x) => x.name === h.host)!.slots;
  const threads = Math.max(1, Math.floor(h.report!.cores / slots));
  const r = await runHostCommand(links[h.host]!, ['check-compute', '--threads', String(threads), ...pythonFlag(profile, h.host)], { stdin: JSON.stringify(config) + '\n', timeoutMs: 240_000 });
  return { r, rep: lastJson<ComputeReport>(r.stdout) };
}

/** The profile's python for a host (the agent's COHORT_PYTHON; an explicit COHORT_PYTHON in its env wins, as in planRun). */
function pythonFlag(profile: Profile, host: string): string[] {
  const h = profile.hosts.find((x) => x.name === host);
  const python = h?.env.COHORT_PYTHON ?? h?.python;
  return python ? ['--python', python] : [];
}

function lastJson<T>(text: string): T | undefined {
  const lines = text.split('\n').filter((l) => l.trim().startsWith('{'));
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(lines[i]!) as T;
    } catch {
      // not JSON after all
    }
  }
  return undefined;
}

/**
 * `p`, or `fallback` once `ms` passed; the timer is cleared as soon as `p` settles. (A timer left
 * pending kept the `cohort check` process alive ~45 s after its answer: the CLI ends when nothing is.)
 */
function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([p, new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() => clearTimeout(timer));
}
