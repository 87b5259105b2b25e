"""One run's objects (model, optimizer, precision, data) built from the config and this rank's
place in the job, the rank-0 announcements (hello, plan), and the finish (checksum, done)."""
import contextlib
import math
import os
import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn

from . import distributed
from .capabilities import capabilities, device_name, versions
from .checkpoint import checkpoint_dir, param_checksum
from .config import EXTRAS, MEMORY_FORMAT, kebab
from .data import Cifar100, Synthetic
from .events import HOST, STATE, emit0, log
from .model import build_model
from .phases import PhaseClock


@dataclass
class Run:
    cfg: dict
    dist: distributed.Dist
    gpu: object
    cap: dict
    model: nn.Module        # what trains (DDP-wrapped at world > 1)
    raw_model: nn.Module    # the bare network: checkpoints, checksum, validation
    step_model: nn.Module   # what a step calls (torch.compile'd when --compile applies)
    model_desc: str
    params: int
    optimizer: torch.optim.Optimizer
    scaler: object
    autocast: object
    data: object
    total: int
    epochs: int
    ckpt_dir: str
    clock: PhaseClock = None  # this rank's step phases (phases.py)

    # The job's shape, read often enough in the loop to deserve short names.
    rank = property(lambda self: self.dist.rank)
    world = property(lambda self: self.dist.world)
    device = property(lambda self: self.dist.device)
    threads = property(lambda self: self.dist.threads)
    meta_group = property(lambda self: self.dist.meta_group)
    hosts = property(lambda self: [p["host"] for p in self.dist.peers])


def build(cfg, d, gpu):
    cap = capabilities(cfg, d.device, d.world)
    torch.manual_seed(cfg["seed"])  # every rank builds the same weights; DDP also broadcasts rank 0's
    model, model_desc = build_model(cfg)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if cfg["syncBn"] and cap["syncBn"]["available"]:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(d.device, memory_format=MEMORY_FORMAT)
    if d.device.type == "cuda":
        torch.backends.cudnn.benchmark = EXTRAS
    use_fp16 = cfg["fp16"] and cap["fp16"]["available"]
    use_bf16 = cfg["bf16"] and cap["bf16"]["available"]
    amp_dtype = torch.float16 if use_fp16 else torch.bfloat16 if use_bf16 else None
    autocast = (lambda: torch.autocast(d.device.type, dtype=amp_dtype)) if amp_dtype else contextlib.nullcontext
    # torch.amp's GradScaler where it exists (torch >= 2.3 deprecates torch.cuda.amp's); Debian's 1.13 has only the latter
    scaler = torch.amp.GradScaler("cuda", enabled=use_fp16) if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler(enabled=use_fp16)
    if cfg["optimizer"] == "adamw":
        extra = {"fused": True} if cap["fusedAdamW"]["available"] and EXTRAS else {}
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weightDecay"], **extra)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weightDecay"])
    data = (Cifar100 if cfg["data"].startswith("cifar100:") else Synthetic)(cfg, d.rank, d.world, d.device)
    total = cfg["steps"] or cfg["epochs"] * data.steps_per_epoch
    epochs = cfg["epochs"] or math.ceil(total / data.steps_per_epoch)
    return Run(cfg, d, gpu, cap, model, model, model, model_desc, params, optimizer, scaler, autocast, data, total, epochs, checkpoint_dir(cfg), PhaseClock())


def announce(run):
    """hello and plan (rank 0); every requested-but-unavailable feature is said, never silently ignored."""
    cfg, d, cap = run.cfg, run.dist, run.cap
    asked = [f for f in ("fp16", "bf16", "compile", "syncBn") if cfg[f] and not cap[f]["available"]]
    chosen = os.environ.get("COHORT_ENGINE_REASON") or "engine torch"  # why the agent picked this engine
    reason = (f"{chosen}; {d.why}; {'DDP over ' + d.backend if d.world > 1 else 'one process'}; {run.model_desc}"
              + "".join(f"; --{kebab(f)} unavailable: {cap[f]['detail'].split(' — ')[0]}" for f in asked))
    for f in asked:
        log(f"warning: --{kebab(f)} requested but unavailable: {cap[f]['detail']}")
    fell = [p for p in d.peers if p.get("gpuFellBack")]
    warning = {"deviceWarning": f"rank(s) {', '.join(str(p['rank']) for p in fell)} on {', '.join(sorted({p['host'] for p in fell}))} run on the CPU "
                                f"although nvidia-smi lists GPUs there: that Python's torch sees no CUDA device (a CPU build of PyTorch, "
                                f"or CUDA_VISIBLE_DEVICES hides them); rank 0: {d.why}"} if fell else {}
    emit0("hello", engine="torch", backend=d.device.type, device=device_name(d.device, d.threads, run.gpu), worldSize=d.world, params=run.params,
          host=HOST, capabilities=cap, versions=versions(d.device), reason=reason, **warning)
    emit0("plan", worldSize=d.world, ranks=d.peers, globalBatch=cfg["batchSize"] * d.world, steps=run.total, epochs=run.epochs,
          stepsPerEpoch=run.data.steps_per_epoch, data=cfg["data"])
    STATE["started"] = True


def wrap(run):
    """DDP at world > 1, then torch.compile when asked and available (compiled at the first step)."""
    d = run.dist
    if d.world > 1:
        run.model = nn.parallel.DistributedDataParallel(run.raw_model, device_ids=[d.device.index] if d.device.type == "cuda" else None)
        run.model.register_comm_hook(None, run.clock.hook)  # torch's all-reduce, timed: where compute ends (phases.py)
    run.step_model = run.model
    if run.cfg["compile"]:
        if run.cap["compile"]["available"]:
            mode = run.cfg["compileMode"]
            run.step_model = torch.compile(run.model, mode=None if mode == "default" else mode)
        else:
            emit0("compile", name="torch.compile", status="skipped", durationMs=0, detail=run.cap["compile"]["detail"])


def finish(run, steps, rates):
    """Checksum of the final weights, heartbeat stopped on every rank, `done` (rank 0)."""
    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)
    checksum = param_checksum(run.raw_model)
    distributed.teardown(run.dist)
    emit0("done", status="ok", steps=steps, medianGlobalSamplesPerSec=statistics.median(rates) if rates else None,
          paramChecksum=checksum, durationMs=(time.time() - STATE["t0"]) * 1000)
    if run.world > 1:
        dist.destroy_process_group()
