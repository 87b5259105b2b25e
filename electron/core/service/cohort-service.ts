// The one implementation of the Api contract (electron/common/api.ts) over core. Electron IPC and
// `cohort serve` (WebSocket) both sit in front of this class; neither adds behaviour of its own.
// Cluster operations go through the injected ClusterOps (SSH); without it they reject with
// `cluster-unavailable` so the dashboard can say so instead of hanging.
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { ConfigError, DisposableBase, Emitter, KeyedEmitter, isFinished, type CohortEvent, type TrainConfig } from '../../../trainer/protocol';
import {
  ApiCallError,
  LOCAL_PROFILE_NAME,
  type CohortApi,
  type ConnectionResult,
  type DeployProgress,
  type DeployResult,
  type HostKeyInfo,
  type HostProbe,
  type Profile,
  type ProfileHost,
  type PassphraseRequestMessage,
  type ProfileRef,
  type RunAttachment,
  type RunEventMessage,
  type RunExportFormat,
  type RunMeta,
  type RunSeries,
  type StartRunRequest,
  type StopRunOptions,
} from '../../common';
import type { ClusterOps, LeftoverReport } from '../cluster/cluster-ops';
import type { CohortPaths } from '../paths';
import { ProfileStore, importSshConfigFile } from '../profiles';
import type { RunResult } from '../runs/run-controller';
import { RunStore } from '../runs/run-store';
import { attachRun, startRun, type StartedRun } from '../runs/start-run';
import { runProfile } from '../runs/run-profile';
import { runSummaryCsv, runSummaryJson } from '../runs/run-csv';
import { deleteRuns, type DeletedRun, type DeleteRunsOptions } from '../runs/delete-runs';
import type { PassphrasePrompts } from './passphrase-prompts';
import type { CheckResult } from '../../../trainer/protocol/check';
import { ProfileChecks } from './profile-checks';
import { deliverOwedStops, refreshRunStatus, untilLaunched, type RefreshDeps } from './refresh-run-status';

export interface CohortServiceOptions {
  paths: CohortPaths;
  /** The SSH layer. Absent: cluster methods reject with `cluster-unavailable`. */
  cluster?: ClusterOps;
  /** Local user name (default remote user for ~/.ssh/config import). */
  localUser?: string;
  /** The environment `${VAR}` in ~/.ssh/config values expands from (the composition root's). */
  env?: Record<string, string | undefined>;
  /** Told about a run folder the history skips (damaged or incomplete meta.json): file and reason. */
  onSkippedRecord?: (file: string, reason: string) => void;
  /** Passphrase requests for encrypted keys, answered by the dashboard (the cluster's KeyRing asks
   *  through `passphrases.ask`). Absent: answerPassphrase is refused, no request is ever pushed. */
  passphrases?: PassphrasePrompts;
}
type Listener<T> = (value: T) => void;

export class CohortService extends DisposableBase implements CohortApi {
  readonly profiles: ProfileStore;
  readonly runs: RunStore;
  private readonly checks: ProfileChecks;
  private readonly active = new Map<string, StartedRun>();
  private readonly starting = new Map<string, Promise<boolean>>();
  /**
   * The last start in flight per profile: startRun answers before the hosts' `run-start`, so two runs
   * asked for one after the other could reach the hosts (and claim their slots) the other way round.
   * Starts of one profile go to the hosts in the order they were asked for; other profiles do not wait.
   */
  private readonly lastStart = new Map<string, Promise<unknown>>();
  /** Each run's live events, by run id: a subscriber hears only the run it follows. */
  private readonly runEvents = this.register(new KeyedEmitter<string, RunEventMessage>());
  private readonly deployEvents = this.register(new Emitter<DeployProgress>());

  constructor(private readonly opts: CohortServiceOptions) {
    super();
    this.profiles = new ProfileStore(opts.paths.profilesDir);
    this.runs = new RunStore(join(opts.paths.dataDir, 'runs'));
    this.checks = new ProfileChecks({ dataDir: opts.paths.dataDir, profiles: this.profiles, runs: this.runs, cluster: (what) => this.cluster(what) });
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
    const r = await importSshConfigFile(path, { home: this.opts.paths.home, localUser: this.opts.localUser ?? safeUser(), ...(this.opts.env ? { env: this.opts.env } : {}) });
    if (!r) return { hosts: [], skipped: [{ what: path, reason: 'file not found' }] };
    return { hosts: r.hosts, skipped: r.skipped };
  }

