"""What the throughput windows report: rows gathered from every rank, memory per rank."""
import os

import torch
import torch.distributed as dist


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def gather(run, row):
    """all_gather of one float64 row per rank on the gloo group → list of rows (rank order)."""
    t = torch.tensor(row, dtype=torch.float64)
    if run.world == 1:
        return [t.tolist()]
    out = [torch.zeros_like(t) for _ in range(run.world)]
    dist.all_gather(out, t, group=run.meta_group)
    return [o.tolist() for o in out]


MEMORY_FIELDS = 9  # rss, host total, tensor, peak, reserved, process-on-GPU, device used, device total, util %


def host_total_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return -1


def memory_row(run):
    """This rank's memory (gpu.py says what each figure is); -1 = not known."""
    return [rss_bytes(), host_total_bytes()] + run.gpu.row(run)


def memory_entries(rows, first, peers):
    """step.memory from every rank's row (rank order): each rank's own figures, its GPU by UUID."""
    out = []
    for r, row in enumerate(rows):
        rss, host_total, alloc, peak, reserved, proc, used, total, util = row[first:first + MEMORY_FIELDS]
        e = {"rank": r, "host": peers[r]["host"], "rssBytes": int(rss), "tensorBytes": int(alloc)}
        e.update({k: int(v) for k, v in (("peakTensorBytes", peak), ("reservedBytes", reserved), ("gpuProcessBytes", proc),
                                         ("gpuUsedBytes", used), ("gpuTotalBytes", total), ("hostTotalBytes", host_total)) if v >= 0})
        if 0 <= util <= 100:
            e["gpuUtilPercent"] = util
        if peers[r].get("gpuUuid"):
            e["gpuUuid"] = peers[r]["gpuUuid"]
        out.append(e)
    return out
