// Where the check's per-rank compute time comes from: a finished one-rank run of the same config on
// one of this profile's hosts in History (same hardware: the host's address), else a measurement
// (check-compute) once per distinct host type, remembered with the check under a key of the config
// and the host types so the next check of the same plan reuses it. Pure.
import type { TrainConfig } from '../../../trainer/protocol';
import type { HostCheckReport } from '../../../trainer/protocol/check';
import type { Profile, RunMeta } from '../../common';

/** The settings that change one rank's step time (not steps, seeds, learning rate...). */
const COMPUTE_FIELDS = ['engine', 'backend', 'batchSize', 'imageSize', 'stem', 'width', 'depth', 'classes', 'compile', 'compileMode', 'fp16', 'bf16', 'data', 'optimizer', 'freezeBn'] as const;

export function configKey(c: Partial<TrainConfig>): string {
  return COMPUTE_FIELDS.map((f) => `${f}=${String(c[f])}`).join(' ');
}

/** Hosts of one type run one rank equally fast: CPU, cores, GPUs, engine, backend and ranks per host (threads per rank). */
export function hostType(r: HostCheckReport, slots: number): string {
  const engine = 'error' in r.engine ? 'none' : `${r.engine.name}${r.engine.cuda ? '+cuda' : ''}`;
  return `${r.cpuModel}×${r.cores} ${r.gpus.map((g) => g.name).join('+') || 'no-gpu'} ${engine} ${r.tfjsBackend} slots=${slots}`;
}

export function computeKey(config: Partial<TrainConfig>, types: string[]): string {
  return `${configKey(config)} | ${[...types].sort().join(' | ')}`;
}

/** The newest ok one-rank run of this config on a host of this profile (by address; `local`, or a Slurm profile's partition: by profile name). */
export function fromHistory(runs: RunMeta[], profile: Pick<Profile, 'name' | 'hosts' | 'scheduler'>, config: Partial<TrainConfig>): { ms: number; source: string } | undefined {
  const want = configKey(config);
  const addresses = new Set(profile.hosts.map((h) => h.address));
  for (const r of runs) {
    if (r.status !== 'ok' || r.worldSize !== 1 || !r.medianGlobalSamplesPerSec || configKey(r.config) !== want) continue;
    const h = r.hosts[0];
    // The record's hosts carry names; their addresses are in the profile as it was at the start.
    const snap = r.profileSnapshot as { hosts?: { name?: unknown; address?: unknown }[] } | undefined;
    const address = h?.address ?? snap?.hosts?.find((x) => x.name === h?.name)?.address;
    const same = profile.name === 'local' || profile.scheduler ? r.profile === profile.name : typeof address === 'string' && addresses.has(address);
    if (!same) continue;
    return { ms: (r.config.batchSize * 1000) / r.medianGlobalSamplesPerSec, source: `History: run ${r.id} (one rank on ${h?.name ?? '?'}, median ${r.medianGlobalSamplesPerSec.toFixed(1)} samples/s)` };
  }
  return undefined;
}
