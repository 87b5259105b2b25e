// The Live view's system panel (issue 22 item 12): every host's CPU % (whole host and this run's
// ranks), load average and network MB/s per step window, from the `system` field rank 0's steps
// carry (trainer/protocol/system.ts). x = step; per host SYSTEM_KINDS columns; a host that first
// appears later starts a new buffer (hosts are fixed per run, so that is at most once per host).
import type { StepEvent } from '../../../trainer/protocol';
import { SeriesBuffer } from '../lib/series-buffer';

export const SYSTEM_KINDS = ['cpu', 'ranksCpu', 'load', 'rxMBps', 'txMBps'] as const;
export type SystemKind = (typeof SYSTEM_KINDS)[number];
const MAX_HOSTS = 16;

export const system = $state({ hosts: [] as string[], buffer: new SeriesBuffer(SYSTEM_KINDS.length), cpus: 1, version: 0 });

export const systemColumn = (host: number, k: SystemKind): number => SYSTEM_KINDS.length * host + SYSTEM_KINDS.indexOf(k);

export function resetSystem(): void {
  system.hosts = [];
  system.buffer = new SeriesBuffer(SYSTEM_KINDS.length);
  system.cpus = 1;
  system.version++;
}

export function recordSystem(e: StepEvent): void {
  if (!e.system?.length) return;
  const known = new Set(system.hosts);
  const fresh = e.system.map((s) => s.host).filter((h) => !known.has(h));
  if (fresh.length && system.hosts.length < MAX_HOSTS) {
    system.hosts = [...system.hosts, ...fresh].slice(0, MAX_HOSTS);
    system.buffer = new SeriesBuffer(SYSTEM_KINDS.length * system.hosts.length);
  }
  const ys = new Array<number>(SYSTEM_KINDS.length * system.hosts.length).fill(NaN);
  for (const s of e.system) {
    const h = system.hosts.indexOf(s.host);
    if (h < 0) continue;
    const secs = s.spanMs / 1000;
    const row: Record<SystemKind, number> = { cpu: s.cpuPercent, ranksCpu: s.ranksCpuPercent ?? NaN, load: s.load1, rxMBps: secs > 0 ? s.netRxBytes / 1e6 / secs : NaN, txMBps: secs > 0 ? s.netTxBytes / 1e6 / secs : NaN };
    for (const k of SYSTEM_KINDS) ys[systemColumn(h, k)] = row[k];
    system.cpus = Math.max(system.cpus, s.cpus);
  }
  system.buffer.push(e.step, ...ys);
  system.version++;
}
