// GPU health from nvidia-smi's query interface, for `cohort check`: ECC, retired / remapped rows,
// clock-throttle reasons, persistence mode and memory held by processes that are not Cohort's.
// Every optional field is asked in its own query (`index,FIELD`): a driver that does not know one
// field fails the whole query, and older drivers know fewer. Parsing is pure (tested with CSV in
// nvidia-smi's documented format: no GPU exists where this was written); `readGpuHealth` takes
// the runner so the host command passes queryNvidiaSmi.
import type { GpuHealth } from '../protocol/check';

export const HEALTH_BASE_QUERY = 'index,uuid,name,memory.total,memory.used,driver_version';
/** Optional fields, each asked with `index,` in front. */
export const HEALTH_FIELDS = ['compute_cap', 'ecc.errors.uncorrected.volatile.total', 'retired_pages.pending', 'remapped_rows.pending', 'remapped_rows.failure', 'clocks_throttle_reasons.active', 'clocks_event_reasons.active', 'persistence_mode'] as const;
export const HEALTH_APPS_QUERY = 'pid,used_memory,gpu_uuid,process_name';

/** clocks_throttle_reasons.active bits (nvml's nvmlClocksThrottleReason*); GpuIdle (0x1) is not a problem and is left out. */
export const THROTTLE_BITS: readonly [number, string][] = [
  [0x2, 'applications clocks setting'],
  [0x4, 'software power cap'],
  [0x8, 'hardware slowdown'],
  [0x10, 'sync boost'],
  [0x20, 'software thermal slowdown'],
  [0x40, 'hardware thermal slowdown'],
  [0x80, 'hardware power brake slowdown'],
  [0x100, 'display clock setting'],
];

const MIB = 2 ** 20;

export function decodeThrottle(hex: string): string[] {
  const v = /^0x[0-9a-f]+$/i.test(hex.trim()) ? parseInt(hex.trim().slice(2), 16) : NaN;
  if (!Number.isFinite(v)) return [];
  return THROTTLE_BITS.filter(([bit]) => (v & bit) !== 0).map(([, name]) => name);
}

/** Rows of `--query-gpu=${HEALTH_BASE_QUERY} --format=csv,noheader,nounits`. */
export function parseHealthBase(csv: string): GpuHealth[] {
  const out: GpuHealth[] = [];
  for (const line of csv.split('\n')) {
    const f = line.split(',').map((s) => s.trim());
    if (f.length < 6 || !/^\d+$/.test(f[0]!)) continue;
    out.push({ index: Number(f[0]), uuid: f[1]!, name: f[2]!, memoryTotalBytes: num(f[3]) * MIB, memoryUsedBytes: num(f[4]) * MIB, driver: f[5]!, throttleReasons: [], foreign: [] });
  }
  return out;
}

/** Merges one optional field's `index,value` rows into the GPUs ([N/A] and unknown values are left out). */
export function mergeHealthField(gpus: GpuHealth[], field: (typeof HEALTH_FIELDS)[number], csv: string | undefined): void {
  for (const line of (csv ?? '').split('\n')) {
    const comma = line.indexOf(',');
    if (comma < 0) continue;
    const g = gpus.find((x) => x.index === Number(line.slice(0, comma).trim()));
    const v = line.slice(comma + 1).trim();
    if (!g || !v || /^\[?N\/A\]?$/i.test(v) || /not supported/i.test(v)) continue;
    switch (field) {
      case 'compute_cap':
        if (/^\d+\.\d+$/.test(v)) g.computeCap = v;
        break;
      case 'ecc.errors.uncorrected.volatile.total':
        if (/^\d+$/.test(v)) g.eccUncorrectedVolatile = Number(v);
        break;
      case 'retired_pages.pending':
        g.retiredPagesPending = /^yes$/i.test(v);
        break;
      case 'remapped_rows.pending':
        g.remappedRowsPending = /^(yes|1)$/i.test(v);
        break;
      case 'remapped_rows.failure':
        g.remappedRowsFailure = /^(yes|1)$/i.test(v);
        break;
      // The same mask under its newer name (drivers R535+ call throttling "clock events"); either answers.
      case 'clocks_throttle_reasons.active':
      case 'clocks_event_reasons.active':
        if (/^0x/i.test(v)) g.throttleReasons = decodeThrottle(v);
        break;
      case 'persistence_mode':
        if (v === 'Enabled' || v === 'Disabled') g.persistenceMode = v;
        break;
    }
  }
}

/** `--query-compute-apps=${HEALTH_APPS_QUERY}`: processes not Cohort's (isCohort(pid) false) added to their GPU's `foreign`. */
export function mergeForeignApps(gpus: GpuHealth[], csv: string | undefined, isCohort: (pid: number) => boolean): void {
  for (const line of (csv ?? '').split('\n')) {
    const f = line.split(',').map((s) => s.trim());
    if (f.length < 3 || !/^\d+$/.test(f[0]!)) continue;
    const pid = Number(f[0]);
    const g = gpus.find((x) => x.uuid === f[2]);
    if (!g || isCohort(pid)) continue;
    g.foreign.push({ pid, bytes: num(f[1]) * MIB, name: f.slice(3).join(',') || '?' });
  }
}

/** Every query, run by `smi` (undefined: nvidia-smi missing or failed). */
export async function readGpuHealth(smi: (args: string[]) => Promise<string | undefined>, isCohort: (pid: number) => boolean): Promise<{ state: 'ok' | 'failed'; gpus: GpuHealth[] }> {
  const base = await smi([`--query-gpu=${HEALTH_BASE_QUERY}`, '--format=csv,noheader,nounits']);
  if (base === undefined) return { state: 'failed', gpus: [] };
  const gpus = parseHealthBase(base);
  const [apps, ...fields] = await Promise.all([smi([`--query-compute-apps=${HEALTH_APPS_QUERY}`, '--format=csv,noheader,nounits']), ...HEALTH_FIELDS.map((f) => smi([`--query-gpu=index,${f}`, '--format=csv,noheader,nounits']))]);
  HEALTH_FIELDS.forEach((f, i) => mergeHealthField(gpus, f, fields[i]));
  mergeForeignApps(gpus, apps, isCohort);
  return { state: 'ok', gpus };
}

function num(s: string | undefined): number {
  const v = Number(s);
  return Number.isFinite(v) ? v : 0;
}
