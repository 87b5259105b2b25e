// System metrics per window (issue 22 items 3 and 12): what each host of a run did while a step
// window ran — CPU, load, network, memory — so a slow run can be told from a slow machine. Sampled
// by each host's agent (not the ranks: one implementation for both engines, and no work on the
// training processes); the leader's agent puts every host's figures on rank 0's `step` event
// (`StepEvent.system`). GPU utilisation is not repeated here: each rank's `memory[].gpuUtilPercent`
// already carries it (nvidia-smi, read by the rank's own sampler), and `hostGpuUtil` groups it per host.
// Plain TypeScript: the counters' arithmetic and the field's decoder; reading /proc is trainer/util/host-counters.ts.
import { num, obj, optNum, str } from './validate';
import type { RankMemory } from './event-types';

/** One host's figures over one window (between two of its agent's samples). */
export interface HostSystem {
  host: string;
  /** The span the figures cover (ms between the two samples; ≈ the window, to the agent's 1-s beat on followers). */
  spanMs: number;
  /** The whole host's CPU busy time over the span, percent of all its CPUs (0-100). */
  cpuPercent: number;
  /** This run's ranks on the host, percent of all its CPUs (0-100): cpuPercent minus this is everything else. */
  ranksCpuPercent?: number;
  /** The 1-minute load average at the window's end (/proc/loadavg), and the host's CPU count to read it against. */
  load1: number;
  cpus: number;
  /** Bytes received / sent over the span on every interface but loopback (/proc/net/dev of the agent's network namespace). */
  netRxBytes: number;
  netTxBytes: number;
  /** The host's memory in use (MemTotal − MemAvailable) and its total. */
  memUsedBytes: number;
  memTotalBytes: number;
}

/** Cumulative counters as an agent reads them; two of them make a HostSystem. */
export interface HostCounters {
  host: string;
  /** Epoch ms of the read. */
  at: number;
  /** /proc/stat's first line: busy (all but idle and iowait) and total jiffies over every CPU. */
  cpuBusy: number;
  cpuTotal: number;
  cpus: number;
  /** utime + stime of this run's ranks on the host (same jiffies); absent when none run. */
  ranksCpu?: number;
  load1: number;
  netRx: number;
  netTx: number;
  memTotal: number;
  memAvailable: number;
}

const pct = (part: number, whole: number): number => (whole > 0 ? Math.min(100, Math.max(0, (part / whole) * 100)) : 0);

/** The figures between two reads of one host; undefined when they do not make a span (same read, clock back, counters reset). */
export function systemBetween(prev: HostCounters, cur: HostCounters): HostSystem | undefined {
  const dt = cur.at - prev.at;
  const dTotal = cur.cpuTotal - prev.cpuTotal;
  if (dt <= 0 || dTotal <= 0 || cur.cpuBusy < prev.cpuBusy) return undefined;
  const dRanks = cur.ranksCpu !== undefined && prev.ranksCpu !== undefined && cur.ranksCpu >= prev.ranksCpu ? cur.ranksCpu - prev.ranksCpu : undefined;
  return {
    host: cur.host,
    spanMs: dt,
    cpuPercent: pct(cur.cpuBusy - prev.cpuBusy, dTotal),
    ...(dRanks === undefined ? {} : { ranksCpuPercent: pct(dRanks, dTotal) }),
    load1: cur.load1,
    cpus: cur.cpus,
    netRxBytes: Math.max(0, cur.netRx - prev.netRx),
    netTxBytes: Math.max(0, cur.netTx - prev.netTx),
    memUsedBytes: Math.max(0, cur.memTotal - cur.memAvailable),
    memTotalBytes: cur.memTotal,
  };
}

export function decodeHostSystem(v: unknown, path: string): HostSystem {
  const o = obj(v, path);
  const ranks = optNum(o, 'ranksCpuPercent', path, { min: 0, max: 100 });
  return {
    host: str(o, 'host', path),
    spanMs: num(o, 'spanMs', path, { min: 0 }),
    cpuPercent: num(o, 'cpuPercent', path, { min: 0, max: 100 }),
    ...(ranks === undefined ? {} : { ranksCpuPercent: ranks }),
    load1: num(o, 'load1', path, { min: 0 }),
    cpus: num(o, 'cpus', path, { int: true, min: 1 }),
    netRxBytes: num(o, 'netRxBytes', path, { min: 0 }),
    netTxBytes: num(o, 'netTxBytes', path, { min: 0 }),
    memUsedBytes: num(o, 'memUsedBytes', path, { min: 0 }),
    memTotalBytes: num(o, 'memTotalBytes', path, { min: 0 }),
  };
}

/** Counters as they cross the control channel (follower → leader, on its beat); undefined when malformed. */
export function decodeHostCounters(v: unknown): HostCounters | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const keys = ['at', 'cpuBusy', 'cpuTotal', 'cpus', 'load1', 'netRx', 'netTx', 'memTotal', 'memAvailable'] as const;
  if (typeof o.host !== 'string' || !keys.every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) >= 0)) return undefined;
  if (o.ranksCpu !== undefined && !(typeof o.ranksCpu === 'number' && Number.isFinite(o.ranksCpu))) return undefined;
  return o as unknown as HostCounters;
}

/** Each host's mean GPU utilisation over its ranks' GPUs from a step's memory (absent where no rank reported one). */
export function hostGpuUtil(memory: readonly RankMemory[]): Map<string, number> {
  const acc = new Map<string, { sum: number; n: number; seen: Set<string> }>();
  for (const m of memory) {
    if (m.gpuUtilPercent === undefined) continue;
    const a = acc.get(m.host) ?? { sum: 0, n: 0, seen: new Set<string>() };
    const key = m.gpuUuid ?? `rank${m.rank}`;
    if (a.seen.has(key)) continue; // two ranks on one GPU count it once
    a.seen.add(key);
    a.sum += m.gpuUtilPercent;
    a.n++;
    acc.set(m.host, a);
  }
  return new Map([...acc].map(([h, a]) => [h, a.sum / a.n]));
}
