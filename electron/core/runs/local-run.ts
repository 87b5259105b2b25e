// The built-in `local` cluster: N ranks on this machine, no SSH. Its one host is this machine
// with workdir `<dataDir>/local`; the host commands run as child processes exactly as they would
// run over SSH, so a local run outlives the CLI or `cohort serve` that started it too.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildLaunchSpec, runSettings, worldLayout, type RunSettings, type TrainConfig } from '../../../trainer/protocol';
import { locateTrainerBundle } from '../trainer-bundle';
import { freePort } from './free-port';
import { localHostLink, type HostLink } from './host-link';
import type { RunPlan } from './run-controller';

export interface LocalRunOptions {
  runId: string;
  ranks: number;
  config: TrainConfig;
  /** Working directory of the local host (run records, checkpoints). */
  workdir: string;
  env?: Record<string, string>;
  masterPort?: number;
  /** The run's lifetime settings, into its spec (buildLaunchSpec). */
  settings?: RunSettings;
}

export const LOCAL_HOST = 'local';

export function localLink(workdir: string): HostLink {
  mkdirSync(workdir, { recursive: true, mode: 0o700 });
  return localHostLink({ host: LOCAL_HOST, nodePath: process.execPath, trainerEntry: locateTrainerBundle().entry, workdir });
}

export async function planLocalRun(o: LocalRunOptions): Promise<RunPlan> {
  const masterPort = o.masterPort ?? (await freePort());
  return {
    runId: o.runId,
    record: [{ host: LOCAL_HOST, workdir: o.workdir, entry: locateTrainerBundle().entry }],
    hosts: [
      {
        host: LOCAL_HOST,
        link: localLink(o.workdir),
        spec: buildLaunchSpec({ runId: o.runId, layout: worldLayout([{ name: LOCAL_HOST, slots: o.ranks }]), index: 0, masterAddr: '127.0.0.1', masterPort, config: o.config, env: o.env ?? {}, ...runSettings(o.settings ?? {}) }),
      },
    ],
  };
}

/** The plan of a local run started elsewhere (to attach to it or stop it). */
export function attachLocalPlan(runId: string, workdir: string): RunPlan {
  return { runId, hosts: [{ host: LOCAL_HOST, link: localLink(workdir) }] };
}

export function localWorkdir(dataDir: string): string {
  return join(dataDir, 'local');
}
