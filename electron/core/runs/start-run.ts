// Starting a run, the same way for every client (CLI, `cohort serve`, Electron): resolve the
// profile's config, plan local or cluster hosts, record history, and hand back the controller.
import type { TrainConfig } from '../../../trainer/protocol';
import { isLocalProfile, resolveRunConfig, type DeployProgress, type Profile, type RunMeta } from '../../common';
import type { ClusterOps } from '../cluster/cluster-ops';
import { localWorkdir, planLocalRun } from './local-run';
import { RunController } from './run-controller';
import { newRunId, type RunRecorder, type RunStore } from './run-store';

export interface StartedRun {
  runId: string;
  controller: RunController;
  recorder: RunRecorder;
}

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
}): Promise<StartedRun> {
  const runId = o.runId ?? newRunId();
  const config = resolveRunConfig(o.profile, o.overrides);
  let plan;
  if (isLocalProfile(o.profile)) {
    plan = await planLocalRun({ runId, ranks: o.ranks ?? 1, config, workdir: localWorkdir(o.dataDir) });
  } else {
    if (!o.cluster) throw new Error('cluster runs need the SSH layer (ClusterOps), which this client did not provide');
    plan = await o.cluster.planRun(o.profile, { runId, config, ...(o.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}), ...(o.onDeployProgress ? { onProgress: o.onDeployProgress } : {}) });
  }
  const meta: RunMeta = {
    id: runId,
    profile: o.profile.name,
    startedAt: new Date().toISOString(),
    status: 'running',
    config,
    hosts: plan.hosts.map((h) => ({ name: h.host, ranks: h.ranks.map((r) => r.rank) })),
    worldSize: plan.worldSize,
    versions: { node: process.versions.node },
    controllerPid: process.pid,
    profileSnapshot: o.profile,
  };
  const recorder = o.store.create(meta);
  const controller = new RunController(plan);
  controller.onEvent((e) => recorder.record(e));
  void controller.result.then((result) => {
    recorder.update({
      status: result.status,
      endedAt: new Date().toISOString(),
      medianGlobalSamplesPerSec: result.done?.medianGlobalSamplesPerSec ?? null,
      steps: result.lastStep,
      ...(result.error ? { error: `${result.error.rank >= 0 ? `rank ${result.error.rank} on ` : ''}${result.error.host}: ${result.error.message}` } : {}),
    });
    recorder.close();
  });
  return { runId, controller, recorder };
}
