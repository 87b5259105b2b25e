// `cohort check PROFILE`: the cluster doctor, in core so the CLI, `cohort serve` and the desktop app
// share it. In parallel over the hosts: reach each and deploy the bundle as a run does (SSH with
// host-key verification, Node, the cached bundle), then the bundle's `check-host`. Then plain
// TCP between the hosts along the ring the ranks would form (check-links.ts), a one-rank compute time (History, a cached measurement, or `check-compute` once
// per distinct host type) and the prediction. Daemon-free: every host command exits on its own.
import { hostname } from 'node:os';
import type { HostCmdError, TrainConfig } from '../../../trainer/protocol';
import { coreSharing } from '../../../trainer/protocol/core-sharing';
import type { CheckHost, CheckPhases, CheckProblem, CheckResult, ComputeReport, HostCheckReport } from '../../../trainer/protocol/check';
import { isLocalProfile, profileWorldSize, type Profile, type RunMeta } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import { runHostCommand, type HostLink } from '../runs/host-link';
import { consistency, hostProblems } from './analyze';
import { measureLinks, startListeners, stopListeners } from './check-links';
import { computeKey, fromHistory, hostType } from './compute-source';
import { predict } from './predict';
import { lastJson } from './replies';
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
/** check-host's limit on each host. */
const HOST_CMD_MS = 90_000;

export async function runCheck(profile: Profile, config: TrainConfig, deps: CheckDeps, o: CheckOptions = {}): Promise<CheckResult> {
  const t0 = Date.now();
  // A Slurm profile: the same checks inside one short allocation on the partition's nodes.
  if (profile.scheduler) return runSlurmCheck(profile, config, deps, { ...o, linkMs: o.linkMs ?? LINK_MS });
  const say = o.onProgress ?? (() => undefined);
  const problems: CheckProblem[] = [];
  const links: Record<string, HostLink> = {};
  const hosts: CheckHost[] = profile.hosts.map((h) => ({ host: h.name, address: h.address, reachable: false }));
  const phases: CheckPhases = { reach: 0 };
  let mark = t0;
  const lap = (): number => {
    const now = Date.now();
    const ms = now - mark;
    mark = now;
    return ms;
  };

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
  phases.reach = lap();
  // The ring's listeners start beside check-host (a process start each, seconds on a busy host):
  // used when every host's check-host answers, else stopped and started again for those that did.
  const linkMs = o.linkMs ?? LINK_MS;
  const deployed = profile.hosts.filter((h) => links[h.name]).map((h) => h.name);
  const early = deployed.length >= 2 ? startListeners(profile, deployed, links, linkMs, HOST_CMD_MS) : undefined;
  void early?.catch(() => undefined); // awaited below; its failure is the check's
  await Promise.all(
    hosts.map(async (h) => {
      const link = links[h.host];
      if (!link) return;
      const r = await runHostCommand(link, ['check-host', '--engine', config.engine, ...pythonFlag(profile, h.host)], { timeoutMs: HOST_CMD_MS });
      const received = r.stdoutAt ?? Date.now();
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
  ).catch(async (err: unknown) => {
    await early?.then(stopListeners, () => undefined);
    throw err;
  });
  const table = consistency(hosts, config.engine);
  problems.push(...table.problems);
  phases.hosts = lap();

  // 2. Links, measured the way a run uses them (only between hosts whose check-host answered).
  const ready = profile.hosts.filter((h) => links[h.name] && hosts.find((x) => x.host === h.name)?.report).map((h) => h.name);
  const started = await early;
  const usable = started && started.names.join('\n') === ready.join('\n') ? started : undefined;
  if (started && !usable) await stopListeners(started);
  const measured = ready.length >= 2 ? await measureLinks(profile, ready, links, linkMs, say, usable) : { links: [], problems: [] };
  problems.push(...measured.problems);
  phases.links = lap();

  // 3. Compute time of one rank, then the prediction.
  const worldSize = profileWorldSize(profile); // spare hosts run no ranks
  const compute = await computeTime(profile, config, hosts, links, deps, o, say);
  problems.push(...compute.problems);
  phases.compute = lap();
  const prediction = compute.ms === undefined ? undefined : { ...predict({ config, worldSize, computeMs: compute.ms, computeSource: compute.source, links: measured.links, shared: compute.shared }), computeKey: compute.key };
  return { v: 1, profile: profile.name, checkedAt: new Date(t0).toISOString(), durationMs: Date.now() - t0, phasesMs: phases, hosts, links: measured.links, consistency: table.rows, problems, ...(prediction ? { prediction } : {}), ok: !problems.some((p) => p.severity === 'error') };
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
  const sh = coreSharing(ready.map((h) => ({ host: h.host, bootId: h.report!.bootId, cores: h.report!.cores, ranks: slotsOf(h) })));
  const group = ready.filter((h) => sh?.hosts.includes(h.host));
  const sharing = sh?.description;
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
