// What core can do with a cluster profile's hosts over SSH. One implementation (ssh-cluster.ts,
// over core/ssh); the CLI, `cohort serve` and Electron all reach hosts only through it.
import type { Disposable, RunSettings, TrainConfig } from '../../../trainer/protocol';
import type { ApiErrorInfo, ConnectionResult, DeployProgress, DeployResult, HostKeyInfo, HostProbe, HostRecordRef, Profile } from '../../common';
import type { RunPlan } from '../runs/run-controller';
import type { HostLink } from '../runs/host-link';

/** What planRun needs to build every host's launch spec once (buildLaunchSpec), the run's settings included. */
export interface PlanRunRequest extends RunSettings {
  runId: string;
  config: TrainConfig;
  acceptNewHostKeys?: boolean;
  onProgress?: (p: DeployProgress) => void;
  signal?: AbortSignal;
  /** A Slurm profile: nodes to leave out (sbatch --exclude, with the profile's own; `cohort run --check`, check-spares.ts). */
  exclude?: string[];
}

/** One host's answer to the leftover check; `error` when the host could not be checked. */
export interface LeftoverReport {
  host: string;
  processes: string[];
  error?: ApiErrorInfo;
}

export interface ClusterOps extends Disposable {
  testConnection(profile: Profile, host: string, opts?: { signal?: AbortSignal }): Promise<ConnectionResult>;
  trustHostKey(key: HostKeyInfo): Promise<void>;
  probe(profile: Profile, opts?: { signal?: AbortSignal }): Promise<HostProbe[]>;
  deploy(profile: Profile, opts?: { onProgress?: (p: DeployProgress) => void; signal?: AbortSignal; acceptNewHostKeys?: boolean; force?: boolean }): Promise<DeployResult[]>;
  /** Deploys (cached when unchanged) and returns a plan whose hosts open agents over SSH. */
  planRun(profile: Profile, req: PlanRunRequest): Promise<RunPlan>;
  /** The plan of a run started elsewhere (attach, stop), from the record locations in its history. */
  /** spareRecord: where the profile's spare hosts would keep it (RunMeta.spareRecord): the plan can start one. */
  attachPlan(profile: Profile, runId: string, record: HostRecordRef[], spareRecord?: HostRecordRef[]): RunPlan;
  /** Host commands of the bundle deployed at `remoteDir` on `host` (cohort check). */
  bundleLink(profile: Profile, host: string, remoteDir: string): HostLink;
  /** After a run ended: processes of this run still alive on each host (should be none); each host checked on its own, within timeoutMs. */
  leftovers(profile: Profile, runId: string, opts?: { timeoutMs?: number }): Promise<LeftoverReport[]>;
}
