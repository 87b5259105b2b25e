"""Cohort's PyTorch engine: data-parallel ResNet-50 that speaks Cohort's event protocol.

The host agent starts one process per slot with the rendezvous environment torch.distributed
uses, plus the run configuration as JSON, and relays what rank 0 prints on stdout:

    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 COHORT_HOST=gpu1 \
    COHORT_TRAIN_CONFIG='{"batchSize":64,"imageSize":224,"steps":100,"fp16":true}' \
    python3 torch_engine.py

Standalone (no Cohort, one process), flags override COHORT_TRAIN_CONFIG field by field:

    python3 torch_engine.py --image-size 64 --batch-size 16 --steps 30 --log-steps 10
    python3 torch_engine.py --image-size 224 --batch-size 64 --compile --fp16     # the seeds' GPU ladder
    python3 torch_engine.py --data cifar100:/data/cifar-100-binary --stem cifar --epochs 2

Protocol: rank 0 prints one JSON event per line on stdout (hello, plan, compile, warmup, step,
epoch, checkpoint, done; shapes in trainer/protocol/events.ts). Any rank that fails prints an
`error` event and exits 1. Everything else (progress, warnings, library noise) goes to stderr.

Other environment: COHORT_THREADS (torch threads; default cores / ranks on this host),
COHORT_ENGINE_REASON (the agent's reason for choosing torch, prefixed to hello.reason),
COHORT_RUN_DIR (checkpoints go to $COHORT_RUN_DIR/checkpoints when no checkpointDir is given),
COHORT_PEER_TIMEOUT_S (a silent peer fails the run after this long; default 10),
COHORT_TORCH_EXTRAS=0 (the seeds' plain "native" loop: no channels-last, cudnn.benchmark, fused
AdamW, set_to_none, pinned/non-blocking copies), COHORT_TORCH_CHANNELS_LAST=0 (NHWC alone off),
COHORT_TORCH_BUILTIN_RESNET=1 (use the built-in ResNet-50 even when torchvision is installed).
"""
import argparse
import collections
import contextlib
import datetime
import hashlib
import inspect
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback

# -------------------------------------------------------------------------------------------
# Events and logs. Events get a private copy of stdout; fd 1 is then pointed at stderr so that
# nothing else (a library's print, a C extension's printf) can corrupt the JSON-lines stream.
_event_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_tail = collections.deque(maxlen=40)  # this rank's last log lines, for the error event
_error_lock = threading.Lock()
_emit_lock = threading.Lock()  # the watchdog thread may emit an error while the main thread emits
_error_sent = False
RANK = int(os.environ.get("RANK", "0"))
HOST = os.environ.get("COHORT_HOST") or socket.gethostname()


def emit(type_, **fields):
    """Prints one protocol event (v, type, time first, as makeEvent stamps them)."""
    line = json.dumps({"v": 1, "type": type_, "time": int(time.time() * 1000), **fields}) + "\n"
    with _emit_lock:
        _event_out.write(line)
        _event_out.flush()


def log(msg):
    line = f"[rank {RANK}] {msg}"
    _tail.append(line)
    print(line, file=sys.stderr, flush=True)


def fail(message, code=None, exit_code=1):
    """Reports this rank's failure once (main thread and watchdog may race) and exits at once:
    a clean interpreter shutdown could block in a process group whose peer is gone."""
    global _error_sent
    with _error_lock:
        if not _error_sent:
            _error_sent = True
            log(message)
            event = {"rank": RANK, "host": HOST, "message": message, "logTail": list(_tail)[-20:]}
            emit("error", **event, **({"code": code} if code else {}))
            if RANK == 0 and STATE.get("started"):
                emit("done", status="cancelled" if code == "cancelled" else "failed", steps=STATE.get("step", 0), medianGlobalSamplesPerSec=None,
                     paramChecksum="", durationMs=(time.time() - STATE["t0"]) * 1000)
    _event_out.flush()
    sys.stderr.flush()
    os._exit(exit_code)


STATE = {"t0": time.time(), "step": 0, "started": False}

