// ClusterOps over SSH: one HostSession per host (through ProxyJump hops when configured), a
// concurrency limit for large profiles, probe / deploy / launch / leftover checks. The only
// way the CLI, `cohort serve` and Electron reach hosts.
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { userInfo } from 'node:os';
import { CohortError, type TrainConfig } from '../../../trainer/protocol';
import { isLocalProfile, toApiError, type ConnectionResult, type DeployProgress, type DeployResult, type HostKeyInfo, type HostProbe, type Profile, type ProfileHost } from '../../common';
import { resolvePaths, type Env } from '../paths';
import { HostSession, KeyRing, SshError, createLimiter, knownHostsName, resolveTarget, sshOptionsFromEnv, trustPresentedHostKey, type Limiter, type SshConnectOptions } from '../ssh';
import type { HostLink } from '../runs/host-link';
import type { HostLaunch, RunPlan } from '../runs/run-controller';
import type { HostRecordRef } from '../../common';
import { locateTrainerBundle, type TrainerBundle } from '../trainer-bundle';
import type { ClusterOps, LeftoverReport } from './cluster-ops';
import { deployBundle, type DeployTarget } from './deploy';
import { parseProbe, probeScript, shellQuote } from './probe';
import { probeLocal } from './probe-local';

export interface SshClusterOptions {
  env: Env;
  keys?: KeyRing;
  /** Hosts contacted at once (connect, probe, deploy). */
  concurrency?: number;
  connectTimeoutMs?: number;
  onHostKeyAdded?: SshConnectOptions['onHostKeyAdded'];
  bundle?: () => TrainerBundle;
}

export class SshCluster implements ClusterOps {
  private readonly sessions = new Map<string, Promise<HostSession>>();
  private readonly limit: Limiter;
  private disposed = false;

  constructor(private readonly o: SshClusterOptions) {
    this.limit = createLimiter(o.concurrency ?? 16);
  }