  // ---- cluster (SSH) ------------------------------------------------------------------------------

  async testConnection(profile: ProfileRef, host: string): Promise<ConnectionResult> {
    const cluster = this.cluster('test a connection');
    // An unsaved form's profile arrives decoded (API_ARGS); it is used for this call only.
    return cluster.testConnection(typeof profile === 'string' ? await this.profiles.get(profile) : profile, host);
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
    return cluster.deploy(await this.profiles.get(profile), { onProgress: (p) => this.deployEvents.fire(p) });
  }

  // ---- the cluster doctor (electron/core/check) ---------------------------------------------

  checkProfile(profile: string, config: Partial<TrainConfig> = {}, ranks?: number): Promise<CheckResult> {
    return this.checks.check(profile, config, ranks);
  }

  async lastCheck(profile: string): Promise<CheckResult | null> {
    return this.checks.last(profile);
  }

  // ---- runs ------------------------------------------------------------------------------------

  async startRun(req: StartRunRequest): Promise<{ runId: string }> {
    if (this.isDisposed) throw new ApiCallError({ code: 'disposed', message: 'the service is shutting down' });
    const profile = await this.profiles.get(req.profile, req.ranks === undefined ? {} : { localSlots: req.ranks });
    if (profile.name !== LOCAL_PROFILE_NAME && !this.opts.cluster) this.cluster('run on a cluster profile');
    let started: StartedRun;
    try {
      started = await startRun({
        profile,
        overrides: req.config,
        ...(req.ranks === undefined ? {} : { ranks: req.ranks }),
        store: this.runs,
        dataDir: this.opts.paths.dataDir,
        ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}),
        ...(req.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}),
        ...(req.maxRestarts !== undefined ? { maxRestarts: req.maxRestarts } : {}),
        ...(req.queue !== undefined ? { queue: req.queue } : {}),
        ...(req.exclude?.length ? { exclude: req.exclude } : {}),
        ...(req.refused ? { refused: req.refused } : {}),
        onDeployProgress: (p) => this.deployEvents.fire(p),
        events: this.runEvents,
      });
    } catch (err) {
      if (err instanceof ConfigError) throw new ApiCallError({ code: 'bad-config', message: err.message, hint: `fix ${err.flag} (the CLI flag, or the Launch form field of that name)` });
      const failedId = (err as { runId?: unknown }).runId; // a failed launch is recorded: it keeps what the user said of it too
      if (typeof failedId === 'string') this.runs.annotate(failedId, req);
      throw err;
    }
    const { runId, controller } = started;
    this.runs.annotate(runId, req); // name, tags, notes given at launch
    this.track(started);
    // start() resolves once every host has started its agent; failures arrive as `error` events.
    const before = this.lastStart.get(profile.name) ?? Promise.resolve();
    const starting = before
      .then(() => controller.start())
      .catch((err: unknown) => {
        controller.cancel(`start failed: ${(err as Error).message}`);
        return false;
      });
    this.lastStart.set(profile.name, starting);
    void starting.finally(() => {
      if (this.lastStart.get(profile.name) === starting) this.lastStart.delete(profile.name);
    });
    this.starting.set(runId, starting);
    void controller.result.finally(() => this.starting.delete(runId));
    return { runId };
  }

  /** Whether a run this service started has its agent running on every host (true), or failed to start
   *  (false). A client that detaches (`cohort run --detach`) waits for this before it goes away: the run
   *  then needs no client. Undefined for a run not being started here. */
  started(runId: string): Promise<boolean> | undefined {
    return this.starting.get(runId);
  }

  async stopRun(runId: string, opts: StopRunOptions = {}): Promise<void> {
    await this.stopAndWait(runId, opts);
  }

  /** stopRun, resolving with the run's outcome as this process saw it end (the CLI prints it: the
   *  local history may be written by another client following the same run, a moment later). */
  async stopAndWait(runId: string, opts: StopRunOptions = {}): Promise<RunResult> {
    // A run this process does not follow (started by another CLI or dashboard, which may be gone)
    // is stopped the same way: through its hosts (run-stop), never by signalling that process.
    const run = this.active.get(runId) ?? (await this.follow(runId));
    if (!run) {
      const meta = this.runs.meta(runId)!;
      throw new ApiCallError({ code: 'run-not-active', message: `run ${runId} is not running (status: ${meta.status})`, hint: 'it has already ended' });
    }
    run.controller.cancel(opts.force ? 'stopped (forced)' : 'stopped by the user', opts);
    return run.controller.result;
  }

  async attachRun(runId: string): Promise<RunAttachment> {
    // Following a run again starts from the beginning of its hosts' record, so the backfill is
    // empty then and every event arrives live with seq from 0.
    const run = this.active.get(runId) ?? (await this.follow(runId));
    const meta = this.meta(runId);
    // The record is written synchronously as each event arrives, and this read is synchronous, so
    // every event of the run is either in `events` or comes later with seq >= nextSeq. A run this
    // process follows is read from its own recorder (the history's writer may be another process).
    const events = run ? run.recorder.events() : this.runs.events(runId);
    return { meta: this.runs.meta(runId) ?? meta, events, nextSeq: events.length, live: !!run };
  }

  /** Starts following a run this process does not control; undefined when it has ended. */
  private async follow(runId: string): Promise<StartedRun | undefined> {
    // Another client still launching it: its hosts' record may not be there yet (untilLaunched).
    await untilLaunched(runId, this.refreshDeps());
    if (this.active.has(runId)) return this.active.get(runId); // followed meanwhile (another call here)
    const meta = this.meta(runId);
    if (isFinished(meta.status)) return undefined;
    // No run-status first (one command fewer before the first event): the follow itself finds out,
    // and replays the record once even when the run has ended, so the local history is complete.
    const profile = await runProfile(meta, this.profiles);
    const started = attachRun({ meta, store: this.runs, dataDir: this.opts.paths.dataDir, ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}), ...(profile ? { profile } : {}), events: this.runEvents });
    this.track(started);
    return started;
  }

  private meta(runId: string): RunMeta {
    const meta = this.runs.meta(runId);
    if (!meta) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${runId}`, hint: 'refresh the history list, or `cohort runs list`' });
    return meta;
  }

  private track(started: StartedRun): void {
    const { runId, controller } = started;
    this.active.set(runId, started);
    void controller.result.finally(() => {
      this.active.delete(runId);
      controller.dispose();
    });
  }

  /** The outcome of a run this service controls (for the CLI's exit code); undefined if it is not active here. */
  runResult(runId: string): Promise<RunResult> | undefined {
    return this.active.get(runId)?.controller.result;
  }

  /** After a cluster run: each host checked for processes of the run (should be none), each within timeoutMs. */
  async leftovers(runId: string, opts: { timeoutMs?: number } = {}): Promise<LeftoverReport[]> {
    const meta = this.runs.meta(runId);
    if (!meta || meta.profile === LOCAL_PROFILE_NAME) return [];
    return this.cluster('check hosts for leftovers').leftovers((await runProfile(meta, this.profiles))!, runId, opts);
  }

  /** The local history, with runs it thinks are still going refreshed from their hosts. */
  async listRuns(): Promise<RunMeta[]> {
    const onSkip = this.opts.onSkippedRecord;
    const all = this.runs.list(onSkip ? { onSkip } : {});
    const open = all.filter((m) => this.unsettled(m) || (m.stopOwed?.length && !this.active.has(m.id)));
    if (!open.length) return all;
    await Promise.all(open.map((m) => this.settle(m)));
    return this.runs.list();
  }

  /** What asking a run's hosts needs (refresh-run-status.ts). */
  private refreshDeps(): RefreshDeps {
    return { runs: this.runs, profiles: this.profiles, dataDir: this.opts.paths.dataDir, ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}) };
  }

  /** A run the cache thinks is still going and no client here follows: its hosts know better. */
  private unsettled(m: RunMeta): boolean {
    return !isFinished(m.status) && !this.active.has(m.id);
  }

  /** The hosts' word on an unsettled run (run-status), and what it measured if it has ended; an ended
   *  run's stop owed to a host that was down when it was sent is delivered (issue 24 item 4). */
  private async settle(m: RunMeta): Promise<void> {
    const deps = this.refreshDeps();
    if (!this.unsettled(m)) return void (await deliverOwedStops(m, deps));
    const now = await refreshRunStatus(m, deps);
    if (now && isFinished(now.status)) await this.replayEnded(now); // (the settled meta: a replay never writes it back to running)
  }

  /** A run that ended while no client followed it (started with --detach, its client killed): its hosts'
   *  record is replayed once into the history, so it has what it measured (median, spread, curves), not
   *  only its end state. Bounded; a replay cut short is done again on the next list (the cache then still says the run is open). */
  private async replayEnded(meta: RunMeta, timeoutMs = 15_000): Promise<void> {
    if (this.active.has(meta.id) || this.isDisposed) return;
    try {
      const profile = await runProfile(meta, this.profiles);
      const started = attachRun({ meta, store: this.runs, dataDir: this.opts.paths.dataDir, ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}), ...(profile ? { profile } : {}), events: this.runEvents });
      this.track(started);
      await Promise.race([started.controller.result, new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
    } catch {
      // the hosts' state (refreshRunStatus) stands
    }
  }

  /** One run as its hosts know it (a run the cache thinks is going is asked about first, as in listRuns). */
  async getRun(runId: string): Promise<{ meta: RunMeta; events: CohortEvent[] }> {
    const cached = this.runs.meta(runId);
    if (!cached) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${runId}`, hint: 'refresh the history list' });
    const meta = this.unsettled(cached) ? await this.settle(cached).then(() => this.runs.meta(runId) ?? cached) : cached;
    return { meta, events: this.runs.events(runId) };
  }

  async renameRun(runId: string, name: string): Promise<RunMeta> {
    const m = this.runs.rename(runId, name);
    if (!m) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${runId}`, hint: 'refresh the history list' });
    return m;
  }

  async deleteRuns(runIds: string[]): Promise<string[]> {
    return (await this.removeRuns(runIds)).filter((d) => d.deleted).map((d) => d.meta.id);
  }

  /** deleteRuns with its report; `hosts`: the hosts' records too (`cohort runs rm --hosts`, core/runs/delete-runs.ts). */
  removeRuns(runIds: string[], opts: Pick<DeleteRunsOptions, 'hosts' | 'anyway' | 'confirm'> = {}): Promise<DeletedRun[]> {
    return deleteRuns(this.runs, runIds, async (id) => (await this.getRun(id)).meta, { ...opts, profiles: this.profiles, dataDir: this.opts.paths.dataDir, ...(this.opts.cluster ? { cluster: this.opts.cluster } : {}) });
  }

  async getRunSeries(runIds: string[]): Promise<RunSeries[]> {
    const missing = runIds.find((id) => !this.runs.series(id));
    if (missing !== undefined) throw new ApiCallError({ code: 'run-not-found', message: `no run with id ${missing}`, hint: 'refresh the history list' });
    return runIds.map((id) => this.runs.series(id)!);
  }

  async exportRuns(runIds: string[], format: RunExportFormat, baseline?: string): Promise<string> {
    for (const id of runIds) this.meta(id); // unknown ids refused before any host is asked
    const metas = await Promise.all(runIds.map(async (id) => (await this.getRun(id)).meta));
    if (baseline !== undefined && !runIds.includes(baseline)) throw new ApiCallError({ code: 'bad-argument', message: `the baseline ${baseline} is not one of the exported runs`, hint: 'choose the baseline among the runs you export' });
    return format === 'json' ? runSummaryJson(metas, baseline, (id) => this.runs.series(id)) : runSummaryCsv(metas, baseline);
  }

  // ---- events ------------------------------------------------------------------------------------

  onRunEvent(runId: string, listener: Listener<RunEventMessage>): () => void {
    return this.runEvents.event(runId, listener);
  }

  onDeployProgress(listener: Listener<DeployProgress>): () => void {
    return this.deployEvents.event(listener);
  }

  onPassphraseRequest(listener: Listener<PassphraseRequestMessage>): () => void {
    return this.opts.passphrases ? this.opts.passphrases.onRequest(listener) : () => undefined;
  }

  async answerPassphrase(id: string, passphrase: string | null): Promise<void> {
    if (!this.opts.passphrases) throw new ApiCallError({ code: 'no-passphrase-prompts', message: 'this Cohort process does not ask for passphrases', hint: 'load the key into ssh-agent (ssh-add KEY)' });
    this.opts.passphrases.answer(id, passphrase);
  }

  /** Runs still controlled by this service. */
  activeRuns(): string[] {
    return [...this.active.keys()];
  }

  /** Stops following every run (they go on on their hosts: a client going away never stops a run). Idempotent. */
  override dispose(): void {
    if (this.isDisposed) return;
    super.dispose(); // the event sources: no subscriber hears anything after this
    for (const { controller, recorder } of this.active.values()) {
      controller.dispose();
      recorder.close(); // lets another client keep the history (its writer lock is released)
    }
    this.active.clear();
    this.opts.passphrases?.dispose();
    this.opts.cluster?.dispose();
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