import torch  # noqa: E402  (imported after the stdout redirect: torch may print on import)
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# -------------------------------------------------------------------------------------------
# Config: the TrainConfig of trainer/protocol/train-config.ts. Names, defaults and kinds come from
# its one table: the build writes them to train-config.json beside this script.
def _table_defaults():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train-config.json")
    try:
        with open(path) as f:
            fields = json.load(f)["fields"]
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read the run configuration's defaults from {path} ({err}). `npm run build` writes it beside "
             "the bundled engine: run resources/trainer/engines/torch_engine.py, not the source copy", "config")
    return {k: float(f["default"]) if f["kind"] == "float" else f["default"] for k, f in fields.items()}


DEFAULTS = _table_defaults()
SYNTHETIC_SIZE = 50_000    # nominal synthetic epoch, as the tfjs engine's
CIFAR_MEAN, CIFAR_STD = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)
PEER_TIMEOUT_S = float(os.environ.get("COHORT_PEER_TIMEOUT_S", "10"))
HEARTBEAT_S = 1.0
COLLECTIVE_TIMEOUT_S = max(60.0, 6 * PEER_TIMEOUT_S)  # main-thread collectives (the watchdog is faster)
RENDEZVOUS_TIMEOUT_S = 300.0                           # waiting for every rank to start
# The seeds' extras (SC20 "# EXTRA", "# NHWC") are on by default; COHORT_TORCH_EXTRAS=0 gives the
# plain "native" rung of the GPU ladder, COHORT_TORCH_CHANNELS_LAST=0 turns off NHWC alone.
EXTRAS = os.environ.get("COHORT_TORCH_EXTRAS", "1") != "0"
CHANNELS_LAST = EXTRAS and os.environ.get("COHORT_TORCH_CHANNELS_LAST", "1") != "0"
MEMORY_FORMAT = torch.channels_last if CHANNELS_LAST else torch.contiguous_format


class ConfigError(ValueError):
    pass


def kebab(key):
    return "".join("-" + c.lower() if c.isupper() else c for c in key)


def load_config(argv):
    cfg = dict(DEFAULTS)
    given = json.loads(os.environ.get("COHORT_TRAIN_CONFIG") or "{}")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"COHORT_TRAIN_CONFIG: unknown setting(s) {unknown}; this engine knows {sorted(DEFAULTS)}")
    if "epochs" in given and "steps" not in given:
        given["steps"] = 0
    cfg.update(given)
    parser = argparse.ArgumentParser(description="Cohort torch engine (flags override COHORT_TRAIN_CONFIG)")
    for key, default in DEFAULTS.items():
        if isinstance(default, bool):
            parser.add_argument("--" + kebab(key), dest=key, nargs="?", const=True, default=None,
                                type=lambda s: s.lower() in ("1", "true", "yes", "on"))
        else:
            parser.add_argument("--" + kebab(key), dest=key, type=type(default), default=None)
    flags = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    if "epochs" in flags and "steps" not in flags:
        flags["steps"] = 0
    cfg.update(flags)
    problems = []
    if (cfg["steps"] > 0) == (cfg["epochs"] > 0):
        problems.append("--steps/--epochs: give exactly one of them > 0")
    if cfg["imageSize"] < {"imagenet": 32, "cifar": 8}.get(cfg["stem"], 32):
        problems.append(f"--image-size {cfg['imageSize']} is too small for the {cfg['stem']} stem")
    if cfg["stem"] not in ("imagenet", "cifar"):
        problems.append(f"--stem: expected imagenet or cifar, got {cfg['stem']!r}")
    if cfg["fp16"] and cfg["bf16"]:
        problems.append("--bf16: choose one of --fp16 and --bf16")
    if not (cfg["data"] == "synthetic" or cfg["data"].startswith("cifar100:")):
        problems.append(f"--data: expected synthetic or cifar100:DIR, got {cfg['data']!r}")
    if problems:
        raise ConfigError("bad configuration: " + "; ".join(problems))
    return cfg


def learning_rate(step, cfg, total):
    """Mirrors trainer/optim/schedule.ts: linear warm-up, then constant, cosine to 0, or step decay."""
    lr, warm = cfg["lr"], cfg["lrWarmupSteps"]
    if warm > 0 and step < warm:
        return lr * (step + 1) / warm
    progress = min(1.0, max(0.0, (step - warm) / max(1, total - warm)))
    if cfg["schedule"] == "cosine":
        return 0.5 * lr * (1 + math.cos(math.pi * progress))
    if cfg["schedule"] == "step":
        return lr * (0.01 if progress >= 0.75 else 0.1 if progress >= 0.5 else 1.0)
    return lr


