// Per-rank memory for `step` events: process RSS, framework bytes, and GPU used/total read from
// nvidia-smi when the rank owns a GPU (queried in the background; never blocks a step).
import { execFile } from 'node:child_process';
import { totalmem } from 'node:os';
import type { RankMemory } from '../protocol';

export class MemorySampler {
  private gpu: { used: number; total: number } | undefined;
  private querying = false;
  private disposed = false;

  constructor(
    private readonly rank: number,
    private readonly host: string,
    private readonly tensorBytes: () => number,
    private readonly gpuIndex: string | undefined,
  ) {
    this.refreshGpu();
  }

  sample(): RankMemory {
    this.refreshGpu();
    return {
      rank: this.rank,
      host: this.host,
      rssBytes: process.memoryUsage().rss,
      tensorBytes: this.tensorBytes(),
      hostTotalBytes: totalmem(),
      ...(this.gpu ? { gpuUsedBytes: this.gpu.used, gpuTotalBytes: this.gpu.total } : {}),
    };
  }

  private refreshGpu(): void {
    if (this.gpuIndex === undefined || this.querying || this.disposed) return;
    this.querying = true;
    execFile('nvidia-smi', ['--query-gpu=memory.used,memory.total', '--format=csv,noheader,nounits', `--id=${this.gpuIndex}`], { timeout: 5000 }, (err, stdout) => {
      this.querying = false;
      if (err) return;
      const [used, total] = stdout.trim().split(',').map((s) => Number(s.trim()) * 1024 * 1024);
      if (Number.isFinite(used) && Number.isFinite(total)) this.gpu = { used: used!, total: total! };
    });
  }

  dispose(): void {
    this.disposed = true;
  }
}
