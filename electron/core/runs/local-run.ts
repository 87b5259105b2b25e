// The built-in `local` cluster: N ranks on this machine, no SSH. The agent runs as a child
// process exactly as it would run on a remote host.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainConfig } from '../../../trainer/protocol';
import { locateTrainerBundle } from '../trainer-bundle';
import { spawnLocalAgent } from './agent-channel';
import { freePort } from './free-port';
import type { RunPlan } from './run-controller';

export interface LocalRunOptions {
  runId: string;
  ranks: number;
  config: TrainConfig;
  /** Working directory of the local agent (run folders, checkpoints). */
  workdir: string;
  env?: Record<string, string>;
  masterPort?: number;
}

export async function planLocalRun(o: LocalRunOptions): Promise<RunPlan> {
  const bundle = locateTrainerBundle();
  mkdirSync(o.workdir, { recursive: true });
  const masterPort = o.masterPort ?? (await freePort());
  return {
    runId: o.runId,
    worldSize: o.ranks,
    masterAddr: '127.0.0.1',
    masterPort,
    config: o.config,
    hosts: [
      {
        host: 'local',
        ranks: Array.from({ length: o.ranks }, (_, i) => ({ rank: i, localRank: i })),
        env: o.env ?? {},
        open: async () => spawnLocalAgent({ host: 'local', nodePath: process.execPath, trainerEntry: bundle.entry, workdir: o.workdir, runId: o.runId }),
      },
    ],
    // Locally the agent also sees EOF the moment we die; heartbeats cover hung parents.
    heartbeatTimeoutMs: 30_000,
  };
}


export function localWorkdir(dataDir: string): string {
  return join(dataDir, 'local');
}