# -------------------------------------------------------------------------------------------
# Model: torchvision's ResNet-50, or the same network defined here when torchvision is absent
# (same module names, shapes and init, so parameter counts and checkpoints match).
class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes, layers = 64, []
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            down = None
            if stride != 1 or inplanes != planes * 4:
                down = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))
            blks = [Bottleneck(inplanes, planes, stride, down)]
            inplanes = planes * 4
            blks += [Bottleneck(inplanes, planes) for _ in range(blocks - 1)]
            layers.append(nn.Sequential(*blks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2048, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model(cfg):
    """Returns (model, description). The cifar stem is SC20's: 3x3 stride-1 conv1, no maxpool."""
    source = "built-in ResNet-50"
    try:
        if os.environ.get("COHORT_TORCH_BUILTIN_RESNET") == "1":
            raise ImportError("COHORT_TORCH_BUILTIN_RESNET=1")
        import torchvision
        model = torchvision.models.resnet50(num_classes=cfg["classes"])
        source = "torchvision.models.resnet50"
    except ImportError as err:
        model = ResNet50(cfg["classes"])
        source += f" (torchvision not used: {err})"
    if cfg["stem"] == "cifar":
        model.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
        model.maxpool = nn.Identity()
    return model, f"{source}, {cfg['stem']} stem, {cfg['classes']} classes"


# -------------------------------------------------------------------------------------------
# Data. Both sources yield (images, labels) already on the device, images NCHW float.
class Synthetic:
    """The seeds' synthetic data, generated on the device once: a small pool of random batches
    (distinct per rank) that the loop cycles through, so no host-side input cost is measured."""

    def __init__(self, cfg, rank, world, device):
        self.size = SYNTHETIC_SIZE
        self.steps_per_epoch = self.size // (cfg["batchSize"] * world)
        b, s = cfg["batchSize"], cfg["imageSize"]
        pool = max(1, min(4, (256 << 20) // (b * 3 * s * s * 4)))  # ≤ 256 MiB of inputs
        gen = torch.Generator(device=device)
        gen.manual_seed(cfg["seed"] * 1000 + rank)
        self.batches = [(torch.randn(b, 3, s, s, generator=gen, device=device).contiguous(memory_format=MEMORY_FORMAT),
                         torch.randint(0, cfg["classes"], (b,), generator=gen, device=device)) for _ in range(pool)]

    def epoch(self, epoch, start=0):
        for i in range(start, self.steps_per_epoch):
            yield self.batches[i % len(self.batches)]


def read_cifar(path, data_arg):
    if not os.path.isfile(path):
        raise ConfigError(f"--data {data_arg}: {path} not found. Download the CIFAR-100 *binary* version "
                                "(cifar-100-binary.tar.gz), extract it, and pass the folder holding train.bin and test.bin.")
    raw = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.uint8)
    if raw.numel() == 0 or raw.numel() % 3074:
        raise ConfigError(f"--data {data_arg}: {path} is {raw.numel()} bytes, not a whole number of 3074-byte records")
    rec = raw.view(-1, 3074)
    return rec[:, 2:].reshape(-1, 3, 32, 32).clone(), rec[:, 1].long().clone()  # fine labels


class Cifar100:
    """CIFAR-100 binary: records of coarse label, fine label, 3072 bytes CHW. DistributedSampler
    shards and shuffles per epoch; augmentation (SC20: 4-px padded random crop, flip), normalisation
    and resizing run on the device. On CUDA, batches are pinned and copied without blocking."""

    def __init__(self, cfg, rank, world, device):
        self.dir = cfg["data"][len("cifar100:"):]
        self.cfg, self.rank, self.world, self.device = cfg, rank, world, device
        self.images, self.labels = read_cifar(os.path.join(self.dir, "train.bin"), cfg["data"])
        self.test_path = os.path.join(self.dir, "test.bin")
        self.size = len(self.labels)
        self.steps_per_epoch = self.size // (cfg["batchSize"] * world)
        if self.steps_per_epoch == 0:
            raise ConfigError(f"--data {cfg['data']}: {self.size} training images is less than one global batch "
                             f"({cfg['batchSize']} x {world} ranks); lower --batch-size")
        from torch.utils.data.distributed import DistributedSampler
        self.sampler = DistributedSampler(range(self.size), num_replicas=world, rank=rank, shuffle=True,
                                          seed=cfg["seed"], drop_last=True)
        self.pin = device.type == "cuda" and EXTRAS
        self.mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1) * 255
        self.gen = torch.Generator()

    def to_device(self, idx, augment):
        x, y = self.images[idx], self.labels[idx]
        if self.pin:
            x, y = x.pin_memory(), y.pin_memory()
        x, y = x.to(self.device, non_blocking=self.pin).float(), y.to(self.device, non_blocking=self.pin)
        if augment:
            b = x.shape[0]
            off = torch.randint(0, 9, (2, b), generator=self.gen).to(self.device)
            rows = (off[0, :, None] + torch.arange(32, device=self.device))[:, None, :, None]
            cols = (off[1, :, None] + torch.arange(32, device=self.device))[:, None, None, :]
            padded = F.pad(x, (4, 4, 4, 4))
            x = padded[torch.arange(b, device=self.device)[:, None, None, None], torch.arange(3, device=self.device)[None, :, None, None], rows, cols]
            flip = (torch.rand(b, generator=self.gen) < 0.5).to(self.device)
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        x = (x - self.mean) / self.std
        if self.cfg["imageSize"] != 32:
            x = F.interpolate(x, size=self.cfg["imageSize"], mode="nearest")  # as the tfjs loader
        return x, y

    def epoch(self, epoch, start=0):
        self.sampler.set_epoch(epoch)
        self.gen.manual_seed(self.cfg["seed"] * 1000003 + epoch * 1009 + self.rank)
        order = torch.tensor(list(iter(self.sampler)))
        b = self.cfg["batchSize"]
        for i in range(start, self.steps_per_epoch):
            yield self.to_device(order[i * b:(i + 1) * b], augment=True)

    def validation(self):
        """This rank's shard of test.bin (every world-th image), in batches."""
        images, labels = read_cifar(self.test_path, self.cfg["data"])
        idx = torch.arange(self.rank, len(labels), self.world)
        saved = self.images, self.labels
        self.images, self.labels = images, labels
        try:
            for i in range(0, len(idx), self.cfg["batchSize"]):
                yield self.to_device(idx[i:i + self.cfg["batchSize"]], augment=False)
        finally:
            self.images, self.labels = saved


# -------------------------------------------------------------------------------------------
# Setup helpers: capabilities, memory, watchdog, checkpoints.
def version_tuple(v):
    nums = []
    for part in v.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        nums.append(int(digits or 0))
    return tuple(nums)


def capabilities(cfg, device, world):
    """What this host can do and what is on. Anything asked for but unavailable says why here."""
    cuda, tv = device.type == "cuda", torch.__version__
    cap = {}

    def put(name, available, detail, requested=None):
        if requested and not available:
            detail += f" — --{kebab(name)} requested but not applied: training continues without it"
        cap[name] = {"available": bool(available), "detail": detail}

    put("fp16", cuda, "autocast float16 + GradScaler (dynamic loss scaling): " + ("on" if cfg["fp16"] else "off (--fp16)")
        if cuda else "fp16 autocast needs a CUDA GPU; this rank runs on cpu (use --bf16 for bfloat16 autocast on CPU)", cfg["fp16"])
    bf16_ok = torch.cuda.is_bf16_supported() if cuda else hasattr(torch, "autocast")
    put("bf16", bf16_ok, (f"autocast bfloat16 on {device.type}: " + ("on" if cfg["bf16"] else "off (--bf16)")
                          + ("" if cuda else "; slow on CPUs without AVX-512 BF16")) if bf16_ok
        else "bfloat16 needs an Ampere or newer GPU (torch.cuda.is_bf16_supported() is false)", cfg["bf16"])
    has_compile = hasattr(torch, "compile") and version_tuple(tv) >= (2, 0)
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
    put("ddp", world > 1, f"DistributedDataParallel over {'nccl' if cuda else 'gloo'}" if world > 1 else "single process: no DDP wrapper")
    return cap


def torchvision_version():
    try:
        import torchvision
        return torchvision.__version__
    except ImportError:
        return "absent"


def device_name(device, threads):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or platform.machine()
    return f"{cpu} ({threads} threads)"


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
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        self.smi_id = visible if visible.isdigit() else str(device.index or 0)

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


def watchdog(group, stop, gpu):
    """Fails this rank fast when a peer dies or hangs, or when the agent that started us is gone.
    Every HEARTBEAT_S the ranks all-reduce a stop flag on their own gloo group (own timeout), so
    a dead peer is seen even while the main thread computes a long step. The flag also lets every
    rank leave the heartbeat in the same round at the end."""
    parent = os.getppid()
    flag = torch.zeros(1)
    while True:
        time.sleep(HEARTBEAT_S)
        if os.getppid() != parent:
            fail(f"the process that started this rank (pid {parent}) is gone; exiting so nothing is left behind", "orphaned")
        gpu.refresh()
        if group is None:
            if stop.is_set():
                return
            continue
        flag[0] = 1.0 if stop.is_set() else 0.0
        try:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
        except Exception as err:  # noqa: BLE001 (any transport error means the same thing)
            fail(f"lost contact with a peer rank (it died, hung or its host is unreachable; no heartbeat within "
                 f"{PEER_TIMEOUT_S:g} s): {str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}", "peer-lost")
        if flag[0] > 0:
            return


def die_with_parent():
    """Linux: the kernel sends SIGTERM to this rank when its parent (the agent) exits."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except OSError:
            pass


def param_checksum(model):
    """sha256 of the parameters as little-endian float32, in model.parameters() order, NCHW layout."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().contiguous().numpy().astype("<f4").tobytes())
    return h.hexdigest()


def checkpoint_dir(cfg):
    if cfg["checkpointDir"]:
        return cfg["checkpointDir"]
    run_dir = os.environ.get("COHORT_RUN_DIR")
    return os.path.join(run_dir, "checkpoints") if run_dir and (cfg["checkpointEvery"] or cfg["resume"]) else ""


def latest_checkpoint(path):
    names = sorted(n for n in os.listdir(path) if n.startswith("torch-step") and n.endswith(".pt")) if os.path.isdir(path) else []
    return os.path.join(path, names[-1]) if names else None


def save_checkpoint(path, state, step):
    """Rank 0 only; atomic (write, fsync, rename); keeps the newest two."""
    os.makedirs(path, exist_ok=True)
    final = os.path.join(path, f"torch-step{step:08d}.pt")
    tmp = final + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    for old in sorted(n for n in os.listdir(path) if n.startswith("torch-step") and n.endswith(".pt"))[:-2]:
        os.remove(os.path.join(path, old))
    return final


# -------------------------------------------------------------------------------------------
def main(argv):
    t0 = STATE["t0"]
    die_with_parent()
    cfg = load_config(argv)
    rank, world = RANK, int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    master = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))
    assert 0 <= rank < world, f"RANK={rank} must be in [0, WORLD_SIZE={world})"

    # -- device and process groups --------------------------------------------------------
    cuda = torch.cuda.is_available()
    if cuda:
        device = torch.device("cuda", local_rank % torch.cuda.device_count() if torch.cuda.device_count() > 1 else 0)
        torch.cuda.set_device(device)
        backend, why = "nccl", f"CUDA device {torch.cuda.get_device_name(device)}"
    else:
        device, backend, why = torch.device("cpu"), "gloo", "no CUDA device (torch.cuda.is_available() is false)"
    meta_group = watch_group = None
    if world > 1:
        log(f"rendezvous at {master[0]}:{master[1]} as rank {rank}/{world} ({backend})")
        store = dist.TCPStore(master[0], master[1], world, rank == 0, datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
        # Metrics, checkpoints and validation totals travel on gloo (CPU tensors) even when DDP uses NCCL.
        meta_group = (dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
                      if backend != "gloo" else dist.group.WORLD)
        watch_group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=PEER_TIMEOUT_S))
    gpu = GpuMemory(device)
    stop = threading.Event()
    watcher = threading.Thread(target=watchdog, args=(watch_group, stop, gpu), daemon=True, name="cohort-watchdog")
    watcher.start()

    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    me = {"rank": rank, "host": HOST, "localRank": local_rank, **({"gpu": int(visible)} if cuda and visible.isdigit() else {})}
    peers = [me]
    if world > 1:
        peers = [None] * world
        dist.all_gather_object(peers, me, group=meta_group)
    hosts = [p["host"] for p in peers]
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or hosts.count(HOST)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = int(os.environ.get("COHORT_THREADS") or max(1, cores // local_ranks))
    torch.set_num_threads(threads)

    # -- model, optimizer, precision -------------------------------------------------------
    cap = capabilities(cfg, device, world)
    torch.manual_seed(cfg["seed"])  # every rank builds the same weights; DDP also broadcasts rank 0's
    model, model_desc = build_model(cfg)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if cfg["syncBn"] and cap["syncBn"]["available"]:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device, memory_format=MEMORY_FORMAT)
    if cuda:
        torch.backends.cudnn.benchmark = EXTRAS
    use_fp16 = cfg["fp16"] and cap["fp16"]["available"]
    use_bf16 = cfg["bf16"] and cap["bf16"]["available"]
    amp_dtype = torch.float16 if use_fp16 else torch.bfloat16 if use_bf16 else None
    autocast = (lambda: torch.autocast(device.type, dtype=amp_dtype)) if amp_dtype else contextlib.nullcontext
    scaler = torch.cuda.amp.GradScaler(enabled=use_fp16)
    if cfg["optimizer"] == "adamw":
        extra = {"fused": True} if cap["fusedAdamW"]["available"] and EXTRAS else {}
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weightDecay"], **extra)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weightDecay"])

    data = (Cifar100 if cfg["data"].startswith("cifar100:") else Synthetic)(cfg, rank, world, device)
    total = cfg["steps"] or cfg["epochs"] * data.steps_per_epoch
    epochs = cfg["epochs"] or math.ceil(total / data.steps_per_epoch)

    versions = {"python": platform.python_version(), "torch": torch.__version__, "torchvision": torchvision_version()}
    if cuda:
        versions.update(cuda=str(torch.version.cuda), cudnn=str(torch.backends.cudnn.version()))
    asked = [f for f in ("fp16", "bf16", "compile", "syncBn") if cfg[f] and not cap[f]["available"]]
    chosen = os.environ.get("COHORT_ENGINE_REASON") or "engine torch"  # why the agent picked this engine
    reason = (f"{chosen}; {why}; {'DDP over ' + backend if world > 1 else 'one process'}; {model_desc}"
              + "".join(f"; --{kebab(f)} unavailable: {cap[f]['detail'].split(' — ')[0]}" for f in asked))
    for f in asked:
        log(f"warning: --{kebab(f)} requested but unavailable: {cap[f]['detail']}")
    if rank == 0:
        emit("hello", engine="torch", backend=device.type, device=device_name(device, threads), worldSize=world, params=params,
             host=HOST, capabilities=cap, versions=versions, reason=reason)
        emit("plan", worldSize=world, ranks=peers, globalBatch=cfg["batchSize"] * world, steps=total, epochs=epochs,
             stepsPerEpoch=data.steps_per_epoch, data=cfg["data"])
    STATE["started"] = True

    # -- resume (rank 0 reads, everyone receives it: hosts need not share a filesystem) ---------
    start_step, ckpt_dir = 0, checkpoint_dir(cfg)
    if cfg["resume"] and ckpt_dir:
        box = [None]
        if rank == 0:
            path = latest_checkpoint(ckpt_dir)
            box = [dict(torch.load(path, map_location="cpu"), path=path) if path else None]
        if world > 1:
            dist.broadcast_object_list(box, src=0, group=meta_group)
        if box[0]:
            model.load_state_dict(box[0]["model"])
            optimizer.load_state_dict(box[0]["optimizer"])
            scaler.load_state_dict(box[0]["scaler"])
            start_step = box[0]["step"]
            if rank == 0:
                emit("checkpoint", step=start_step, path=box[0]["path"], action="resumed")
        else:
            log(f"--resume: no checkpoint in {ckpt_dir}; starting from step 0")

    raw_model = model
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    step_model = model
    if cfg["compile"]:
        if cap["compile"]["available"]:
            step_model = torch.compile(model, mode=None if cfg["compileMode"] == "default" else cfg["compileMode"])
        elif rank == 0:
            emit("compile", name="torch.compile", status="skipped", durationMs=0, detail=cap["compile"]["detail"])

    def set_train_mode():
        model.train()
        if cfg["freezeBn"]:  # eval-mode BN: running statistics frozen, identical on every rank
            for m in model.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()

    def train_step(x, y, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr
        x = x.contiguous(memory_format=MEMORY_FORMAT)
        with autocast():
            loss = F.cross_entropy(step_model(x), y)
        optimizer.zero_grad(set_to_none=EXTRAS)
        scaler.scale(loss).backward()  # DDP all-reduces gradient buckets during backward (sync point)
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    def gather(row):
        """all_gather of one float64 row per rank on the gloo group → list of rows (rank order)."""
        t = torch.tensor(row, dtype=torch.float64)
        if world == 1:
            return [t.tolist()]
        out = [torch.zeros_like(t) for _ in range(world)]
        dist.all_gather(out, t, group=meta_group)
        return [o.tolist() for o in out]

    def tensor_bytes():
        if cuda:
            return torch.cuda.memory_allocated(device), torch.cuda.max_memory_allocated(device)
        # CPU torch keeps no allocator statistics: count the tensors that live across steps.
        live = [p for p in raw_model.parameters()] + [p.grad for p in raw_model.parameters() if p.grad is not None]
        live += [v for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
        return sum(t.numel() * t.element_size() for t in live), -1

    def memory_row():
        used, total_gpu = gpu.value or (-1, -1)
        alloc, peak = tensor_bytes()
        return [rss_bytes(), alloc, peak, used, total_gpu]

    def memory_entries(rows, first):
        out = []
        for r, row in enumerate(rows):
            rss, alloc, peak, used, total_gpu = row[first:first + 5]
            e = {"rank": r, "host": hosts[r], "rssBytes": int(rss), "tensorBytes": int(alloc)}
            e.update({k: int(v) for k, v in (("peakTensorBytes", peak), ("gpuUsedBytes", used), ("gpuTotalBytes", total_gpu)) if v >= 0})
            out.append(e)
        return out

    # -- training loop ---------------------------------------------------------------------
    # Per step: set LR, forward/backward/step; on log steps: sync, gather, emit; at epoch end:
    # validation and `epoch`; on checkpoint steps: rank 0 saves. Windows run back to back, so
    # logging and checkpoint costs count against throughput as they would in a plain script.
    set_train_mode()
    step, rates = start_step, []
    warm_end = start_step + cfg["warmupSteps"]
    t_warm = t_win = time.time()
    win_steps, win_loss = 0, torch.zeros((), device=device)
    epoch, first = divmod(start_step, data.steps_per_epoch)
    log(f"training {total} steps, {world} rank(s) x batch {cfg['batchSize']}, {cfg['imageSize']}px, {threads} threads")
    while step < total:
        t_epoch, ep_loss, ep_n = time.time(), torch.zeros((), device=device), 0
        for x, y in data.epoch(epoch, first):
            if step >= total:
                break
            if step == start_step and step_model is not model:
                try:  # torch.compile traces and compiles here, at the first call
                    loss = train_step(x, y, learning_rate(step, cfg, total))
                    sync()
                    status, detail = "ok", f"torch.compile(mode={cfg['compileMode']!r}) compiled during the first step"
                except Exception as err:  # noqa: BLE001 (a compiler failure falls back to eager, said so)
                    step_model, status = model, "failed"
                    detail = f"torch.compile failed, continuing eager: {type(err).__name__}: {err}"[:2000]
                    log(detail)
                    loss = train_step(x, y, learning_rate(step, cfg, total))
                if rank == 0:
                    emit("compile", name="torch.compile", status=status, durationMs=(time.time() - t_warm) * 1000, detail=detail)
            else:
                loss = train_step(x, y, learning_rate(step, cfg, total))
            step += 1
            STATE["step"] = step
            ep_loss += loss
            ep_n += 1
            if step == warm_end:
                sync()
                t_win = time.time()
                if rank == 0:
                    emit("warmup", steps=cfg["warmupSteps"], durationMs=(t_win - t_warm) * 1000,
                         detail="first steps (allocation, autotuning, compilation) excluded from throughput")
            elif step > warm_end:
                win_steps += 1
                win_loss += loss
                if step % cfg["logSteps"] == 0 or step == total:
                    lsum = win_loss.item()  # sync point: waits for the device
                    sync()
                    t_end = time.time()
                    rows = gather([cfg["batchSize"] * win_steps, t_end - t_win, lsum, win_steps] + memory_row())
                    if rank == 0:
                        rate = sum(r[0] / r[1] for r in rows if r[1] > 0)
                        mean_loss = sum(r[2] for r in rows) / sum(r[3] for r in rows)
                        rates.append(rate)
                        emit("step", step=step, epoch=epoch, loss=mean_loss if math.isfinite(mean_loss) else None,
                             globalSamplesPerSec=rate, stepTimeMs=1000 * sum(r[1] / r[3] for r in rows) / world,
                             worldSize=world, lr=learning_rate(step - 1, cfg, total), memory=memory_entries(rows, 4))
                        log(f"Epoch: {epoch}, Step: {step}, Loss: {mean_loss:.4f}, Throughputs: {rate:.1f} samples/s")
                    t_win, win_steps, win_loss = t_end, 0, torch.zeros((), device=device)
            if ckpt_dir and cfg["checkpointEvery"] and step % cfg["checkpointEvery"] == 0 and rank == 0:
                path = save_checkpoint(ckpt_dir, {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                                                  "scaler": scaler.state_dict(), "step": step, "config": cfg}, step)
                emit("checkpoint", step=step, path=path, action="saved")
        else:  # the epoch ran to its end: validate (every rank its shard) and report it
            t_pause = time.time()
            val = evaluate(raw_model, data, autocast) if isinstance(data, Cifar100) else []
            totals = [sum(c) for c in zip(*gather([ep_loss.item(), ep_n] + val))]
            if rank == 0:
                extra = {"valLoss": totals[2] / totals[4], "valAccuracy": totals[3] / totals[4]} if val and totals[4] else {}
                train_loss = totals[0] / max(1, totals[1])
                emit("epoch", epoch=epoch, trainLoss=train_loss if math.isfinite(train_loss) else None,
                     durationMs=(time.time() - t_epoch) * 1000, **extra)
            set_train_mode()
            t_win += time.time() - t_pause  # validation is not training time
        epoch, first = epoch + 1, 0

    # -- finish ----------------------------------------------------------------------------
    sync()
    checksum = param_checksum(raw_model)
    stop.set()
    watcher.join(timeout=HEARTBEAT_S + PEER_TIMEOUT_S + 5)
    if world > 1:
        dist.barrier(group=meta_group)
    if rank == 0:
        emit("done", status="ok", steps=step, medianGlobalSamplesPerSec=statistics.median(rates) if rates else None,
             paramChecksum=checksum, durationMs=(time.time() - t0) * 1000)
    if world > 1:
        dist.destroy_process_group()


def evaluate(model, data, autocast):
    """This rank's [loss sum, correct, count] over its shard of the test set."""
    model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in data.validation():
            with autocast():
                out = model(x.contiguous(memory_format=MEMORY_FORMAT))
            loss_sum += F.cross_entropy(out.float(), y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            count += len(y)
    return [loss_sum, correct, count]


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        fail("interrupted (SIGINT)", "cancelled", 130)
    except SystemExit as exit_:
        if exit_.code not in (0, None):  # argparse --help exits 0; bad flags exit 2
            fail(f"bad command line (exit {exit_.code}); see --help", "bad-config", 2)
        raise
    except BaseException as err:  # noqa: BLE001 (every failure must reach Cohort as an event)
        for line in traceback.format_exc().rstrip().splitlines()[-12:]:
            _tail.append(line)
        print(traceback.format_exc(), file=sys.stderr)
        text = f"{type(err).__name__}: {err}"
        peer = any(k in text for k in ("Connection closed by peer", "Connection reset", "gloo", "NCCL", "Timed out"))
        if peer and not isinstance(err, ConfigError):
            text = f"lost contact with a peer rank (it died or its host is unreachable): {text}"
        fail(text, "config" if isinstance(err, ConfigError) else "peer-lost" if peer else None)
    _event_out.flush()
    os._exit(0)  # skip interpreter teardown: process-group destructors can stall after peers exit