  /** One session per profile host, reused by every operation of this cluster object. */
  session(profile: Profile, host: string, opts: { acceptNewHostKey?: boolean; signal?: AbortSignal } = {}): Promise<HostSession> {
    if (isLocalProfile(profile)) throw new Error('the local profile has no SSH hosts');
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
      const hostKey: HostKeyInfo | undefined =
        (e.code === 'ssh-host-key-unknown' || e.code === 'ssh-host-key-changed') && d.fingerprint && h
          ? { host, address: h.address, port: h.port, keyType: d.keyType ?? '', fingerprint: d.fingerprint, ...(d.knownFingerprint ? { knownFingerprint: d.knownFingerprint } : {}) }
          : undefined;
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
          const r = await s.run(probeScript(h.workdir), { ...opts, env: h.python ? { COHORT_PYTHON: h.python, ...h.env } : h.env });
          return parseProbe(h.name, r.stdout);
        } catch (err) {
          return { host: h.name, ok: false, probedAt: new Date().toISOString(), gpus: [], tfjsNodeGpu: false, tfjsNode: false, error: toApiError(err) };
        }
      }),
    );
  }

  async deploy(profile: Profile, opts: { onProgress?: (p: DeployProgress) => void; signal?: AbortSignal; acceptNewHostKeys?: boolean; force?: boolean } = {}): Promise<DeployResult[]> {
    const bundle = (this.o.bundle ?? locateTrainerBundle)();
    return Promise.all(
      profile.hosts.map(async (h) => {
        try {
          const s = await this.session(profile, h.name, { ...(opts.acceptNewHostKeys ? { acceptNewHostKey: true } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
          await this.requireNode(s, h);
          return await this.limit(() => deployBundle(deployTarget(s), bundle, h.workdir, opts));
        } catch (err) {
          const e = err as SshError;
          opts.onProgress?.({ host: h.name, phase: 'failed', bytes: 0, totalBytes: 0, message: e.message });
          return { host: h.name, ok: false, cached: false, bytesSent: 0, remoteDir: '', error: toApiError(e) };
        }
      }),
    );
  }

  async planRun(profile: Profile, req: { runId: string; config: TrainConfig; acceptNewHostKeys?: boolean; onProgress?: (p: DeployProgress) => void; signal?: AbortSignal }): Promise<RunPlan> {
    const deployed = await this.deploy(profile, { ...(req.onProgress ? { onProgress: req.onProgress } : {}), ...(req.signal ? { signal: req.signal } : {}), ...(req.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}) });
    const failed = deployed.filter((d) => !d.ok);
    if (failed.length) {
      const first = failed[0]!;
      throw new CohortError(first.error?.code ?? 'deploy-failed', failed.map((d) => `${d.host}: ${d.error?.message}`).join('\n'), first.error?.hint ? { hint: first.error.hint } : {});
    }
    const master = profile.hosts[0]!;
    const masterSession = await this.session(profile, master.name);
    const masterAddr = profile.masterAddr ?? master.address;
    const masterPort = profile.masterPort ?? (await remoteFreePort(masterSession));
    const controlPort = await remoteFreePort(masterSession);
    const token = randomBytes(24).toString('hex');
    let rank = 0;
    const ranksOf = profile.hosts.map((h) => Array.from({ length: h.slots }, (_, i) => ({ rank: rank++, localRank: i, ...(h.gpus?.[i] !== undefined ? { gpu: h.gpus[i]! } : {}) })));
    const record = this.recordOf(profile, deployed.map((d) => d.remoteDir));
    const hosts: HostLaunch[] = profile.hosts.map((h, hi) => ({
      host: h.name,
      link: this.hostLink(profile, record[hi]!),
      spec: {
        runId: req.runId,
        host: h.name,
        worldSize: rank,
        masterAddr,
        masterPort,
        ranks: ranksOf[hi]!,
        config: req.config,
        // The host's env reaches the agent inside the spec (run-start writes it 0600), never on a command line.
        // The profile's python is the agent's COHORT_PYTHON (an explicit COHORT_PYTHON in env still wins).
        env: h.python ? { COHORT_PYTHON: h.python, ...h.env } : h.env,
        heartbeatTimeoutMs: 0,
        role: hi === 0 ? 'leader' : 'follower',
        ...(profile.hosts.length > 1 ? { control: { addr: masterAddr, port: controlPort, token } } : {}),
      },
    }));
    return { runId: req.runId, hosts, record };
  }

  /** Where each host keeps a run's record: its workdir and the deployed bundle's entry. */
  private recordOf(profile: Profile, remoteDirs: string[]): HostRecordRef[] {
    return profile.hosts.map((h, i) => ({ host: h.name, workdir: posix.dirname(posix.dirname(remoteDirs[i]!)), entry: posix.join(remoteDirs[i]!, 'cohort-trainer.mjs') }));
  }

  /** The plan of a run started elsewhere (attach, stop), from the record locations kept in its history. */
  attachPlan(profile: Profile, runId: string, record: HostRecordRef[]): RunPlan {
    return { runId, hosts: record.map((r) => ({ host: r.host, link: this.hostLink(profile, r) })) };
  }

  /** Host commands over SSH exec: `node <entry> <cmd>` in the host's workdir, the host's env over the channel. */
  private hostLink(profile: Profile, r: HostRecordRef): HostLink {
    const h = profile.hosts.find((x) => x.name === r.host);
    const env = { ...(h?.env ?? {}), COHORT_WORKDIR: r.workdir, COHORT_RUNTIME_DIR: posix.join(r.workdir, 'runtime') };
    return {
      host: r.host,
      command: async (args, opts = {}) => {
        const s = await this.session(profile, r.host, { signal: AbortSignal.timeout(this.o.connectTimeoutMs ?? 15_000) });
        const proc = await s.exec(`cd ${shellQuote(r.workdir)} && exec node ${shellQuote(r.entry)} ${args.map(shellQuote).join(' ')}`, { env });
        let err = '';
        proc.stderr.setEncoding('utf8');
        proc.stderr.on('data', (c: string) => {
          if (err.length < 64 << 10) err += c;
        });
        proc.stdin.on('error', () => undefined);
        proc.stdin.end(opts.stdin ?? '');
        const exit = proc.exit.then(
          (x) => ({ code: x.code, signal: x.signal }),
          (e: Error) => {
            err += e.message;
            return { code: null, signal: 'DISCONNECTED' };
          },
        );
        return { onStdout: (l) => (proc.stdout.on('data', l), () => void proc.stdout.off('data', l)), stderr: () => err, exit, kill: () => proc.close() };
      },
    };
  }

  async leftovers(profile: Profile, runId: string, opts: { timeoutMs?: number } = {}): Promise<LeftoverReport[]> {
    // Each host is checked on its own, with its own time limit: one unreachable host neither
    // hides the others' results nor holds the answer beyond timeoutMs.
    return Promise.all(
      profile.hosts.map(async (h): Promise<LeftoverReport> => {
        const signal = AbortSignal.timeout(opts.timeoutMs ?? 5000);
        try {
          const s = await this.session(profile, h.name, { signal });
          // Every process of a run carries `--run <id>` (node) or `-X cohort_run=<id>` (python) in its arguments.
          const r = await s.run(`ps -eo pid,args | grep -F -e ${shellQuote(`--run ${runId}`)} -e ${shellQuote(`cohort_run=${runId}`)} | grep -v grep || true`, { signal });
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
    if (!(major >= 20)) {
      throw new CohortError('node-missing', r.stdout.trim() ? `${h.name} has Node.js ${r.stdout.trim()}; the trainer needs 20 or newer` : `${h.name} has no Node.js on the PATH of a non-interactive SSH login`, {
        hint: `install Node.js 20+ on ${h.name} (nodejs.org or the distribution's nodejs 20.x), or add its bin directory to PATH in ~/.profile or the profile host's env`,
      });
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const p of this.sessions.values()) void p.then((s) => s.dispose(), () => undefined);
    this.sessions.clear();
  }
}

function deployTarget(s: HostSession): DeployTarget {
  return {
    name: s.name,
    exec: async (command, opts) => {
      const r = await s.run(command, opts ?? {});
      return { code: r.code, stdout: r.stdout, stderr: r.stderr };
    },
    upload: async (local, remote, opts) => {
      // The whole bundle is checked with one sha256sum on the host after the upload (deploy.ts).
      await s.upload(local, remote, { skipIfSame: false, verify: false, ...(opts?.onProgress ? { onProgress: (sent: number) => opts.onProgress!(sent) } : {}), ...(opts?.signal ? { signal: opts.signal } : {}) });
    },
  };
}

/** A free TCP port on the master host, asked of the host itself (its firewall and its other jobs). */
async function remoteFreePort(s: HostSession): Promise<number> {
  const r = await s.run(`node -e "const s=require('net').createServer();s.listen(0,()=>{process.stdout.write(String(s.address().port));s.close()})"`);
  const port = Number(r.stdout.trim());
  if (!Number.isInteger(port) || port <= 0) throw new Error(`${s.name}: could not find a free port for the rendezvous (${r.stderr.trim()}); set masterPort in the profile`);
  return port;
}
