// `cohort check` on a Slurm profile (issue 21 item 1): the bundle is deployed to the login node's
// shared workdir as for a run, then its `check-slurm` (trainer/agent/check-slurm.ts) takes one short
// allocation on the nodes a run would get (the profile's partition, node count, account, GPUs and
// extraArgs) and runs the SSH check's host commands there: check-host on every node, plain TCP
// along the ring of the allocated nodes on free ports as the ranks use them, node 0's one-rank
// measurement. Hosts, links and problems are named by Slurm node name. The allocation is srun's
// own and ends with it; on abort (Ctrl-C) or error the client also cancels it by name, so no job
// is left in squeue.
import { randomBytes } from 'node:crypto';
import type { TrainConfig } from '../../../trainer/protocol';
import type { CheckHost, CheckLink, CheckPhases, CheckProblem, CheckResult, SlurmCheckReply, SlurmCheckRequest } from '../../../trainer/protocol/check';
import { coreSharing } from '../../../trainer/protocol/core-sharing';
import type { Profile } from '../../common';
import { runHostCommand } from '../runs/host-link';
import { consistency, hostProblems } from './analyze';
import { computeKey, fromHistory, hostType } from './compute-source';
import { predict } from './predict';
import { lastJson } from './replies';
import type { CheckDeps, CheckOptions } from './run-check';

/** How long the check waits for its allocation before it says the partition is full (s). */
const QUEUE_WAIT_S = 120;
/** The allocation's own time limit (min): Slurm releases it then whatever happens to the client. */
const TIME_LIMIT_MIN = 10;

