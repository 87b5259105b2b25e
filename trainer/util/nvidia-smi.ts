// Which physical GPU a rank uses, and how much of it its own process holds, read from nvidia-smi.
// Parsing and resolution are pure (tested with fixtures in nvidia-smi's documented CSV / `-L`
// formats: no GPU exists on the machines this was written on); `queryNvidiaSmi` is the one place
// that runs the tool.
//
// Three traps this module exists for:
// - nvidia-smi numbers GPUs in PCI bus order; CUDA's default (CUDA_DEVICE_ORDER=FASTEST_FIRST)
//   may not. Integer CUDA_VISIBLE_DEVICES values are only mapped when the order is PCI_BUS_ID (the
//   agent sets it) or every GPU is the same model (then the orders agree).
// - CUDA_VISIBLE_DEVICES may name GPUs by UUID (`GPU-…`, any unique prefix) or MIG instances
//   (`MIG-…`, or the older `MIG-GPU-<uuid>/<gi>/<ci>`); these never mean "GPU 0".
// - `--query-gpu=memory.used` is the whole device's; the rank's own bytes come from
//   `--query-compute-apps=pid,used_memory,gpu_uuid` filtered by its pid and its GPU's UUID.
import { execFile } from 'node:child_process';

export interface GpuRow {
  index: number;
  uuid: string;
  name: string;
  /** e.g. 00000000:07:00.0 */
  pciBusId: string;
  usedBytes: number;
  totalBytes: number;
  /** nvidia-smi's compute_cap, e.g. "8.0" (absent: the driver predates the field, R510). */
  computeCap?: string;
  /** utilization.gpu: percent of the last sample period a kernel ran (absent when nvidia-smi says [N/A]). */
  utilPercent?: number;
}

export interface MigRow {
  uuid: string;
  /** The physical GPU the instance lives on. */
  parentUuid: string;
  /** e.g. "MIG 1g.5gb Device 0" */
  name: string;
}

export interface ComputeApp {
  pid: number;
  usedBytes: number;
  gpuUuid: string;
}

/** The --query-gpu fields parseGpuRows expects, in order. */
export const GPU_QUERY = 'index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu';
export const APPS_QUERY = 'pid,used_memory,gpu_uuid';
/** Asked separately: a driver that does not know compute_cap (before R510) fails the whole query. */
export const CC_QUERY = 'uuid,compute_cap';
const MIB = 2 ** 20;

/** `nvidia-smi --query-gpu=${GPU_QUERY} --format=csv,noheader,nounits` */
export function parseGpuRows(csv: string): GpuRow[] {
  const rows: GpuRow[] = [];
  for (const line of csv.split('\n')) {
    const f = line.split(',').map((s) => s.trim());
    if (f.length < 6) continue;
    const index = Number(f[0]);
    if (!Number.isInteger(index)) continue;
    const util = f[6] !== undefined && /^\d+(\.\d+)?$/.test(f[6]) ? Number(f[6]) : undefined;
    rows.push({ index, uuid: f[1]!, name: f[2]!, pciBusId: f[3]!, usedBytes: mibBytes(f[4]!), totalBytes: mibBytes(f[5]!), ...(util !== undefined && util <= 100 ? { utilPercent: util } : {}) });
  }
  return rows;
}

/** `nvidia-smi --query-gpu=${CC_QUERY} --format=csv,noheader,nounits` merged into `rows` by UUID. */
export function withComputeCaps(rows: GpuRow[], csv: string | undefined): GpuRow[] {
  const caps = new Map<string, string>();
  for (const line of (csv ?? '').split('\n')) {
    const [uuid, cc] = line.split(',').map((s) => s.trim());
    if (uuid?.startsWith('GPU-') && cc && /^\d+\.\d+$/.test(cc)) caps.set(uuid, cc);
  }
  return rows.map((r) => (caps.has(r.uuid) ? { ...r, computeCap: caps.get(r.uuid)! } : r));
}

/** `nvidia-smi --query-compute-apps=${APPS_QUERY} --format=csv,noheader,nounits` */
export function parseComputeApps(csv: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const line of csv.split('\n')) {
    const f = line.split(',').map((s) => s.trim());
    if (f.length < 3) continue;
    const pid = Number(f[0]);
    if (!Number.isInteger(pid)) continue;
    apps.push({ pid, usedBytes: mibBytes(f[1]!), gpuUuid: f[2]! });
  }
  return apps;
}

/** `nvidia-smi -L`: "GPU 0: NAME (UUID: GPU-…)" lines, each followed by its "  MIG … Device N: (UUID: MIG-…)" lines. */
export function parseMigList(text: string): MigRow[] {
  const out: MigRow[] = [];
  let parent = '';
  for (const line of text.split('\n')) {
    const gpu = /^GPU \d+: .*\(UUID: (GPU-[0-9a-fA-F-]+)\)/.exec(line);
    if (gpu) {
      parent = gpu[1]!;
      continue;
    }
    const mig = /^\s+(MIG .*?Device\s+\d+): \(UUID: (MIG-[^)\s]+)\)/.exec(line);
    if (mig && parent) out.push({ uuid: mig[2]!, parentUuid: parent, name: mig[1]!.replace(/\s+/g, ' ') });
  }
  return out;
}

/** "[N/A]", "[Not Supported]" (MIG, some vGPUs) read as NaN, never as 0. */
function mibBytes(s: string): number {
  const n = Number(s);
  return s !== '' && Number.isFinite(n) ? n * MIB : Number.NaN;
}

