"""What the throughput windows report: rows gathered from every rank, memory per rank."""
import os
import subprocess
import time

import torch
import torch.distributed as dist


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class GpuMemory:
    """Device-wide used/total as nvidia-smi reports it, refreshed from the watchdog thread so a
    step never waits for a subprocess; torch.cuda.mem_get_info (same numbers) when no nvidia-smi."""

    def __init__(self, device):
        self.device, self.value, self.last = device, None, 0.0
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
        index = device.index or 0
        entry = visible[index] if index < len(visible) else ""
        # nvidia-smi's id of this rank's GPU: the CUDA_VISIBLE_DEVICES entry it sees as `index`, when numeric.
        self.physical_index = int(entry) if device.type == "cuda" and entry.isdigit() else None
        self.smi_id = entry if entry.isdigit() else str(index)

    def refresh(self):
        if self.device.type != "cuda" or time.time() - self.last < 5:
            return
        self.last = time.time()
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits",
                                  f"--id={self.smi_id}"], capture_output=True, text=True, timeout=5).stdout
            used, total = (float(s) * (1 << 20) for s in out.strip().split(","))
        except (OSError, ValueError, subprocess.SubprocessError):
            free, total = torch.cuda.mem_get_info(self.device)
            used = total - free
        self.value = (used, total)


def gather(run, row):
    """all_gather of one float64 row per rank on the gloo group → list of rows (rank order)."""
    t = torch.tensor(row, dtype=torch.float64)
    if run.world == 1:
        return [t.tolist()]
    out = [torch.zeros_like(t) for _ in range(run.world)]
    dist.all_gather(out, t, group=run.meta_group)
    return [o.tolist() for o in out]


def tensor_bytes(run):
    if run.device.type == "cuda":
        return torch.cuda.memory_allocated(run.device), torch.cuda.max_memory_allocated(run.device)
    # CPU torch keeps no allocator statistics: count the tensors that live across steps.
    params = list(run.raw_model.parameters())
    live = params + [p.grad for p in params if p.grad is not None]
    live += [v for s in run.optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
    return sum(t.numel() * t.element_size() for t in live), -1


MEMORY_FIELDS = 5


def memory_row(run):
    used, total_gpu = run.gpu.value or (-1, -1)
    alloc, peak = tensor_bytes(run)
    return [rss_bytes(), alloc, peak, used, total_gpu]


def memory_entries(rows, first, hosts):
    out = []
    for r, row in enumerate(rows):
        rss, alloc, peak, used, total_gpu = row[first:first + MEMORY_FIELDS]
        e = {"rank": r, "host": hosts[r], "rssBytes": int(rss), "tensorBytes": int(alloc)}
        e.update({k: int(v) for k, v in (("peakTensorBytes", peak), ("gpuUsedBytes", used), ("gpuTotalBytes", total_gpu)) if v >= 0})
        out.append(e)
    return out
