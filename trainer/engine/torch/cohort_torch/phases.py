"""Where each rank's step goes (issue 21 item 2), per throughput window: data (waiting for the
batch), compute (forward + backward until this rank's last gradient bucket is ready), exchange
(the rest of backward: DDP's all-reduce of the buckets, including waiting for slower peers) and
optimizer. DDP overlaps the all-reduce with backward, so "compute ends" is when DDP hands the last
bucket to the comm hook (`PhaseClock.hook`, torch's own allreduce_hook underneath). The step
event's waitMs is the part of a rank's exchange beyond the fastest rank's (the ring ends together
on every rank), as the tfjs engine reports it. On CUDA these are host-side times without a device
synchronisation, so compute and exchange are approximate there (UNFINISHED: CUDA events)."""
import time

from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from .events import STATE


class PhaseClock:
    def __init__(self):
        self.sums = [0.0, 0.0, 0.0, 0.0]  # data, compute, exchange (with waiting), optimizer: seconds in this window
        self.ready = None
        self.t_mark = time.perf_counter()

    def reset(self):
        self.sums = [0.0, 0.0, 0.0, 0.0]

    def mark(self):
        self.t_mark = time.perf_counter()

    def data_done(self):
        self.sums[0] += time.perf_counter() - self.t_mark

    def start_step(self):
        self.ready = None
        return time.perf_counter()

    def hook(self, process_group, bucket):
        """DDP comm hook: torch's default all-reduce, noting when the last bucket was ready."""
        if bucket.is_last():
            self.ready = time.perf_counter()
            STATE["phase"] = "exchange"
        return default_hooks.allreduce_hook(process_group, bucket)

    def end_step(self, t0, t_backward, t_end):
        ready = self.ready if self.ready is not None and t0 <= self.ready <= t_backward else t_backward
        self.sums[1] += ready - t0
        self.sums[2] += t_backward - ready
        self.sums[3] += t_end - t_backward


def rank_phases(rows, first):
    """step's rankPhases (and rankComputeMs, read by older clients) from every rank's gathered row:
    [data, compute, exchange, optimizer] seconds at `first`, steps at index 3."""
    per = [[x * 1000 / max(1, row[3]) for x in row[first:first + 4]] for row in rows]
    fastest = min(p[2] for p in per)
    phases = [{"rank": r, "dataMs": p[0], "computeMs": p[1], "waitMs": max(0.0, p[2] - fastest), "exchangeMs": min(p[2], fastest), "optimizerMs": p[3]}
              for r, p in enumerate(per)]
    return {"rankPhases": phases, "rankComputeMs": [p[1] for p in per]}
