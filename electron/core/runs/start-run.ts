// Starting and attaching to runs, the same way for every client (CLI, `cohort serve`, Electron):
// resolve the profile's config, plan local or cluster hosts, keep the local history (a cache of
// the hosts' record) in step with what the controller sees, and hand each recorded event, with its
// seq, to the run's subscribers (RunEvents).
import { CohortError, initialRunView, isFinished, makeEvent, reduceRunView, runSettings, runSwitches, runViewStatus, worldLayout, type ErrorInfo, type KeyedEmitter, type TrainConfig } from '../../../trainer/protocol';
import { isLocalProfile, profileWorldSize, resolveRunConfig, runErrorOf, spreadOf, worldHosts, type DeployProgress, type Profile, type RunEventMessage, type RunMeta } from '../../common';
import { join } from 'node:path';
import { CheckStore, checkForRun } from '../check/check-store';
import { checkErrorsOn, withSpares, type SpareMove } from '../../common/check-spares';
import type { ClusterOps } from '../cluster/cluster-ops';
import { applyEvent } from './applied-config';
import { attachLocalPlan, localWorkdir, planLocalRun } from './local-run';
import { RunController, type RunPlan } from './run-controller';
import { spareTookPlace } from './run-spare';
import { newRunId, type RunRecorder, type RunStore } from './run-store';

export interface StartedRun {
  runId: string;
  controller: RunController;
  recorder: RunRecorder;
}

/**
 * Where a run's events go once they are in the record: the Api's per-run stream (the service's
 * `onRunEvent` listeners), each as the RunEventMessage clients receive, with its seq in the record
 * (what re-attach counts on). Fired here, where the seq is known, not relayed by the service.
 */
export type RunEvents = Pick<KeyedEmitter<string, RunEventMessage>, 'fire'>;

export async function startRun(o: {
  profile: Profile;
  overrides: Partial<TrainConfig>;
  ranks?: number;
  store: RunStore;
  dataDir: string;
  cluster?: ClusterOps;
  acceptNewHostKeys?: boolean;
  onDeployProgress?: (p: DeployProgress) => void;
  runId?: string;
  /** Restarts from the last checkpoint after a rank or host failure (default 0). */
  maxRestarts?: number;
  /** Busy slots: wait (default) or fail at once with slots-busy. */
  queue?: boolean;
  /** Follower hosts left out, a spare host each in their place; on a Slurm profile, nodes left out with sbatch --exclude (check-spares.ts; `cohort run --check`): the history says `replaces` and `excluded`, with why. */
  exclude?: string[];
  /** Refused before any host runs it (StartRunRequest.refused): recorded as a failed launch with this error, then thrown. */
  refused?: ErrorInfo;
  events: RunEvents;
}): Promise<StartedRun> {
  const runId = o.runId ?? newRunId();
  const slurmExclude = o.profile.scheduler ? (o.exclude ?? []) : [];
  const { profile, moves } = o.exclude?.length && !o.profile.scheduler ? withSpares(o.profile, o.exclude) : { profile: o.profile, moves: slurmExclude.map((excluded): SpareMove => ({ excluded })) };
  o = { ...o, profile };
  const config = resolveRunConfig(o.profile, o.overrides); // bad input: refused, not a run
  const startedAt = new Date().toISOString();
  // A launch's connect/deploy progress names the run it prepares (the client has no run id until startRun resolves).
  const onProgress = o.onDeployProgress && ((p: DeployProgress) => o.onDeployProgress!({ ...p, launch: { runId, profile: o.profile.name } }));
  // The run's lifetime settings travel in every host's LaunchSpec, local and cluster alike: built in (buildLaunchSpec), never patched after.
  const settings = runSettings(o);
  let plan: RunPlan;
  try {
    if (o.refused) throw Object.assign(CohortError.fromInfo(o.refused), o.refused.host ? { host: o.refused.host } : {});
    if (isLocalProfile(o.profile)) {
      plan = await planLocalRun({ runId, ranks: o.ranks ?? 1, config, workdir: localWorkdir(o.dataDir), settings });
    } else {
      if (!o.cluster) throw new Error('cluster runs need the SSH layer (ClusterOps), which this client did not provide');
      plan = await o.cluster.planRun(o.profile, { runId, config, ...(o.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}), ...(onProgress ? { onProgress } : {}), ...(slurmExclude.length ? { exclude: slurmExclude } : {}), ...settings });
    }
  } catch (err) {
    recordFailedLaunch(o.store, { runId, profile: o.profile, config, startedAt, ranks: o.ranks }, err);
    // The failed launch is in the history under this id: the caller can name it (cohort run --json's first event).
    if (err !== null && typeof err === 'object' && !('runId' in err)) Object.defineProperty(err, 'runId', { value: runId, enumerable: false });
    throw err;
  }
  const worldSize = plan.scheduler ? profileWorldSize(o.profile) : (plan.hosts[0]?.spec?.worldSize ?? 0);
  // The profile's last check (`cohort run --check` has just stored its own) when it planned this run.
  const lastCheck = new CheckStore(join(o.dataDir, 'checks')).last(o.profile.name);
  const check = checkForRun(lastCheck, config, worldSize);
  // What was left out before the first step, and why (issue 21 item 5): the check's errors on it.
  const excluded = moves.map((m) => ({ host: m.excluded, reason: checkErrorsOn(lastCheck?.problems ?? [], m.excluded) ?? "asked for (the profile's last check found no error on it)", ...(m.replacement ? { replacement: m.replacement } : {}) }));
  const meta: RunMeta = {
    id: runId,
    profile: o.profile.name,
    startedAt,
    status: 'starting',
    config,
    hosts: plan.hosts.map((h) => {
      const replaces = moves.find((m) => m.replacement === h.host)?.excluded;
      return { name: h.host, ranks: h.spec?.ranks.map((r) => r.rank) ?? [], ...(replaces ? { replaces } : {}) };
    }),
    worldSize,
    ...(check ? { check } : {}),
    ...(excluded.length ? { excluded } : {}),
    versions: { node: process.versions.node },
    controllerPid: process.pid,
    profileSnapshot: o.profile,
    ...(plan.record ? { record: plan.record } : {}),
    ...(plan.spares?.length ? { spareRecord: plan.spares.map((s) => s.record) } : {}),
    // What ran, filled from the run's events (track); switches as the hosts' profile env gives them
    // (a local run's agent also inherits this process's environment).
    applied: { envSwitches: runSwitches(Object.assign({}, isLocalProfile(o.profile) ? process.env : {}, ...plan.hosts.map((h) => h.spec?.env ?? {}))) },
  };
  const recorder = o.store.create(meta);
  for (const x of excluded) {
    const event = makeEvent({ type: 'log', level: 'warn', message: `${x.host} is left out of this run (${x.replacement ? `the spare host ${x.replacement} takes its ranks` : 'sbatch --exclude: Slurm places the run on other nodes of the partition'}): ${x.reason}` });
    o.events.fire(runId, { runId, seq: recorder.record(event), event });
  }
  return track(new RunController(plan), recorder, meta, o.events);
}

