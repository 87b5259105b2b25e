// The one implementation of the Api contract (electron/common/api.ts) over core. Electron IPC and
// `cohort serve` (WebSocket) both sit in front of this class; neither adds behaviour of its own.
// Cluster operations go through the injected ClusterOps (SSH); without it they reject with
// `cluster-unavailable` so the dashboard can say so instead of hanging.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { ConfigError, type CohortEvent } from '../../../trainer/protocol';
import { ApiCallError, LOCAL_PROFILE_NAME, type CohortApi, type ConnectionResult, type DeployProgress, type DeployResult, type HostKeyInfo, type HostProbe, type Profile, type ProfileHost, type RunEventMessage, type RunMeta, type StartRunRequest } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { CohortPaths } from '../paths';
import { ProfileStore, importSshConfig } from '../profiles';
import type { RunController } from '../runs/run-controller';
import { RunStore } from '../runs/run-store';
import { startRun } from '../runs/start-run';
import { runSummaryCsv } from '../runs/run-csv';

export interface CohortServiceOptions {
  paths: CohortPaths;
  /** The SSH layer. Absent: cluster methods reject with `cluster-unavailable`. */
  cluster?: ClusterOps;
  /** Local user name (default remote user for ~/.ssh/config import). */
  localUser?: string;
}

type Listener<T> = (value: T) => void;

export class CohortService implements CohortApi {
  readonly profiles: ProfileStore;
  readonly runs: RunStore;
  private readonly active = new Map<string, RunController>();
  private readonly runListeners = new Set<Listener<RunEventMessage>>();
  private readonly deployListeners = new Set<Listener<DeployProgress>>();
  private disposed = false;

  constructor(private readonly opts: CohortServiceOptions) {
    this.profiles = new ProfileStore(opts.paths.profilesDir);
    this.runs = new RunStore(join(opts.paths.dataDir, 'runs'));
  }

  // ---- profiles ------------------------------------------------------------------------------

  async listProfiles(): Promise<Profile[]> {
    return (await this.profiles.list()).profiles;
  }

  async saveProfile(profile: unknown, previousName?: string): Promise<Profile> {
    const saved = await this.profiles.put(profile);
    // A rename writes the new file first, so a failure never loses the profile.
    if (previousName !== undefined && previousName !== saved.name && previousName !== LOCAL_PROFILE_NAME) {
      await this.profiles.remove(previousName);
    }
    return saved;
  }

  async deleteProfile(name: string): Promise<void> {
    const removed = await this.profiles.remove(name);
    if (!removed) throw new ApiCallError({ code: 'profile-not-found', message: `no profile named "${name}"`, hint: 'refresh the list; it may have been deleted elsewhere' });
  }

