"""What this host can do and what is on (hello's capabilities and versions). Anything asked for
but unavailable says why here, and the run continues without it."""
import importlib.util
import inspect
import os
import platform
import re
import sys

import torch

from .config import CHANNELS_LAST, EXTRAS, kebab

BF16_MIN_CAPABILITY = (8, 0)  # Ampere: native bf16 tensor-core math; older GPUs emulate it (and have no bf16 convs)


def version_tuple(v):
    nums = []
    for part in v.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        nums.append(int(digits or 0))
    return tuple(nums)


def bf16_support(device):
    """(available, why): bf16 only where the GPU computes it natively (compute capability ≥ 8.0)."""
    if device.type != "cuda":
        return False, f"bfloat16 autocast is offered only on a CUDA GPU with compute capability ≥ {BF16_MIN_CAPABILITY[0]}.{BF16_MIN_CAPABILITY[1]} (native bf16); this rank runs on {device.type}"
    cc = torch.cuda.get_device_capability(device)
    if tuple(cc) < BF16_MIN_CAPABILITY:
        return False, f"bfloat16 needs compute capability ≥ 8.0 (Ampere or newer) to run natively; {torch.cuda.get_device_name(device)} is {cc[0]}.{cc[1]}"
    return True, f"compute capability {cc[0]}.{cc[1]}"


def capabilities(cfg, device, world):
    cuda, tv = device.type == "cuda", torch.__version__
    cap = {}

    def put(name, available, detail, requested=None):
        if requested and not available:
            detail += f" — --{kebab(name)} requested but not applied: training continues without it"
        cap[name] = {"available": bool(available), "detail": detail}

    put("fp16", cuda, "autocast float16 + GradScaler (dynamic loss scaling): " + ("on" if cfg["fp16"] else "off (--fp16)")
        if cuda else "fp16 autocast needs a CUDA GPU; this rank runs on cpu", cfg["fp16"])
    bf16_ok, bf16_why = bf16_support(device)
    put("bf16", bf16_ok, (f"autocast bfloat16 on {device.type} ({bf16_why}): " + ("on" if cfg["bf16"] else "off (--bf16)")) if bf16_ok
        else bf16_why, cfg["bf16"])
    has_compile = hasattr(torch, "compile")  # torch.compile exists from PyTorch 2.0
    put("compile", has_compile, (f"torch.compile(mode={cfg['compileMode']!r}): " + ("on" if cfg["compile"] else "off (--compile)"))
        if has_compile else f"torch.compile needs PyTorch ≥ 2.0; found {tv}", cfg["compile"])

    def on(detail, enabled=EXTRAS):
        return detail if enabled else "off (COHORT_TORCH_CHANNELS_LAST=0)" if EXTRAS else "off (COHORT_TORCH_EXTRAS=0)"

    put("channelsLast", True, on("on: model and inputs in NHWC (channels_last)", CHANNELS_LAST))
    put("cudnnBenchmark", cuda, on("on: cudnn.benchmark autotunes convolutions during warm-up") if cuda else "cuDNN is CUDA-only")
    fused = "fused" in inspect.signature(torch.optim.AdamW.__init__).parameters
    put("fusedAdamW", cuda and fused,
        on("on" if cfg["optimizer"] == "adamw" else "available; off (optimizer is sgd)") if cuda and fused
        else ("fused AdamW runs on CUDA only" if fused else f"torch {tv} AdamW has no fused=True (PyTorch ≥ 2.0)"))
    put("zeroGradSetToNone", True, on("on: zero_grad(set_to_none=True)"))
    put("pinnedMemory", cuda, on("on: CIFAR batches pinned before the host-to-device copy") if cuda else "no host-to-device copy on cpu")
    put("nonBlockingCopy", cuda, on("on: .to(device, non_blocking=True)") if cuda else "no host-to-device copy on cpu")
    put("syncBn", cuda and world > 1, ("SyncBatchNorm: " + ("on" if cfg["syncBn"] else "off (--sync-bn)")) if cuda and world > 1
        else ("nothing to synchronise at worldSize 1" if cuda else f"SyncBatchNorm needs CUDA (torch {tv} supports GPU inputs only)"), cfg["syncBn"])
    put("peakMemory", cuda, "peakTensorBytes: torch.cuda.max_memory_allocated of this process, reset when warm-up ends; reservedBytes: "
        "memory_reserved; gpuProcessBytes: this process on its GPU (nvidia-smi, by pid and UUID)" if cuda
        else "CPU torch keeps no allocator statistics: tensorBytes counts parameters, gradients and optimizer state; no peak is reported")
    put("ddp", world > 1, f"DistributedDataParallel over {'nccl' if cuda else 'gloo'}" if world > 1 else "single process: no DDP wrapper")
    return cap


def versions(device):
    out = {"python": platform.python_version(), "torch": torch.__version__, "torchvision": torchvision_version()}
    if device.type == "cuda":
        out.update(cuda=str(torch.version.cuda), cudnn=str(torch.backends.cudnn.version()))
    return out


def torchvision_version():
    """torchvision's version for hello.versions. Imported only if the model imported it: a model built
    here (--width below 1, --depth 14/26, no torchvision) would pay 0.3-0.5 CPU-s after torch's import for a
    string. Otherwise the first line of the package's own version.py (`__version__ = '0.14.1a0'`; the
    file then imports torchvision.extension, so it is read, never run), found as the import would find
    it; imported as before when that file says nothing."""
    loaded = sys.modules.get("torchvision")
    if loaded is not None:
        return loaded.__version__
    try:
        spec = importlib.util.find_spec("torchvision")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return "absent"
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py")) as f:
            found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
        if found:
            return found.group(1)
    except (OSError, TypeError, IndexError):
        pass
    try:
        import torchvision
        return torchvision.__version__
    except ImportError:
        return "absent"


def device_name(device, threads, gpu=None):
    if device.type == "cuda":
        return (gpu.describe() if gpu else None) or torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or platform.machine()
    return f"{cpu} ({threads} threads)"
