"""The torch side of `npm run bench -- per-rank`: DDP step time with and without the engine's
PhaseClock comm hook (cohort_torch/phases.py), interleaved rounds, one process over gloo (world 1:
the all-reduce is trivial there, so the hook's Python cost is the largest share it can be).
Prints one JSON line: {"plain": [ms...], "hooked": [ms...]}."""
import datetime
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[1])  # resources/trainer/engines
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

from cohort_torch.phases import PhaseClock  # noqa: E402

rounds, steps, size, batch = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(int(os.environ.get("COHORT_THREADS", "1")))
store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=30))
dist.init_process_group("gloo", store=store, rank=0, world_size=1)
torch.manual_seed(0)
models = {k: torch.nn.parallel.DistributedDataParallel(torchvision.models.resnet50(num_classes=10)) for k in ("plain", "hooked")}
clock = PhaseClock()
models["hooked"].register_comm_hook(None, clock.hook)
opts = {k: torch.optim.SGD(m.parameters(), lr=0.01) for k, m in models.items()}
x, y = torch.randn(batch, 3, size, size), torch.randint(0, 10, (batch,))


def step(k):
    t0 = clock.start_step() if k == "hooked" else time.perf_counter()
    loss = F.cross_entropy(models[k](x), y)
    opts[k].zero_grad()
    loss.backward()
    t1 = time.perf_counter()
    opts[k].step()
    if k == "hooked":
        clock.end_step(t0, t1, time.perf_counter())


out = {"plain": [], "hooked": []}
for k in out:  # warm-up
    step(k)
for r in range(rounds):
    for k in (("plain", "hooked") if r % 2 == 0 else ("hooked", "plain")):
        t = time.perf_counter()
        for _ in range(steps):
            step(k)
        out[k].append((time.perf_counter() - t) * 1000 / steps)
# The clock's own per-step work, alone (the hook's extra per bucket: a perf_counter, is_last, a dict set; ~4 buckets).
from cohort_torch.events import STATE  # noqa: E402
n = 100_000
t = time.perf_counter()
for i in range(n):
    clock.mark()
    clock.data_done()
    t0 = clock.start_step()
    for _ in range(4):
        time.perf_counter()
        STATE["phase"] = "exchange"
    clock.end_step(t0, t0, t0)
out["clockUsPerStep"] = (time.perf_counter() - t) * 1e6 / n


# The comm hook's cost, resolved (the whole-step A/B above drowns it in the load's noise): the same
# DDP reducer over ResNet-50's parameters (the same buckets), with the compute taken out: the forward
# reads one element of every parameter, so backward only fills each gradient and hands DDP its
# buckets. What differs between the two models is only the comm hook path (Python PhaseClock.hook →
# allreduce_hook vs DDP's built-in C++ all-reduce). Interleaved pairs of short runs, alternating which
# goes first; per step both wall time and CPU time (process_time, all threads: less load-sensitive).
class ParamsOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet50(num_classes=10)

    def forward(self, x):
        return sum(p.view(-1)[0] for p in self.net.parameters()) * x.sum()


pairs, per = int(os.environ.get("COHORT_HOOK_PAIRS", "40")), int(os.environ.get("COHORT_HOOK_STEPS", "5"))
light = {k: torch.nn.parallel.DistributedDataParallel(ParamsOnly()) for k in ("plain", "hooked")}
calls = [0]


def counted(pg, bucket):
    calls[0] += 1
    return clock.hook(pg, bucket)


light["hooked"].register_comm_hook(None, counted)
one = torch.ones(1)


def light_step(k):
    t0 = clock.start_step() if k == "hooked" else time.perf_counter()
    light[k](one).backward()
    t1 = time.perf_counter()
    if k == "hooked":
        clock.end_step(t0, t1, time.perf_counter())
    for p in light[k].parameters():
        p.grad = None


for k in light:  # warm-up (DDP rebuilds its buckets after the first backward)
    for _ in range(2):
        light_step(k)
calls[0] = 0
light_step("hooked")
out["bucketsPerStep"] = calls[0]
hw = {"plain": [], "hooked": []}
hc = {"plain": [], "hooked": []}
for r in range(pairs):
    for k in (("plain", "hooked") if r % 2 == 0 else ("hooked", "plain")):
        w, c = time.perf_counter(), time.process_time()
        for _ in range(per):
            light_step(k)
        hw[k].append((time.perf_counter() - w) * 1000 / per)
        hc[k].append((time.process_time() - c) * 1000 / per)
out["light"] = {"wallMs": hw, "cpuMs": hc, "stepsPerRun": per}
# The real step's CPU time beside its wall time (plain model, the same process and threads).
c, w = time.process_time(), time.perf_counter()
for _ in range(2):
    step("plain")
out["plainCpuMs"] = (time.process_time() - c) * 1000 / 2
out["plainWallMs"] = (time.perf_counter() - w) * 1000 / 2
print(json.dumps(out))
dist.destroy_process_group()
