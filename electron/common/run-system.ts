// What a run's hosts did while it trained (issue 22 item 3), summarised for History and Compare from
// the per-window system figures on its `step` events (trainer/protocol/system.ts): per host, the
// median over windows of CPU %, the CPU % of everything that is not this run's ranks, load, network
// MB/s and GPU utilisation, and how many windows the machine was busy with other work. Kept in
// meta.json (`RunMeta.system`) by core's recorder; plain TypeScript.
import { hostGpuUtil, type StepEvent } from '../../trainer/protocol';

/** A window whose host spent more than this much CPU % on processes other than the run's ranks is "busy". */
export const BUSY_OTHERS_PCT = 25;

export interface HostSystemSummary {
  host: string;
  /** Windows with figures for this host. */
  windows: number;
  cpus: number;
  /** Medians over those windows. */
  cpuPercent: number;
  /** CPU % of the host this run's ranks got, and what everything else took (absent when the ranks' share
   *  was not measured). The ranks' share is what a hog beside the run takes away: on a machine whose
   *  neighbours come and go, the whole host's CPU % and load follow them as much as the hog. */
  ranksCpuPercent?: number;
  othersCpuPercent?: number;
  load1: number;
  netRxMBps: number;
  netTxMBps: number;
  gpuUtilPercent?: number;
  /** Windows where others used more than BUSY_OTHERS_PCT of the host's CPU. */
  busyWindows: number;
}

export interface RunSystemSummary {
  hosts: HostSystemSummary[];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Folds step windows' system figures into per-host columns; `summary()` gives the medians. */
export class SystemAccumulator {
  private readonly hosts = new Map<string, { cpus: number; cpu: number[]; ranks: number[]; others: number[]; load: number[]; rx: number[]; tx: number[]; gpu: number[]; busy: number }>();

  add(e: StepEvent): void {
    if (!e.system?.length) return;
    const gpu = hostGpuUtil(e.memory);
    for (const s of e.system) {
      // A series rebuilt from events.jsonl passes the record's objects unchecked: only whole figures count.
      if (typeof s?.host !== 'string' || ![s.cpuPercent, s.load1, s.spanMs, s.netRxBytes, s.netTxBytes, s.cpus].every(Number.isFinite)) continue;
      const h = this.hosts.get(s.host) ?? { cpus: s.cpus, cpu: [], ranks: [], others: [], load: [], rx: [], tx: [], gpu: [], busy: 0 };
      h.cpus = s.cpus;
      h.cpu.push(s.cpuPercent);
      h.load.push(s.load1);
      const secs = s.spanMs / 1000;
      h.rx.push(secs > 0 ? s.netRxBytes / 1e6 / secs : 0);
      h.tx.push(secs > 0 ? s.netTxBytes / 1e6 / secs : 0);
      if (s.ranksCpuPercent !== undefined) {
        const others = Math.max(0, s.cpuPercent - s.ranksCpuPercent);
        h.ranks.push(s.ranksCpuPercent);
        h.others.push(others);
        if (others > BUSY_OTHERS_PCT) h.busy++;
      }
      const g = gpu.get(s.host);
      if (g !== undefined) h.gpu.push(g);
      this.hosts.set(s.host, h);
    }
  }

  summary(): RunSystemSummary | undefined {
    if (!this.hosts.size) return undefined;
    return {
      hosts: [...this.hosts].map(([host, h]) => ({
        host,
        windows: h.cpu.length,
        cpus: h.cpus,
        cpuPercent: median(h.cpu),
        ...(h.others.length ? { ranksCpuPercent: median(h.ranks), othersCpuPercent: median(h.others) } : {}),
        load1: median(h.load),
        netRxMBps: median(h.rx),
        netTxMBps: median(h.tx),
        ...(h.gpu.length ? { gpuUtilPercent: median(h.gpu) } : {}),
        busyWindows: h.busy,
      })),
    };
  }
}

/** "h1: load 3.10/2 CPUs, CPU 100% (ranks 38%, others 62%)" per host, joined with "; ". */
export function describeSystem(s: RunSystemSummary | undefined): string {
  if (!s?.hosts.length) return 'no system metrics recorded';
  return s.hosts
    .map((h) => `${h.host}: load ${h.load1.toFixed(2)}/${h.cpus} CPUs, CPU ${h.cpuPercent.toFixed(0)}%${h.othersCpuPercent === undefined ? '' : ` (${h.ranksCpuPercent === undefined ? '' : `ranks ${h.ranksCpuPercent.toFixed(0)}%, `}others ${h.othersCpuPercent.toFixed(0)}%)`}${h.gpuUtilPercent === undefined ? '' : `, GPU ${h.gpuUtilPercent.toFixed(0)}%`}`)
    .join('; ');
}