export interface ResolvedGpu {
  gpu: GpuRow;
  /** Set when the rank's device is a MIG instance on `gpu`. */
  mig?: MigRow;
}

export type GpuResolution = { ok: true; device: ResolvedGpu } | { ok: false; reason: string };

/**
 * The physical GPU behind CUDA device `ordinal` (0 for a rank given one visible device; LOCAL_RANK
 * for a torch rank that sees them all) under this process's CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER.
 */
export function resolveCudaDevice(env: { CUDA_VISIBLE_DEVICES?: string; CUDA_DEVICE_ORDER?: string }, ordinal: number, gpus: GpuRow[], migs: MigRow[] = []): GpuResolution {
  if (!gpus.length) return { ok: false, reason: 'nvidia-smi lists no GPU' };
  const byPci = [...gpus].sort((a, b) => a.pciBusId.localeCompare(b.pciBusId));
  const pciOrder = env.CUDA_DEVICE_ORDER === 'PCI_BUS_ID';
  const sameModel = new Set(gpus.map((g) => g.name)).size === 1;
  const visible = env.CUDA_VISIBLE_DEVICES;
  // CUDA stops at the first entry it cannot parse; "" and "-1" hide every GPU.
  const entries = visible === undefined ? byPci.map((_, i) => String(i)) : visible.split(',').map((s) => s.trim());
  const entry = entries[ordinal];
  if (entry === undefined || entry === '' || entry === '-1') return { ok: false, reason: `CUDA_VISIBLE_DEVICES=${JSON.stringify(visible ?? '')} leaves no CUDA device ${ordinal}` };
  if (/^\d+$/.test(entry)) {
    if (!pciOrder && !sameModel) {
      return { ok: false, reason: `CUDA device ${entry} is ambiguous: this host mixes GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID (CUDA then numbers them fastest first, nvidia-smi by PCI bus); set CUDA_DEVICE_ORDER=PCI_BUS_ID or name GPUs by UUID` };
    }
    const gpu = byPci[Number(entry)];
    return gpu ? { ok: true, device: { gpu } } : { ok: false, reason: `CUDA_VISIBLE_DEVICES names GPU ${entry} but nvidia-smi lists ${gpus.length}` };
  }
  if (entry.startsWith('MIG-')) {
    const legacy = /^MIG-(GPU-[0-9a-fA-F-]+)\/\d+\/\d+$/.exec(entry); // driver < 470 form: parent UUID / GI / CI
    if (legacy) {
      const gpu = gpus.find((g) => g.uuid === legacy[1]);
      return gpu ? { ok: true, device: { gpu, mig: { uuid: entry, parentUuid: gpu.uuid, name: `MIG ${entry.slice(entry.indexOf('/') + 1)}` } } } : { ok: false, reason: `MIG device ${entry}: its GPU is not listed by nvidia-smi` };
    }
    const mig = migs.find((m) => m.uuid === entry || m.uuid.startsWith(entry));
    const gpu = mig && gpus.find((g) => g.uuid === mig.parentUuid);
    return mig && gpu ? { ok: true, device: { gpu, mig } } : { ok: false, reason: `MIG device ${entry} is not in nvidia-smi -L` };
  }
  const uuid = entry.startsWith('GPU-') ? entry : `GPU-${entry}`;
  const matches = gpus.filter((g) => g.uuid.startsWith(uuid));
  if (matches.length === 1) return { ok: true, device: { gpu: matches[0]! } };
  return { ok: false, reason: matches.length ? `CUDA_VISIBLE_DEVICES entry ${entry} matches ${matches.length} GPUs` : `CUDA_VISIBLE_DEVICES entry ${entry} matches no GPU UUID in nvidia-smi` };
}

/** Bytes the given process holds on the resolved GPU (its own memory, not the device's), if listed. */
export function processGpuBytes(apps: ComputeApp[], pid: number, device: ResolvedGpu): number | undefined {
  const mine = apps.filter((a) => a.pid === pid && a.gpuUuid === device.gpu.uuid && Number.isFinite(a.usedBytes));
  return mine.length ? mine.reduce((s, a) => s + a.usedBytes, 0) : undefined;
}

/** One line naming the device: "NVIDIA A100-SXM4-40GB (GPU 2, GPU-5d4a…)". */
export function describeGpu(d: ResolvedGpu): string {
  return d.mig ? `${d.gpu.name} ${d.mig.name} (GPU ${d.gpu.index}, ${d.mig.uuid})` : `${d.gpu.name} (GPU ${d.gpu.index}, ${d.gpu.uuid})`;
}

/** Runs nvidia-smi with `args`; undefined when it is missing or fails (never throws). */
export function queryNvidiaSmi(args: string[], opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', args, { timeout: opts.timeoutMs ?? 5000, ...(opts.signal ? { signal: opts.signal } : {}) }, (err, stdout) => resolve(err ? undefined : stdout));
  });
}

export async function readGpuRows(signal?: AbortSignal): Promise<{ gpus: GpuRow[]; migs: MigRow[] } | undefined> {
  const csv = await queryNvidiaSmi([`--query-gpu=${GPU_QUERY}`, '--format=csv,noheader,nounits'], { ...(signal ? { signal } : {}) });
  if (csv === undefined) return undefined;
  const [list, caps] = await Promise.all([queryNvidiaSmi(['-L'], { ...(signal ? { signal } : {}) }), queryNvidiaSmi([`--query-gpu=${CC_QUERY}`, '--format=csv,noheader,nounits'], { ...(signal ? { signal } : {}) })]);
  return { gpus: withComputeCaps(parseGpuRows(csv), caps), migs: parseMigList(list ?? '') };
}