  async importSshConfig(): Promise<{ hosts: ProfileHost[]; skipped: { what: string; reason: string }[] }> {
    const path = this.opts.paths.sshConfigPath;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { hosts: [], skipped: [{ what: path, reason: 'file not found' }] };
      throw new ApiCallError({ code: 'ssh-config-unreadable', message: `cannot read ${path}: ${(err as Error).message}`, hint: 'check the file permissions' });
    }
    const r = importSshConfig(text, { home: this.opts.paths.home, localUser: this.opts.localUser ?? safeUser() });
    return { hosts: r.hosts, skipped: r.skipped };
  }

  // ---- cluster (SSH) ------------------------------------------------------------------------------

  async testConnection(profile: string, host: string): Promise<ConnectionResult> {
    const cluster = this.cluster('test a connection');
    return cluster.testConnection(await this.profiles.get(profile), host);
  }

  async trustHostKey(key: HostKeyInfo): Promise<void> {
    await this.cluster('trust a host key').trustHostKey(key);
  }

  async probe(profile: string): Promise<HostProbe[]> {
    const cluster = this.cluster('probe hosts');
    const result = await cluster.probe(await this.profiles.get(profile));
    if (profile !== LOCAL_PROFILE_NAME) await this.profiles.setLastProbe(profile, result);
    return result;
  }

  async deploy(profile: string): Promise<DeployResult[]> {
    const cluster = this.cluster('deploy the trainer');
    return cluster.deploy(await this.profiles.get(profile), { onProgress: (p) => this.emit(this.deployListeners, p) });
  }

  // ---- runs ------------------------------------------------------------------------------------

  async startRun(req: StartRunRequest): Promise<{ runId: string }> {
    if (this.disposed) throw new ApiCallError({ code: 'disposed', message: 'the service is shutting down' });
    const profile = await this.profiles.get(req.profile, req.ranks === undefined ? {} : { localSlots: req.ranks });
    if (profile.name !== LOCAL_PROFILE_NAME && !this.opts.cluster) this.cluster('run on a cluster profile');
    let started;
    try {
      started = await startRun({
        profile,
        overrides: req.config,
        ...(req.ranks === undefined ? {} : { ranks: req.ranks }),
        store: this.runs,
        dataDir: this.opts.paths.dataDir,
        ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}),
        ...(req.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}),
      });
    } catch (err) {
      if (err instanceof ConfigError) throw new ApiCallError({ code: 'bad-config', message: err.message, hint: `fix ${err.flag} in the Launch form` });
      throw err;
    }
    const { runId, controller } = started;
    this.active.set(runId, controller);
    controller.onEvent((event: CohortEvent) => this.emit(this.runListeners, { runId, event }));
    void controller.result.finally(() => this.active.delete(runId));
    // start() resolves once every agent has its spec; failures arrive as `error` events.
    void controller.start().catch((err: unknown) => controller.cancel(`start failed: ${(err as Error).message}`));
    return { runId };
  }

  async stopRun(runId: string): Promise<void> {
    const c = this.active.get(runId);
    if (!c) {
      const meta = this.runs.meta(runId);
      throw new ApiCallError(
        meta
          ? { code: 'run-not-active', message: `run ${runId} is not running in this process (status: ${meta.status})`, hint: meta.status === 'running' && meta.controllerPid ? `it is controlled by process ${meta.controllerPid}; use \`cohort stop\` there` : 'it has already ended' }
          : { code: 'run-not-found', message: `no run with id ${runId}`, hint: 'refresh the history list' },
      );
    }
    c.cancel('stopped from the dashboard');
    await c.result;
  }

  async listRuns(): Promise<RunMeta[]> {
    return this.runs.list();
  }

  async getRun(runId: string): Promise<{ meta: RunMeta; events: CohortEvent[] }> {
    const meta = this.runs.meta(runId);
    if (!meta) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${runId}`, hint: 'refresh the history list' });
    return { meta, events: this.runs.events(runId) };
  }

  async exportRunsCsv(runIds: string[]): Promise<string> {
    const metas = runIds.map((id) => {
      const m = this.runs.meta(id);
      if (!m) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${id}`, hint: 'refresh the history list' });
      return m;
    });
    return runSummaryCsv(metas);
  }

  // ---- events ------------------------------------------------------------------------------------

  onRunEvent(listener: Listener<RunEventMessage>): () => void {
    this.runListeners.add(listener);
    return () => this.runListeners.delete(listener);
  }

  onDeployProgress(listener: Listener<DeployProgress>): () => void {
    this.deployListeners.add(listener);
    return () => this.deployListeners.delete(listener);
  }

  /** Runs still controlled by this service. */
  activeRuns(): string[] {
    return [...this.active.keys()];
  }

  /** Cancels every active run and waits for them to end. Idempotent. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const pending = [...this.active.values()].map((c) => {
      c.cancel('the dashboard is shutting down');
      return c.result;
    });
    await Promise.allSettled(pending);
    this.runListeners.clear();
    this.deployListeners.clear();
    this.opts.cluster?.dispose();
  }

  private emit<T>(set: Set<Listener<T>>, value: T): void {
    for (const l of set) {
      try {
        l(value);
      } catch {
        // One broken subscriber (a closed socket) must not stop the others or the run.
      }
    }
  }

  private cluster(what: string): ClusterOps {
    // UNFINISHED: the SSH ClusterOps is wired by the lead (electron/core/cluster); until then
    // every cluster action says so plainly.
    if (!this.opts.cluster) {
      throw new ApiCallError({
        code: 'cluster-unavailable',
        message: `cannot ${what}: SSH cluster support is not connected in this build`,
        hint: 'use the built-in "local" profile, or a Cohort build with cluster support',
      });
    }
    return this.opts.cluster;
  }
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'root';
  }
}
