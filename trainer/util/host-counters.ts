// Reads a host's cumulative counters for the system metrics (protocol/system.ts): /proc/stat,
// /proc/loadavg, /proc/net/dev (the reader's network namespace: a namespaced test host sees its own
// veth), /proc/meminfo and /proc/<pid>/stat of this run's ranks. Five small reads, synchronous
// (about 0.1 ms here); off Linux, or when a file cannot be read, undefined (no figures, no error).
import { readFileSync } from 'node:fs';
import type { HostCounters } from '../protocol';

/** /proc/stat's aggregate `cpu` line: busy (all but idle and iowait) and total jiffies, and the per-CPU line count. */
export function parseProcStat(text: string): { busy: number; total: number; cpus: number } | undefined {
  const lines = text.split('\n');
  const f = lines[0]?.trim().split(/\s+/);
  if (!f || f[0] !== 'cpu') return undefined;
  // user nice system idle iowait irq softirq steal guest guest_nice: guest time is already in user/nice.
  const v = f.slice(1, 9).map(Number);
  if (v.length < 4 || v.some((x) => !Number.isFinite(x))) return undefined;
  const total = v.reduce((a, b) => a + b, 0);
  const idle = v[3]! + (v[4] ?? 0);
  const cpus = lines.filter((l) => /^cpu\d+\s/.test(l)).length;
  return { busy: total - idle, total, cpus: Math.max(1, cpus) };
}

/** Received and sent bytes summed over every interface but loopback. */
export function parseNetDev(text: string): { rx: number; tx: number } {
  let rx = 0;
  let tx = 0;
  for (const line of text.split('\n')) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m || m[1] === 'lo') continue;
    const f = m[2]!.trim().split(/\s+/).map(Number);
    if (f.length < 9) continue;
    rx += f[0] || 0;
    tx += f[8] || 0;
  }
  return { rx, tx };
}

export function parseMeminfo(text: string): { total: number; available: number } | undefined {
  const kb = (k: string) => {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable') ?? kb('MemFree');
  return total === undefined || available === undefined ? undefined : { total, available };
}

/** utime + stime (jiffies) from /proc/<pid>/stat; the command name may hold spaces and parentheses. */
export function parsePidStat(text: string): number | undefined {
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the name: state is field 3, utime 14, stime 15 (1-based in proc(5)) → indexes 11 and 12 here.
  const u = Number(f[11]);
  const s = Number(f[12]);
  return Number.isFinite(u) && Number.isFinite(s) ? u + s : undefined;
}

const read = (p: string): string | undefined => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
};

/** This host's counters now; `rankPids`: the run's ranks here (a pid that is gone counts nothing). */
export function readHostCounters(host: string, rankPids: readonly number[] = [], proc = '/proc'): HostCounters | undefined {
  const stat = parseProcStat(read(`${proc}/stat`) ?? '');
  const mem = parseMeminfo(read(`${proc}/meminfo`) ?? '');
  const load1 = Number((read(`${proc}/loadavg`) ?? '').split(' ')[0]);
  if (!stat || !mem || !Number.isFinite(load1)) return undefined;
  const net = parseNetDev(read(`${proc}/net/dev`) ?? '');
  let ranksCpu: number | undefined;
  for (const pid of rankPids) {
    const t = parsePidStat(read(`${proc}/${pid}/stat`) ?? '');
    if (t !== undefined) ranksCpu = (ranksCpu ?? 0) + t;
  }
  return { host, at: Date.now(), cpuBusy: stat.busy, cpuTotal: stat.total, cpus: stat.cpus, load1, netRx: net.rx, netTx: net.tx, memTotal: mem.total, memAvailable: mem.available, ...(ranksCpu === undefined ? {} : { ranksCpu }) };
}
