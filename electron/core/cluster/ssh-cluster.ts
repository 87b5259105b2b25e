// ClusterOps over SSH: one HostSession per host (through ProxyJump hops when configured), a
// concurrency limit for large profiles, probe / deploy / launch / leftover checks. The only
// way the CLI, `cohort serve` and Electron reach hosts.
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { userInfo } from 'node:os';
import { CohortError, DEFAULT_TIMINGS, DisposableBase, buildLaunchSpec, runSettings, slurmJobName, slurmNodeWorkdir, withExcludedNodes, worldLayout, type SlurmSubmit } from '../../../trainer/protocol';
import { agentEnv, isLocalProfile, toApiError, type ConnectionResult, type DeployProgress, type DeployResult, type HostKeyInfo, type HostProbe, type HostRecordRef, type Profile, type ProfileHost } from '../../common';
import { resolvePaths, type Env } from '../paths';
import { HostSession, KeyRing, SshError, createLimiter, knownHostsName, resolveTarget, sshOptionsFromEnv, trustPresentedHostKey, type Limiter, type SshConnectOptions } from '../ssh';
import type { BundleCheck, HostLink } from '../runs/host-link';
import type { HostLaunch, RunPlan } from '../runs/run-controller';
import { spareLaunches } from '../runs/run-spare';
import { locateTrainerBundle, type TrainerBundle } from '../trainer-bundle';
import type { ClusterOps, LeftoverReport, PlanRunRequest } from './cluster-ops';
import { deployBundle, remoteBundleDir, sha256CheckCommand } from './deploy';
import { deployTarget, remoteFreePort } from './session-ops';
import { parseProbe, probeScript, shellQuote } from './probe';
import { probeLocal } from './probe-local';
import { SlurmJob, type LoginShell } from './slurm-job';
import { checkSlurmRequest, probeSlurm, workdirSeenByComputeNode } from './slurm-probe';

export interface SshClusterOptions {
  env: Env;
  keys?: KeyRing;
  /** Hosts contacted at once (connect, probe, deploy). */
  concurrency?: number;
  connectTimeoutMs?: number;
  /** A run whose leader host is silent this long is `lost` (RunPlan.lostAfterMs; default 60 s). */
  lostAfterMs?: number;
  /** Timings.sshKeepaliveMs (default 5 s); RunPlan.retryMaxMs: the longest pause between tries to re-follow or relaunch a host (default 4 s). */
  keepaliveIntervalMs?: number;
  retryMaxMs?: number;
  /** A login-node command (sinfo...) is given up after this long (Timings.loginCommandTimeoutMs; default 30 s). */
  loginCommandTimeoutMs?: number;
  onHostKeyAdded?: SshConnectOptions['onHostKeyAdded'];
  bundle?: () => TrainerBundle;
}

/** The client's waits a run plan carries (from its env, trainer/protocol/timings.ts). */
const planTimings = (o: SshClusterOptions): Pick<RunPlan, 'lostAfterMs' | 'retryMaxMs'> => ({ ...(o.lostAfterMs ? { lostAfterMs: o.lostAfterMs } : {}), ...(o.retryMaxMs ? { retryMaxMs: o.retryMaxMs } : {}) });

export class SshCluster extends DisposableBase implements ClusterOps {
  private readonly sessions = new Map<string, Promise<HostSession>>();
  private readonly limit: Limiter;

  constructor(private readonly o: SshClusterOptions) {
    super();
    this.limit = createLimiter(o.concurrency ?? 16);
  }

  /** One session per profile host, reused by every operation of this cluster object. */
  session(profile: Profile, host: string, opts: { acceptNewHostKey?: boolean; signal?: AbortSignal } = {}): Promise<HostSession> {
    if (isLocalProfile(profile)) throw new CohortError('local-profile', 'the local profile has no SSH hosts', { hint: 'run on this machine with --local, or name a cluster profile' });
    if (this.isDisposed) return Promise.reject(new CohortError('disposed', `cannot connect to ${host}: the cluster connection is shutting down`, { fatal: false }));
    const key = `${profile.name}/${host}`;
    const existing = this.sessions.get(key);
    if (existing) return existing.then((s) => (s.closed ? this.reconnect(key, profile, host, opts) : s));
    return this.reconnect(key, profile, host, opts);
  }

