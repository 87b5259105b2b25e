// Per-rank memory for `step` events: process RSS (and the host's RAM), framework bytes (and their true peak since
// warm-up when the engine watches it: tfjs's TensorBytesPeak),
// and, when the rank really runs on a GPU, that GPU's numbers from nvidia-smi: this process's own
// bytes on it (by pid and UUID), the whole device's used bytes and its total. nvidia-smi is queried
// in the background and never blocks a step; see nvidia-smi.ts for how the device is resolved.
import { totalmem } from 'node:os';
import { DisposableBase, type RankMemory } from '../protocol';
import { APPS_QUERY, GPU_QUERY, parseComputeApps, parseGpuRows, parseMigList, processGpuBytes, queryNvidiaSmi, resolveCudaDevice, type ResolvedGpu } from '../util/nvidia-smi';

export interface GpuSample {
  device: ResolvedGpu;
  processBytes?: number;
}

/** Reads this rank's GPU once (undefined: no GPU, or it could not be resolved; `note` says why). */
export type GpuReader = () => Promise<GpuSample | { note: string } | undefined>;

/** The real reader: nvidia-smi's GPU list, MIG list and compute apps, resolved for CUDA device `ordinal` of this process. */
export function nvidiaSmiReader(env: { CUDA_VISIBLE_DEVICES?: string; CUDA_DEVICE_ORDER?: string }, ordinal: number, pid = process.pid): GpuReader {
  return async () => {
    const [gpuCsv, list, apps] = await Promise.all([
      queryNvidiaSmi([`--query-gpu=${GPU_QUERY}`, '--format=csv,noheader,nounits']),
      queryNvidiaSmi(['-L']),
      queryNvidiaSmi([`--query-compute-apps=${APPS_QUERY}`, '--format=csv,noheader,nounits']),
    ]);
    if (gpuCsv === undefined) return { note: 'nvidia-smi is not available' };
    const r = resolveCudaDevice(env, ordinal, parseGpuRows(gpuCsv), parseMigList(list ?? ''));
    if (!r.ok) return { note: r.reason };
    const processBytes = apps === undefined ? undefined : processGpuBytes(parseComputeApps(apps), pid, r.device);
    return { device: r.device, ...(processBytes === undefined ? {} : { processBytes }) };
  };
}

export class MemorySampler extends DisposableBase {
  private gpu: GpuSample | undefined;
  private querying = false;
  private peakTensor = 0;
  /** Why there is no GPU figure, once (for the log). */
  gpuNote: string | undefined;

  constructor(
    private readonly rank: number,
    private readonly host: string,
    private readonly tensorBytes: () => number,
    private readonly readGpu: GpuReader | undefined,
    /** The framework's true peak (tfjs: TensorBytesPeak); without it the peak is the largest sample. */
    private readonly peak?: { peak(): number; reset(): void },
  ) {
    super();
    this.refreshGpu();
  }

  sample(): RankMemory {
    this.refreshGpu();
    const tensorBytes = this.tensorBytes();
    this.peakTensor = Math.max(this.peakTensor, tensorBytes, this.peak?.peak() ?? 0);
    const g = this.gpu;
    const total = g?.device.mig ? undefined : g?.device.gpu.totalBytes; // a MIG slice's size is not the device's
    const used = g?.device.mig ? undefined : g?.device.gpu.usedBytes;
    const util = g?.device.mig ? undefined : g?.device.gpu.utilPercent; // nvidia-smi reports no utilisation per MIG slice
    return {
      rank: this.rank,
      host: this.host,
      rssBytes: process.memoryUsage().rss,
      tensorBytes,
      hostTotalBytes: totalmem(),
      peakTensorBytes: this.peakTensor,
      ...(g ? { gpuUuid: g.device.mig?.uuid ?? g.device.gpu.uuid } : {}),
      ...(g?.processBytes !== undefined ? { gpuProcessBytes: g.processBytes } : {}),
      ...(used !== undefined && Number.isFinite(used) ? { gpuUsedBytes: used } : {}),
      ...(total !== undefined && Number.isFinite(total) ? { gpuTotalBytes: total } : {}),
      ...(util !== undefined ? { gpuUtilPercent: util } : {}),
    };
  }

  /** Warm-up is over: the peak from now on is the training loop's, not the first steps' allocations. */
  resetPeak(): void {
    this.peak?.reset();
    this.peakTensor = 0;
  }

  private refreshGpu(): void {
    if (!this.readGpu || this.querying || this.isDisposed) return;
    this.querying = true;
    this.readGpu().then(
      (r) => {
        this.querying = false;
        if (r && 'device' in r) this.gpu = r;
        else if (r) this.gpuNote = r.note;
      },
      (err: unknown) => {
        this.querying = false;
        this.gpuNote = err instanceof Error ? err.message : String(err);
      },
    );
  }

  /** Waits for the query in flight (tests, and the first sample after start-up). */
  async settle(): Promise<void> {
    while (this.querying) await new Promise((r) => setTimeout(r, 5));
  }
}