export async function runSlurmCheck(profile: Profile, config: TrainConfig, deps: CheckDeps, o: CheckOptions & { linkMs: number }): Promise<CheckResult> {
  const t0 = Date.now();
  const sched = profile.scheduler!;
  const login = profile.hosts[0]!;
  const say = o.onProgress ?? (() => undefined);
  const problems: CheckProblem[] = [];
  const result = (hosts: CheckHost[], links: CheckLink[], rest: Partial<CheckResult> = {}): CheckResult => ({ v: 1, profile: profile.name, checkedAt: new Date(t0).toISOString(), durationMs: Date.now() - t0, hosts, links, consistency: [], problems, ...rest, ok: !problems.some((p) => p.severity === 'error') });

  say(`deploying to ${login.name} (the login node of ${profile.name})`);
  const d = (await deps.cluster.deploy(profile, { ...(o.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}) }))[0]!;
  if (!d.ok) {
    problems.push({ severity: 'error', host: login.name, code: d.error?.code ?? 'deploy-failed', message: d.error?.message ?? `${login.name}: deploy failed`, hint: d.error?.hint ?? `cohort deploy ${profile.name} --force` });
    return result([{ host: login.name, address: login.address, reachable: !d.error?.code.startsWith('ssh-') }], []);
  }
  const link = deps.cluster.bundleLink(profile, login.name, d.remoteDir);
  const phasesMs: CheckPhases = { reach: Date.now() - t0 };
  const hist = fromHistory(deps.history(), profile, config);
  const id = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const req: SlurmCheckRequest = {
    id,
    nodes: sched.nodes,
    srunArgs: [...(sched.partition ? [`--partition=${sched.partition}`] : []), ...(sched.account ? [`--account=${sched.account}`] : []), ...(sched.gpusPerNode ? [`--gpus-per-node=${sched.gpusPerNode}`] : []), ...sched.extraArgs],
    engine: config.engine,
    ...(login.env.COHORT_PYTHON ?? login.python ? { python: login.env.COHORT_PYTHON ?? login.python } : {}),
    linkMs: o.linkMs,
    queueWaitS: QUEUE_WAIT_S,
    timeLimitMin: TIME_LIMIT_MIN,
    ...(o.noCompute ? {} : { compute: { config, tasksPerNode: sched.tasksPerNode, ...(hist ? { alone: false } : {}) } }),
  };
  say(`allocating ${sched.nodes} node(s)${sched.partition ? ` of partition ${sched.partition}` : ''} for the check (srun, job name cohort-check-${id})`);
  const cancel = () => runHostCommand(link, ['check-slurm', 'cancel', '--id', id], { timeoutMs: 30_000 });
  const aborted = new Promise<'aborted'>((resolve) => {
    if (o.signal?.aborted) resolve('aborted');
    o.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const running = runHostCommand(link, ['check-slurm'], { stdin: JSON.stringify(req) + '\n', timeoutMs: (QUEUE_WAIT_S + TIME_LIMIT_MIN * 60) * 1000 });
  let r: Awaited<typeof running>;
  try {
    const first = await Promise.race([running, aborted]);
    if (first === 'aborted') {
      await cancel();
      // Wait for srun to go (at most 30 s), and clear the timer: a pending timer keeps the CLI alive.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([running, new Promise((res) => (timer = setTimeout(res, 30_000)))]).finally(() => clearTimeout(timer));
      throw new Error(`cohort check ${profile.name}: cancelled; its allocation cohort-check-${id} was released (scancel)`);
    }
    r = first;
    phasesMs.allocation = Date.now() - t0 - phasesMs.reach;
  } catch (err) {
    await cancel().catch(() => undefined);
    throw err;
  }
  const received = r.stdoutAt ?? Date.now();
  const reply = lastJson<SlurmCheckReply>(r.stdout);
  if (!reply || r.code !== 0) {
    await cancel().catch(() => undefined);
    problems.push({ severity: 'error', host: login.name, code: reply?.error?.code ?? 'check-slurm-failed', message: `${login.name}: the check's allocation failed (exit ${r.code}): ${reply?.error?.message ?? (r.stderr.trim().split('\n').pop() || 'no answer')}`, hint: `cohort probe ${profile.name} checks the login node, the partition and the shared workdir` });
    return result([], []);
  }
  if (reply.error) {
    const full = reply.error.code === 'slurm-no-allocation';
    problems.push({ severity: 'error', host: login.name, code: reply.error.code, message: `${login.name}: ${full ? `no allocation of ${sched.nodes} node(s)${sched.partition ? ` in partition ${sched.partition}` : ''} within ${QUEUE_WAIT_S} s` : 'the check inside the allocation failed'}: ${reply.error.message}`, hint: full ? `the partition is busy or smaller than scheduler.nodes: sinfo -p ${sched.partition ?? '<partition>'} shows its nodes; check again later or lower scheduler.nodes` : `see the message (Slurm's own); cohort probe ${profile.name} checks the partition and the shared workdir` });
  }

  // Nodes: the same host analysis as for SSH hosts, named by Slurm node name. A node's clock offset
  // to this client: its offset to the login node (measured in the allocation) plus the login
  // node's to this client (its reply's time against ours on receipt, within the exec's latency).
  const loginOffsetMs = reply.timeMs === undefined ? undefined : reply.timeMs - received;
  const hosts: CheckHost[] = reply.nodes.map((n) => ({ host: n.node, address: n.address, reachable: true, ...(n.report ? { report: n.report } : {}), ...(n.clock && 'offsetMs' in n.clock && loginOffsetMs !== undefined ? { clockOffsetMs: Math.round(n.clock.offsetMs + loginOffsetMs) } : {}) }));
  for (const n of reply.nodes) {
    if (n.error) problems.push({ severity: 'error', host: n.node, code: 'check-host-failed', message: `${n.node}: ${n.error.message}`, hint: `${n.error.hint ? `${n.error.hint}; ` : ''}a run on ${n.node} would likely fail: look at the node (scontrol show node ${n.node}), or keep it out with --exclude=${n.node} in the profile's scheduler.extraArgs` });
    if (n.clock && 'error' in n.clock) problems.push({ severity: 'warning', host: n.node, code: 'clock-unmeasured', message: `${n.node}: its clock could not be compared with the login node's: ${n.clock.error.message}`, hint: `the nodes reach the login node over TCP as srun's own I/O does; if that is blocked, check ${n.node}'s clock by hand (chronyc tracking, timedatectl)` });
  }
  for (const h of hosts) problems.push(...hostProblems(h));
  const table = consistency(hosts, config.engine);
  problems.push(...table.problems);
  const links: CheckLink[] = [];
  for (const l of reply.links) {
    if (l.report.ok) links.push({ from: l.from, to: l.to, kind: l.kind, mbps: l.report.bytes && l.report.ms ? Math.round((l.report.bytes * 8) / (l.report.ms * 1000)) : 0, latencyMs: Math.round((l.report.rttMs ?? 0) * 100) / 100 });
    else {
      problems.push({
        severity: 'error',
        host: l.to,
        code: l.report.error?.code === 'connect-refused' ? 'port-refused' : 'port-blocked',
        message: `node ${l.to} does not accept TCP connections from node ${l.from}${l.port ? ` on port ${l.port}` : ''} (${l.report.error?.message ?? 'no answer'})${l.kind === 'rendezvous' ? ': the rendezvous of a run would fail' : ": the ranks' ring would fail"}`,
        hint: `open inbound TCP between the compute nodes of ${sched.partition ? `partition ${sched.partition}` : 'the partition'} (a run's ranks listen on free ports), or keep ${l.to} out with --exclude=${l.to} in the profile's scheduler.extraArgs`,
      });
    }
  }
  links.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'ring' ? -1 : 1));

  // One rank's compute time: History, node 0's measurement now, or the previous check with the same
  // key; ranks that share one machine's cores (nodes with one kernel boot id, several tasks per
  // node) measured at once against one of them alone, as the SSH check does (core-sharing.ts).
  const types = [...new Set(hosts.filter((h) => h.report).map((h) => hostType(h.report!, sched.tasksPerNode)))];
  const sh = coreSharing(hosts.filter((h) => h.report).map((h) => ({ host: h.host, bootId: h.report!.bootId, cores: h.report!.cores, ranks: sched.tasksPerNode })));
  const key = computeKey(config, [...types, ...(sh ? [`sharing ${sh.description}`] : [])]);
  const prev = deps.previous?.prediction;
  const alone = reply.compute?.ok ? reply.compute.stepMs : undefined;
  let compute: { ms: number; source: string } | undefined = hist;
  if (!compute && alone !== undefined) compute = { ms: alone, source: `measured: one rank alone on node ${reply.compute!.node} (${reply.compute!.threads} thread(s)) inside the check's allocation, ${new Date().toISOString()}${types.length > 1 ? `; ${types.length} node types, only node ${reply.compute!.node}'s measured` : ''}` };
  else if (!compute && prev?.computeKey === key && prev.computeSource.startsWith('measured')) compute = { ms: prev.computeMs, source: `${prev.computeSource} (from the check of ${deps.previous!.checkedAt})` };
  if (!compute && reply.compute && !reply.compute.ok) problems.push({ severity: 'warning', host: reply.compute.node, code: 'compute-unmeasured', message: `${reply.compute.node}: one rank of this config could not be measured: ${reply.compute.error?.message ?? 'no answer'}`, hint: 'a run of this config would likely fail the same way: try it with cohort run --steps 2' });
  let shared: { ms: number; ratio: number; sharing: string } | undefined;
  if (compute && sh && !o.noCompute) {
    const atOnce = (reply.shared ?? []).map((x) => (x.ok ? x.stepMs : undefined));
    const ratio = alone !== undefined && atOnce.length === sh.ranks && atOnce.every((x) => x !== undefined) ? Math.max(...(atOnce as number[])) / alone : prev?.computeKey === key ? prev.sharedRatio : undefined;
    if (ratio !== undefined) shared = { ms: compute.ms * Math.max(1, ratio), ratio, sharing: sh.description };
    else problems.push({ severity: 'warning', host: sh.hosts[0]!, code: 'compute-unmeasured', message: `${sh.description}: the ranks could not be measured computing at once (${(reply.shared ?? []).find((x) => !x.ok)?.error?.message ?? `${atOnce.length} of ${sh.ranks} answered`}); the prediction takes one rank alone, too optimistic where they share cores`, hint: 'run the check again; a run of this plan shows the real step time' });
  }
  const worldSize = sched.nodes * sched.tasksPerNode;
  const prediction = compute ? { ...predict({ config, worldSize, computeMs: compute.ms, computeSource: compute.source, links, shared }), computeKey: key } : undefined;
  return result(hosts, links, { phasesMs, consistency: table.rows, ...(prediction ? { prediction } : {}), ...(reply.jobId ? { allocation: { jobId: reply.jobId, nodes: reply.nodes.map((n) => n.node), ...(reply.spares ? { spares: reply.spares } : {}) } } : {}) });
}