/**
 * Follows a run started elsewhere (another CLI, a dashboard that went away) from the beginning of
 * its hosts' record; the local history's events are rewritten from that record as it streams.
 */
export function attachRun(o: { meta: RunMeta; store: RunStore; dataDir: string; cluster?: ClusterOps; profile?: Profile; events: RunEvents }): StartedRun {
  const { meta } = o;
  let plan: RunPlan;
  if (meta.profile === 'local') plan = attachLocalPlan(meta.id, meta.record?.[0]?.workdir ?? localWorkdir(o.dataDir));
  else {
    if (!o.cluster || !o.profile) throw new CohortError('cluster-unavailable', `run ${meta.id} is on profile ${meta.profile}: attaching needs the SSH layer and that profile`);
    if (!meta.record?.length) throw new CohortError('run-not-durable', `run ${meta.id} was recorded by an older Cohort without its hosts' record locations; it cannot be attached to`, { hint: 'its hosts still hold its logs under their workdir' });
    plan = o.cluster.attachPlan(o.profile, meta.id, meta.record, meta.spareRecord);
    plan.hostRanks = Object.fromEntries(meta.hosts.map((h) => [h.name, h.ranks])); // a spare's spec takes the excluded host's ranks
  }
  const recorder = o.store.reopen(meta);
  const started = track(new RunController(plan), recorder, meta, o.events);
  started.controller.attach();
  return started;
}

