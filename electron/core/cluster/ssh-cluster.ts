// ClusterOps over SSH: one HostSession per host (through ProxyJump hops when configured), a
// concurrency limit for large profiles, probe / deploy / launch / leftover checks. The only
// way the CLI, `cohort serve` and Electron reach hosts.
import { posix } from 'node:path';
import { userInfo } from 'node:os';
import type { TrainConfig } from '../../../trainer/protocol';
import { isLocalProfile, toApiError, type ConnectionResult, type DeployProgress, type DeployResult, type HostKeyInfo, type HostProbe, type Profile, type ProfileHost } from '../../common';
import { resolvePaths, type Env } from '../paths';
import { HostSession, KeyRing, SshError, createLimiter, knownHostsName, resolveTarget, sshOptionsFromEnv, trustPresentedHostKey, type Limiter, type RemoteProcess, type SshConnectOptions } from '../ssh';
import type { AgentChannel, AgentExit } from '../runs/agent-channel';
import type { HostLaunch, RunPlan } from '../runs/run-controller';
import { locateTrainerBundle, type TrainerBundle } from '../trainer-bundle';
import type { ClusterOps } from './cluster-ops';
import { deployBundle, type DeployTarget } from './deploy';
import { parseProbe, probeScript, shellQuote } from './probe';

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
    const paths = resolvePaths(this.o.env);
    const target = resolveTarget(profile, host, { localUser: this.o.env.USER || userInfo().username, home: paths.home });
    const p = this.limit(() =>
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
    this.sessions.set(key, p);
    p.catch(() => this.sessions.delete(key));
    return p;
  }

  async testConnection(profile: Profile, host: string, opts: { signal?: AbortSignal } = {}): Promise<ConnectionResult> {
    const t0 = Date.now();
    try {
      const s = await this.session(profile, host, opts);
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
    }
  }

  /** Records a host key the user confirmed in the GUI, only if the host still presents exactly that key. */
  async trustHostKey(key: HostKeyInfo): Promise<void> {
    if (key.knownFingerprint) throw new SshError('ssh-host-key-changed', key.host, `${key.host}: a changed host key is never trusted from the dashboard`, 'remove the old line from known_hosts yourself (ssh-keygen -R) after checking why the key changed');
    const { line } = await trustPresentedHostKey(resolvePaths(this.o.env).knownHostsPath, { name: key.host, address: key.address, port: key.port }, key.fingerprint);
    this.o.onHostKeyAdded?.({ host: key.host, knownHostsName: knownHostsName(key.address, key.port), keyType: key.keyType, fingerprint: key.fingerprint, line, path: resolvePaths(this.o.env).knownHostsPath });
  }

  async probe(profile: Profile, opts: { signal?: AbortSignal; acceptNewHostKeys?: boolean } = {}): Promise<HostProbe[]> {
    return Promise.all(
      profile.hosts.map(async (h) => {
        try {
          const s = await this.session(profile, h.name, { ...(opts.acceptNewHostKeys ? { acceptNewHostKey: true } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
          const r = await s.run(probeScript(h.workdir), { ...opts, env: h.env });
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
      throw Object.assign(new Error(failed.map((d) => `${d.host}: ${d.error?.message}`).join('\n')), { code: first.error?.code ?? 'deploy-failed', ...(first.error?.hint ? { hint: first.error.hint } : {}) });
    }
    const master = profile.hosts[0]!;
    const masterSession = await this.session(profile, master.name);
    const masterAddr = profile.masterAddr ?? master.address;
    const masterPort = profile.masterPort ?? (await remoteFreePort(masterSession));
    let rank = 0;
    const hosts: HostLaunch[] = profile.hosts.map((h, hi) => {
      const ranks = Array.from({ length: h.slots }, (_, i) => ({ rank: rank++, localRank: i, ...(h.gpus?.[i] !== undefined ? { gpu: h.gpus[i]! } : {}) }));
      const dir = deployed[hi]!.remoteDir;
      return {
        host: h.name,
        ranks,
        env: h.env,
        open: async () => {
          const s = await this.session(profile, h.name);
          const wd = posix.dirname(posix.dirname(dir));
          const cmd = `cd ${shellQuote(wd)} && exec node ${shellQuote(posix.join(dir, 'cohort-trainer.mjs'))} agent --run ${shellQuote(req.runId)}`;
          // The host's env applies to the agent too (e.g. a PATH that finds node).
          return agentChannel(h.name, await s.exec(cmd, { env: { ...h.env, COHORT_WORKDIR: wd, COHORT_RUNTIME_DIR: posix.join(wd, 'runtime') } }));
        },
      };
    });
    return { runId: req.runId, worldSize: rank, masterAddr, masterPort, config: req.config, hosts, heartbeatIntervalMs: 2000, heartbeatTimeoutMs: 15_000 };
  }

  async leftovers(profile: Profile, runId: string): Promise<{ host: string; processes: string[] }[]> {
    return Promise.all(
      profile.hosts.map(async (h) => {
        const s = await this.session(profile, h.name);
        // Every process of a run carries `--run <id>` (node) or `-X cohort_run=<id>` (python) in its arguments.
        const r = await s.run(`ps -eo pid,args | grep -F -e ${shellQuote(`--run ${runId}`)} -e ${shellQuote(`cohort_run=${runId}`)} | grep -v grep || true`);
        return { host: h.name, processes: r.stdout.split('\n').filter((l) => l.trim()) };
      }),
    );
  }

  private async requireNode(s: HostSession, h: ProfileHost): Promise<void> {
    const r = await s.run('command -v node >/dev/null 2>&1 && node -e "process.stdout.write(process.versions.node)"', { env: h.env });
    const major = Number(/^(\d+)/.exec(r.stdout.trim())?.[1]);
    if (!(major >= 20)) {
      throw Object.assign(new Error(r.stdout.trim() ? `${h.name} has Node.js ${r.stdout.trim()}; the trainer needs 20 or newer` : `${h.name} has no Node.js on the PATH of a non-interactive SSH login`), {
        code: 'node-missing',
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

/** An SSH exec channel as an AgentChannel: closing it is what stops a remote agent (stdin EOF). */
export function agentChannel(host: string, proc: RemoteProcess): AgentChannel {
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdin.on('error', () => undefined);
  const exited: Promise<AgentExit> = proc.exit.then(
    (x) => ({ code: x.code, signal: x.signal }),
    () => ({ code: null, signal: 'DISCONNECTED' }),
  );
  return {
    host,
    write: (line) => {
      if (!proc.stdin.destroyed && proc.stdin.writable) proc.stdin.write(line + '\n');
    },
    end: () => proc.stdin.end(),
    onStdout: (l) => proc.stdout.on('data', l),
    onStderr: (l) => proc.stderr.on('data', l),
    exited,
    forceKill: () => proc.close(),
    dispose: () => proc.close(),
  };
}
