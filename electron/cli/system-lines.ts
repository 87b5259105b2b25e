// `cohort run|attach --system` (issue 22 item 12): one line per host every step window, what the
// machine did meanwhile (protocol/system.ts): CPU % of the whole host and of the run's ranks, the
// load average against the CPU count, network MB/s in and out, memory, and the GPUs' utilisation
// where ranks report one. The default output stays one window line; the record keeps them all.
import { hostGpuUtil, type HostSystem, type StepEvent } from '../../trainer/protocol';

const GiB = 1024 ** 3;

/** "cpu 95% (ranks 48%) · load 2.10/2 CPUs · net in 1.20 MB/s out 0.90 MB/s · mem 5.1/23.5 GiB" (and "· gpu 87%"). */
export function formatHostSystem(s: HostSystem, gpuUtil?: number): string {
  const perSec = (b: number) => (s.spanMs > 0 ? (b / 1e6 / (s.spanMs / 1000)).toFixed(2) : '?');
  const ranks = s.ranksCpuPercent === undefined ? '' : ` (ranks ${s.ranksCpuPercent.toFixed(0)}%)`;
  const gpu = gpuUtil === undefined ? '' : ` · gpu ${gpuUtil.toFixed(0)}%`;
  return `cpu ${s.cpuPercent.toFixed(0)}%${ranks} · load ${s.load1.toFixed(2)}/${s.cpus} CPUs · net in ${perSec(s.netRxBytes)} MB/s out ${perSec(s.netTxBytes)} MB/s · mem ${(s.memUsedBytes / GiB).toFixed(1)}/${(s.memTotalBytes / GiB).toFixed(1)} GiB${gpu}`;
}

export function systemLines(e: StepEvent): string[] {
  if (!e.system?.length) return ['  system: not measured for this window (the first window of a host, or COHORT_SYSTEM_METRICS=0 on the hosts)\n'];
  const gpu = hostGpuUtil(e.memory);
  const width = Math.max(...e.system.map((s) => s.host.length));
  return e.system.map((s) => `  system ${s.host.padEnd(width)}  ${formatHostSystem(s, gpu.get(s.host))}\n`);
}