function track(controller: RunController, recorder: RunRecorder, meta: RunMeta, events: RunEvents): StartedRun {
  const runId = controller.runId;
  let applied = meta.applied ?? {};
  // Where the run stands, from the one run view (trainer/protocol/run-view.ts) over its events: the
  // history's status while it goes (running, restarting), its steps and restarts (issue 24 item 2).
  let view = initialRunView();
  let told = meta.status;
  // A scheduled run waits in the scheduler's queue first: `queued`, then `starting` when its job runs.
  let requeued = false;
  controller.onQueue((q) => {
    // A requeued Slurm job: `restarting` until its next run starts (cohort attach prints Slurm's reason).
    if (q?.restarting) {
      requeued = true;
      return recorder.update({ status: (told = 'restarting') });
    }
    if (!q && requeued) {
      requeued = false;
      return recorder.update({ status: (told = 'running') });
    }
    if (view.phase === 'starting' || view.phase === 'queued') recorder.update({ status: (told = q ? 'queued' : 'starting') });
  });
  let placed: Pick<RunMeta, 'record' | 'hosts' | 'spareRecord'> = meta;
  controller.onEvent((e) => {
    const seq = recorder.record(e);
    const took = e.type === 'restart' ? spareTookPlace(placed, e) : undefined;
    if (took) {
      recorder.update(took); // a spare in the excluded host's place (issue 21 item 5)
      placed = { ...placed, ...took };
    }
    const next = applyEvent(applied, meta.config, e);
    if (next !== applied) recorder.update({ applied: (applied = next) });
    view = reduceRunView(view, e);
    const status = runViewStatus(view);
    // (the end is the controller's result below: it also knows `lost`, which no event says)
    // (a replay of a run the history already calls ended, listRuns' replayEnded, never writes it back to
    // running: cut short, it would leave an ended run `restarting`)
    if ((status === 'running' || status === 'restarting') && status !== told && !isFinished(told)) recorder.update({ status: (told = status) });
    events.fire(runId, { runId, seq, event: e });
  });
  // A record that cannot be written (disk full) is said once to the clients, as a warning outside
  // the record (seq -1: not an index in events.jsonl, so attachers' seq filters leave it out).
  recorder.onWriteProblem((message) => {
    events.fire(runId, { runId, seq: -1, event: makeEvent({ type: 'log', level: 'warn', message }) });
  });
  void controller.result.then((result) => {
    const throughput = recorder.measured();
    const system = recorder.measuredSystem();
    recorder.update({
      status: result.status,
      endedAt: new Date().toISOString(),
      // What it measured, only from a record at least as whole as the history's (an attach that
      // reached no host replays nothing: the history's figures stay, issue 24 defect 1).
      ...(recorder.holdsHistory
        ? {
            // The trainer's figure when it finished; a cancelled or failed run keeps the median of the windows it measured.
            medianGlobalSamplesPerSec: result.done?.medianGlobalSamplesPerSec ?? throughput.median,
            throughput,
            ...(system ? { system } : {}),
            steps: view.step || result.lastStep,
            restarts: view.restarts,
          }
        : {}),
      ...(result.status === 'lost' ? { lastSeenAt: new Date().toISOString() } : {}),
      // An earlier follow's error (a host unreachable then) is replaced by this one's, or cleared.
      error: result.error ? runErrorOf(result.error) : undefined,
      errorCode: result.error?.code, // (deprecated mirror of error.code, RunMeta)
      stopOwed: result.stopOwed, // (absent: every host confirmed; an earlier stop's list is cleared)
    });
    recorder.close();
  });
  return { runId, controller, recorder };
}

/**
 * A launch that failed before any host ran it (a host refused the connection or the key, a deploy
 * failed) is history too: a `failed` record with the error's code and hint, the profile's hosts and
 * the configuration asked for, so it can be found, compared and run again.
 */
function recordFailedLaunch(store: RunStore, o: { runId: string; profile: Profile; config: TrainConfig; startedAt: string; ranks: number | undefined }, err: unknown): void {
  const e = err as { message?: unknown; code?: unknown; hint?: unknown; host?: unknown };
  const host = typeof e.host === 'string' ? e.host : undefined;
  // "launch failed on h1: …", not "launch failed on h1: h1: …" (core's messages start with their host).
  const full = String(e.message ?? err);
  const message = host && full.startsWith(`${host}: `) ? full.slice(host.length + 2) : full;
  const local = isLocalProfile(o.profile);
  const world = worldHosts(o.profile); // spare hosts run no ranks
  const layout = worldLayout(local ? [{ name: 'local', slots: o.ranks ?? 1 }] : world);
  const hosts = layout.hosts.map((h, i) => ({ name: h.host, ...(local ? {} : { address: world[i]!.address }), ranks: h.ranks.map((r) => r.rank) }));
  try {
    const rec = store.create({
      id: o.runId,
      profile: o.profile.name,
      startedAt: o.startedAt,
      endedAt: new Date().toISOString(),
      status: 'failed',
      config: o.config,
      hosts,
      worldSize: layout.worldSize,
      versions: { node: process.versions.node },
      profileSnapshot: o.profile,
      steps: 0,
      medianGlobalSamplesPerSec: null,
      throughput: spreadOf([]),
      error: { ...(typeof e.code === 'string' ? { code: e.code } : {}), message: `launch failed${host ? ` on ${host}` : ''}: ${message}`, ...(typeof e.hint === 'string' && e.hint ? { hint: e.hint } : {}), ...(host ? { host } : {}) },
      ...(typeof e.code === 'string' ? { errorCode: e.code } : {}),
    });
    rec.close();
  } catch {
    // the history is a record, never a reason to hide the launch's own error
  }
}