  private reconnect(key: string, profile: Profile, host: string, opts: { acceptNewHostKey?: boolean; signal?: AbortSignal }): Promise<HostSession> {
    const p = this.connect(profile, host, opts);
    this.sessions.set(key, p);
    p.catch(() => this.sessions.delete(key));
    return p;
  }

  /** A new session to one host of `profile` (not cached). */
  private connect(profile: Profile, host: string, opts: { acceptNewHostKey?: boolean; signal?: AbortSignal }): Promise<HostSession> {
    const paths = resolvePaths(this.o.env);
    const target = resolveTarget(profile, host, { localUser: this.o.env.USER || userInfo().username, home: paths.home });
    return this.limit(() =>
      HostSession.connect(target.endpoint, {
        ...sshOptionsFromEnv(this.o.env),
        keys: this.o.keys ?? new KeyRing(),
        jump: target.jump,
        ...(opts.acceptNewHostKey ? { acceptNewHostKey: true } : {}),
        ...(this.o.connectTimeoutMs ? { connectTimeoutMs: this.o.connectTimeoutMs } : {}),
        ...(this.o.keepaliveIntervalMs ? { keepaliveIntervalMs: this.o.keepaliveIntervalMs } : {}),
        ...(this.o.onHostKeyAdded ? { onHostKeyAdded: this.o.onHostKeyAdded } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    );
  }

  async testConnection(profile: Profile, host: string, opts: { signal?: AbortSignal } = {}): Promise<ConnectionResult> {
    const t0 = Date.now();
    // A fresh connection, closed afterwards: the profile may be an unsaved form's, or edited since a
    // cached session was made, and the test must try exactly the values given.
    let s: HostSession | undefined;
    try {
      if (isLocalProfile(profile)) throw new CohortError('local-no-ssh', 'the local profile runs on this machine without SSH: there is no connection to test', { hint: 'probe it from the Hosts view instead' });
      s = await this.connect(profile, host, opts);
      const r = await s.run('true', opts);
      if (r.code !== 0) throw new Error(`${host}: running a command failed (exit ${r.code}): ${r.stderr.trim()}`);
      return { ok: true, host, latencyMs: Date.now() - t0 };
    } catch (err) {
      const e = err as SshError;
      const h = profile.hosts.find((x) => x.name === host);
      const d = (e.details ?? {}) as { keyType?: string; fingerprint?: string; knownFingerprint?: string };
      const hostKey: HostKeyInfo | undefined = (e.code === 'ssh-host-key-unknown' || e.code === 'ssh-host-key-changed') && d.fingerprint && h ? { host, address: h.address, port: h.port, keyType: d.keyType ?? '', fingerprint: d.fingerprint, ...(d.knownFingerprint ? { knownFingerprint: d.knownFingerprint } : {}) } : undefined;
      return { ok: false, host, error: toApiError(e), ...(hostKey ? { hostKey } : {}) };
    } finally {
      s?.dispose();
    }
  }

  /** Records a host key the user confirmed in the GUI, only if the host still presents exactly that key. */
  async trustHostKey(key: HostKeyInfo): Promise<void> {
    if (key.knownFingerprint) throw new SshError('ssh-host-key-changed', key.host, `${key.host}: a changed host key is never trusted from the dashboard`, 'remove the old line from known_hosts yourself (ssh-keygen -R) after checking why the key changed');
    const { line } = await trustPresentedHostKey(resolvePaths(this.o.env).knownHostsPath, { name: key.host, address: key.address, port: key.port }, key.fingerprint);
    this.o.onHostKeyAdded?.({ host: key.host, knownHostsName: knownHostsName(key.address, key.port), keyType: key.keyType, fingerprint: key.fingerprint, line, path: resolvePaths(this.o.env).knownHostsPath });
  }

  async probe(profile: Profile, opts: { signal?: AbortSignal; acceptNewHostKeys?: boolean } = {}): Promise<HostProbe[]> {
    // The built-in `local` profile is this machine: no SSH, the same script run here.
    if (isLocalProfile(profile)) return Promise.all(profile.hosts.map((h) => probeLocal(h.name, h.workdir, { ...(opts.signal ? { signal: opts.signal } : {}), env: h.env })));
    return Promise.all(
      profile.hosts.map(async (h) => {
        try {
          const s = await this.session(profile, h.name, { ...(opts.acceptNewHostKeys ? { acceptNewHostKey: true } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
          const r = await s.run(probeScript(h.workdir), { ...opts, env: agentEnv(h) });
          const probe = parseProbe(h.name, r.stdout);
          if (!profile.scheduler) return probe;
          try {
            return { ...probe, slurm: await probeSlurm(this.loginShell(profile), { workdir: h.workdir, ...(profile.scheduler.partition ? { partition: profile.scheduler.partition } : {}), srun: true }) };
          } catch (err) {
            return { ...probe, ok: false, error: toApiError(err) };
          }
        } catch (err) {
          return { host: h.name, ok: false, probedAt: new Date().toISOString(), gpus: [], tfjsNodeGpu: false, tfjsNode: false, error: toApiError(err) };
        }
      }),
    );
  }

  /** Deploys to every host at once; `failFast` (a launch): the first host that fails aborts the
   *  others' connect, check and upload (their result: 'launch-cancelled', naming that host). */
  async deploy(profile: Profile, opts: { onProgress?: (p: DeployProgress) => void; signal?: AbortSignal; acceptNewHostKeys?: boolean; force?: boolean; failFast?: boolean } = {}): Promise<DeployResult[]> {
    const bundle = (this.o.bundle ?? locateTrainerBundle)();
    const cancel = new AbortController();
    const onOuterAbort = () => cancel.abort();
    if (opts.signal?.aborted) cancel.abort();
    else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
    let firstFailed = '';
    try {
      return await Promise.all(
        profile.hosts.map(async (h) => {
          try {
            opts.onProgress?.({ host: h.name, phase: 'connect', bytes: 0, totalBytes: 0, message: `${h.address}:${h.port}` });
            const s = await this.session(profile, h.name, { ...(opts.acceptNewHostKeys ? { acceptNewHostKey: true } : {}), signal: cancel.signal });
            await this.requireNode(s, h);
            return await this.limit(() => deployBundle(deployTarget(s), bundle, h.workdir, { ...opts, signal: cancel.signal }));
          } catch (err) {
            const cancelled = firstFailed !== '' && firstFailed !== h.name && cancel.signal.aborted && !opts.signal?.aborted;
            const e = cancelled ? new CohortError('launch-cancelled', `${h.name}: not prepared: the launch stopped when ${firstFailed} failed`, { fatal: false }) : (err as SshError);
            if (!cancelled && opts.failFast && !firstFailed) {
              firstFailed = h.name;
              cancel.abort(); // the other hosts stop connecting and uploading now
            }
            opts.onProgress?.({ host: h.name, phase: 'failed', bytes: 0, totalBytes: 0, message: e.message, error: toApiError(e) });
            return { host: h.name, ok: false, cached: false, bytesSent: 0, remoteDir: '', error: toApiError(e) };
          }
        }),
      );
    } finally {
      opts.signal?.removeEventListener('abort', onOuterAbort);
    }
  }

  async planRun(profile: Profile, req: PlanRunRequest): Promise<RunPlan> {
    if (profile.scheduler) return this.planSlurmRun(profile, req);
    const deployed = await this.deploy(profile, { ...(req.onProgress ? { onProgress: req.onProgress } : {}), ...(req.signal ? { signal: req.signal } : {}), ...(req.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}), failFast: true });
    const failed = deployed.filter((d) => !d.ok && d.error?.code !== 'launch-cancelled'); // by themselves, not stopped because one did
    if (failed.length) {
      const first = failed[0]!;
      const stopped = deployed.filter((d) => d.error?.code === 'launch-cancelled').map((d) => d.host);
      const message = failed.map((d) => `${d.host}: ${d.error?.message}`).join('\n') + (stopped.length ? `\n(the launch stopped preparing ${stopped.join(', ')})` : '');
      // Which host failed travels with the error (toErrorInfo's `host`): the dashboard's sentence and the failed launch's record name it.
      throw Object.assign(new CohortError(first.error?.code ?? 'deploy-failed', message, first.error?.hint ? { hint: first.error.hint } : {}), { host: first.host });
    }
    const master = profile.hosts[0]!, masterSession = await this.session(profile, master.name);
    const masterAddr = profile.masterAddr ?? master.address;
    const masterPort = profile.masterPort ?? (await remoteFreePort(masterSession));
    const controlPort = await remoteFreePort(masterSession);
    const token = randomBytes(24).toString('hex');
    const refs = this.recordOf(profile, deployed.map((d) => d.remoteDir));
    const spares = spareLaunches(profile, refs.filter((r, i) => profile.hosts[i]!.spare), (r) => this.hostLink(profile, r)); // run nothing until a restart moves a lost host's ranks to one (issue 21 item 5)
    const world = profile.hosts.filter((h) => !h.spare), layout = worldLayout(world);
    const hosts: HostLaunch[] = world.map((h, hi) => ({
      host: h.name,
      link: this.hostLink(profile, refs[profile.hosts.indexOf(h)]!),
      spec: buildLaunchSpec({ runId: req.runId, layout, index: hi, masterAddr, masterPort, config: req.config, env: agentEnv(h), control: { addr: masterAddr, port: controlPort, token }, leader: profile.hosts[0]!.name, spares: spares.map((x) => x.host), ...runSettings(req) }),
    }));
    return { runId: req.runId, hosts, record: world.map((h) => refs[profile.hosts.indexOf(h)]!), ...(spares.length ? { spares } : {}), ...planTimings(this.o) }; // record: where attach follows (a spare that takes a host's place joins it: start-run.ts)
  }

  /**
   * A Slurm run (issue 16): deploy once to the shared workdir over the login node, refuse what
   * Slurm would refuse or never start (unknown partition, more nodes than it has) before
   * submitting, and hand the controller a SlurmJob that submits, waits in the queue and yields
   * the allocation's nodes, each followed through the login node.
   */
  private async planSlurmRun(profile: Profile, req: PlanRunRequest): Promise<RunPlan> {
    const sched = profile.scheduler!;
    const login = profile.hosts[0]!;
    const deployed = await this.deploy(profile, { ...(req.onProgress ? { onProgress: req.onProgress } : {}), ...(req.signal ? { signal: req.signal } : {}), ...(req.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}) });
    const d = deployed[0]!;
    if (!d.ok) throw Object.assign(new CohortError(d.error?.code ?? 'deploy-failed', `${d.host}: ${d.error?.message}`, d.error?.hint ? { hint: d.error.hint } : {}), { host: d.host });
    const record = this.recordOf(profile, [d.remoteDir]);
    const shell = this.loginShell(profile);
    const part = await checkSlurmRequest(shell, profile.name, sched);
    await this.checkWorkdirShared(shell, profile, record[0]!.workdir, part.name);
    const submit: SlurmSubmit = {
      runId: req.runId,
      nodes: sched.nodes,
      tasksPerNode: sched.tasksPerNode,
      ...(sched.gpusPerNode ? { gpusPerNode: sched.gpusPerNode } : {}),
      sbatchArgs: withExcludedNodes([...(sched.partition ? [`--partition=${sched.partition}`] : []), ...(sched.timeLimit ? [`--time=${sched.timeLimit}`] : []), ...(sched.account ? [`--account=${sched.account}`] : []), ...sched.extraArgs], req.exclude ?? []),
      config: req.config,
      env: agentEnv(login),
      // Rank failures restart inside the allocation; node failures and preemptions through Slurm's requeue (agent-slurm).
      maxRestarts: req.maxRestarts ?? 0,
      token: randomBytes(24).toString('hex'),
    };
    return { runId: req.runId, hosts: [], record, scheduler: this.slurmJob(profile, req.runId, record[0]!, submit) };
  }

  /** Workdirs a compute node was seen to read (per profile): checked once per SshCluster. */
  private readonly sharedWorkdirs = new Set<string>();

  /** Refuses a workdir the compute nodes cannot see, before anything is submitted (one short srun, when the partition has room now). */
  private async checkWorkdirShared(shell: LoginShell, profile: Profile, workdir: string, partition: string): Promise<void> {
    const key = `${profile.name}|${workdir}|${partition}`;
    if (this.sharedWorkdirs.has(key)) return;
    // A workdir once seen from this partition's nodes stays seen: the login node keeps that note.
    const note = `${workdir.replace(/\/+$/, '')}/.cohort-workdir-shared`;
    if ((await shell.run(`grep -qxF ${shellQuote(partition)} ${shellQuote(note)}`)).code === 0) return void this.sharedWorkdirs.add(key);
    const seen = await workdirSeenByComputeNode(shell, workdir, partition);
    if (seen.workdirShared === 'yes') {
      this.sharedWorkdirs.add(key);
      await shell.run(`echo ${shellQuote(partition)} >> ${shellQuote(note)}`);
    }
    if (seen.workdirShared === 'no') {
      throw new CohortError('slurm-workdir-not-shared', `profile ${profile.name}: the workdir ${workdir} of ${profile.hosts[0]!.name} is not visible from the compute nodes of partition ${partition}`, {
        hint: `set ${profile.hosts[0]!.name}'s workdir to a directory on a filesystem the compute nodes mount (e.g. /scratch/$USER/cohort or a shared home); cohort probe ${profile.name} checks it`,
      });
    }
    // 'unchecked' (the partition has no room for the test srun now): submit; agents that cannot read the spec fail the run with this hint.
  }

  private slurmJob(profile: Profile, runId: string, ref: HostRecordRef, submit?: SlurmSubmit): SlurmJob {
    const login = profile.hosts[0]!.name;
    return new SlurmJob({
      runId,
      workdir: ref.workdir,
      login: this.loginShell(profile),
      loginLink: this.hostLink(profile, ref),
      nodeLink: (node, i) => this.hostLink(profile, { host: node, workdir: slurmNodeWorkdir(ref.workdir, runId, i), entry: ref.entry }, login),
      ...(submit ? { submit } : {}),
    });
  }

  /** Shell commands on a Slurm profile's login node, with its profile env. */
  private loginShell(profile: Profile): LoginShell {
    const h = profile.hosts[0]!;
    return {
      run: async (command, opts = {}) => {
        const s = await this.session(profile, h.name);
        const ms = opts.timeoutMs ?? this.o.loginCommandTimeoutMs ?? DEFAULT_TIMINGS.loginCommandTimeoutMs;
        const signal = AbortSignal.timeout(ms);
        try {
          return await s.run(command, { env: h.env, signal });
        } catch (err) {
          // A Slurm command that cannot reach its controller hangs rather than failing: say which, and where to look.
          if (!signal.aborted) throw err;
          const what = command.length > 80 ? `${command.slice(0, 77)}...` : command;
          throw new CohortError('login-command-timeout', `${h.name}: \`${what}\` did not finish within ${Math.round(ms / 1000)} s on the login node`, {
            hint: 'the Slurm commands there may be waiting for a controller they cannot reach: run `sinfo` on the login node, and check SLURM_CONF (and PATH) for a non-interactive SSH login, e.g. in the login host\'s env',
            cause: err,
          });
        }
      },
    };
  }

  /** Host commands of the bundle deployed at `remoteDir` on `host` (`cohort check`'s check-host, check-link, check-compute). */
  bundleLink(profile: Profile, host: string, remoteDir: string): HostLink {
    return this.hostLink(profile, this.recordOf({ ...profile, hosts: profile.hosts.filter((h) => h.name === host) }, [remoteDir])[0]!);
  }

  /** Where each host keeps a run's record: its workdir and the deployed bundle's entry. */
  private recordOf(profile: Profile, remoteDirs: string[]): HostRecordRef[] {
    return profile.hosts.map((h, i) => ({ host: h.name, workdir: posix.dirname(posix.dirname(remoteDirs[i]!)), entry: posix.join(remoteDirs[i]!, 'cohort-trainer.mjs') }));
  }

  /** The plan of a run started elsewhere (attach, stop), from the record locations kept in its history. */
  attachPlan(profile: Profile, runId: string, record: HostRecordRef[], spareRecord: HostRecordRef[] = []): RunPlan {
    if (profile.scheduler) return { runId, hosts: [], record, scheduler: this.slurmJob(profile, runId, record[0]!), ...planTimings(this.o) };
    const spares = spareLaunches(profile, spareRecord.filter((r) => !record.some((x) => x.host === r.host)), (r) => this.hostLink(profile, r)); // one that took a host's place is in the record
    return { runId, hosts: record.map((r) => ({ host: r.host, link: this.hostLink(profile, r) })), ...(spares.length ? { spares } : {}), ...planTimings(this.o) };
  }

  /**
   * Host commands over SSH exec: `node <entry> <cmd>` in the host's workdir, the host's env over the
   * channel. A profile host's link (not a Slurm node's, reached through the login node) can also put
   * the bundle back (ensureBundle).
   */
  private hostLink(profile: Profile, r: HostRecordRef, via = r.host): HostLink {
    const h = profile.hosts.find((x) => x.name === via);
    const env = { ...(h?.env ?? {}), COHORT_WORKDIR: r.workdir, COHORT_RUNTIME_DIR: posix.join(r.workdir, 'runtime') };
    return {
      host: r.host,
      ...(via === r.host ? { ensureBundle: (opts?: { signal?: AbortSignal }) => this.ensureBundle(profile, r, opts) } : {}),
      command: async (args, opts = {}) => {
        const s = await this.session(profile, via, { signal: AbortSignal.timeout(this.o.connectTimeoutMs ?? 15_000) });
        const proc = await s.exec(`cd ${shellQuote(r.workdir)} && exec node ${shellQuote(r.entry)} ${args.map(shellQuote).join(' ')}`, { env });
        let err = '';
        proc.stderr.setEncoding('utf8');
        proc.stderr.on('data', (c: string) => {
          if (err.length < 64 << 10) err += c;
        });
        proc.stdin.on('error', () => undefined);
        proc.stdin[opts.openStdin ? 'write' : 'end'](opts.stdin ?? ''); // open: check-link's "GO" comes later
        const exit = proc.exit.then(
          (x) => ({ code: x.code, signal: x.signal }),
          (e: Error) => {
            err += e.message;
            return { code: null, signal: 'DISCONNECTED' };
          },
        );
        return { onStdout: (l) => (proc.stdout.on('data', l), () => void proc.stdout.off('data', l)), stderr: () => err, exit, kill: () => proc.close(), ...(opts.openStdin ? { writeStdin: (t: string) => void proc.stdin.write(t), endStdin: () => void proc.stdin.end() } : {}) };
      },
    };
  }

  /**
   * The run's bundle (the directory of its record's entry) on its host, uploaded again when missing
   * or damaged: deployBundle's manifest check (one exec, a sha256 pass over the bundle) when this
   * client's bundle is the run's; when it holds another version it can only check the run's own
   * .sha256, and refuses to put a different trainer under a running run.
   */
  private async ensureBundle(profile: Profile, r: HostRecordRef, opts: { signal?: AbortSignal } = {}): Promise<BundleCheck> {
    const bundle = (this.o.bundle ?? locateTrainerBundle)();
    const runDir = posix.dirname(r.entry);
    const s = await this.session(profile, r.host, { signal: opts.signal ?? AbortSignal.timeout(this.o.connectTimeoutMs ?? 15_000) });
    if (remoteBundleDir(r.workdir, bundle.hash) === runDir) {
      const d = await this.limit(() => deployBundle(deployTarget(s), bundle, r.workdir, opts));
      return { redeployed: !d.cached, bytesSent: d.bytesSent, remoteDir: d.remoteDir };
    }
    const q = shellQuote(runDir);
    const check = await s.run(`cd ${q} 2>/dev/null && test -f .complete && ${sha256CheckCommand('.sha256')} >/dev/null 2>&1`, opts);
    if (check.code === 0) return { redeployed: false, bytesSent: 0, remoteDir: runDir };
    throw new CohortError('bundle-mismatch', `${r.host}: the trainer bundle this run was started with (${runDir}) is missing or damaged, and this client has another version (${bundle.hash.slice(0, 16)}) that cannot stand in for it under a running run`, { hint: 'attach from a client with the Cohort version that started the run, or stop the run (cohort stop RUN) and start a new one' });
  }

  async leftovers(profile: Profile, runId: string, opts: { timeoutMs?: number } = {}): Promise<LeftoverReport[]> {
    if (profile.scheduler) {
      // Slurm's proctrack ends every process of a job's steps with the job: the check is that the job is gone.
      try {
        const shell = this.loginShell(profile);
        const r = await shell.run(`squeue -h --name=${shellQuote(slurmJobName(runId))} -o '%i %T %N'`, { timeoutMs: opts.timeoutMs ?? 5000 });
        if (r.code !== 0) throw new Error(`squeue failed (exit ${r.code}): ${r.stderr.trim()}`);
        return [{ host: `slurm job of ${runId}`, processes: r.stdout.split('\n').filter((l) => l.trim()).map((l) => `still in squeue: ${l}`) }];
      } catch (err) {
        return [{ host: profile.hosts[0]!.name, processes: [], error: toApiError(err) }];
      }
    }
    // Each host is checked on its own, with its own time limit: one unreachable host neither
    // hides the others' results nor holds the answer beyond timeoutMs.
    return Promise.all(
      profile.hosts.map(async (h): Promise<LeftoverReport> => {
        const signal = AbortSignal.timeout(opts.timeoutMs ?? 5000);
        try {
          const s = await this.session(profile, h.name, { signal });
          // Every process of a run carries `--run <id>` (node) or `-X cohort_run=<id>` (python) in its arguments.
          // Host commands that only read or stop the record (another client's run-follow, a run-stop) are not the run.
          const r = await s.run(`ps -eo pid,args | grep -F -e ${shellQuote(`--run ${runId}`)} -e ${shellQuote(`cohort_run=${runId}`)} | grep -v -e grep -e ' run-follow ' -e ' run-status ' -e ' run-stop ' -e ' run-remove ' || true`, { signal });
          return { host: h.name, processes: r.stdout.split('\n').filter((l) => l.trim()) };
        } catch (err) {
          return { host: h.name, processes: [], error: toApiError(err) };
        }
      }),
    );
  }

  private async requireNode(s: HostSession, h: ProfileHost): Promise<void> {
    const r = await s.run('command -v node >/dev/null 2>&1 && node -e "process.stdout.write(process.versions.node)"', { env: h.env });
    const major = Number(/^(\d+)/.exec(r.stdout.trim())?.[1]);
    if (!(major >= 20)) throw new CohortError('node-missing', r.stdout.trim() ? `${h.name} has Node.js ${r.stdout.trim()}; the trainer needs 20 or newer` : `${h.name} has no Node.js on the PATH of a non-interactive SSH login`, { hint: `install Node.js 20+ on ${h.name} (nodejs.org or the distribution's nodejs 20.x), or add its bin directory to PATH in ~/.profile or the profile host's env` });
  }

  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose();
    for (const p of this.sessions.values()) void p.then((s) => s.dispose(), () => undefined);
    this.sessions.clear();
  }
}
