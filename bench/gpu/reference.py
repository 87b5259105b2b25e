"""The plain PyTorch step the GPU acceptance compares Cohort's torch engine with: torchvision
ResNet-50, synthetic data, AdamW, one process, one GPU, no Cohort code. One rung per call:

    python3 reference.py --image-size 224 --batch-size 256 --steps 50 --warmup-steps 10 [--fp16 | --bf16] [--extras] [--channels-last] [--compile]

`--extras` is the step the engine runs under COHORT_TORCH_EXTRAS=1 (the seeds' SC20 "# NHWC" and
"# EXTRA"): channels_last, cudnn.benchmark, fused AdamW, zero_grad(set_to_none=True). Without it the
step is the engine's COHORT_TORCH_EXTRAS=0 one: NCHW, no cudnn.benchmark, unfused AdamW,
zero_grad(set_to_none=False). `--channels-last` alone turns on NHWC only.

Prints one JSON line: img/s over the timed steps (CUDA synchronised), max_memory_allocated after
a reset at the end of warm-up, the FLOPs of one training step (forward + backward, counted by
torch's FlopCounterMode on the eager model before warm-up; per image for the MFU estimate), what
the step applied, and the versions."""
import argparse, inspect, json, sys, time
import torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("--image-size", type=int, default=224)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--warmup-steps", type=int, default=5)
p.add_argument("--classes", type=int, default=100)  # the engine's default (train-config.json)
p.add_argument("--fp16", action="store_true")
p.add_argument("--bf16", action="store_true", help="autocast bfloat16 (no loss scaling needed)")
p.add_argument("--extras", action="store_true", help="what COHORT_TORCH_EXTRAS=1 turns on in the engine")
p.add_argument("--channels-last", action="store_true")
p.add_argument("--compile", action="store_true")
a = p.parse_args()
if a.fp16 and a.bf16:
    p.error("choose one of --fp16 and --bf16")
amp = torch.float16 if a.fp16 else torch.bfloat16 if a.bf16 else None

dev = torch.device("cuda", 0)
channels_last = a.channels_last or a.extras
fused = a.extras and "fused" in inspect.signature(torch.optim.AdamW.__init__).parameters
torch.backends.cudnn.benchmark = a.extras
fmt = torch.channels_last if channels_last else torch.contiguous_format
model = torchvision.models.resnet50(num_classes=a.classes).to(dev, memory_format=fmt)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, **({"fused": True} if fused else {}))
scaler = torch.amp.GradScaler("cuda", enabled=a.fp16) if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler(enabled=a.fp16)
step_model = torch.compile(model) if a.compile else model
x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev).contiguous(memory_format=fmt)
y = torch.randint(0, a.classes, (a.batch_size,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=a.extras)
    with torch.autocast("cuda", dtype=amp or torch.float16, enabled=amp is not None):
        loss = loss_fn(step_model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def count_flops():
    """FLOPs of one forward + backward of the eager model on this batch (None before torch 2.1)."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    with FlopCounterMode(display=False) as counter:
        with torch.autocast("cuda", dtype=amp or torch.float16, enabled=amp is not None):
            loss = loss_fn(model(x), y)
        loss.backward()
    opt.zero_grad(set_to_none=True)
    return counter.get_total_flops()


try:
    flops = count_flops()
except Exception as err:  # noqa: BLE001 (the FLOP count feeds only the MFU estimate: never lose the measurement to it)
    print(f"reference.py: FLOP count failed, no MFU: {type(err).__name__}: {err}", file=sys.stderr)
    opt.zero_grad(set_to_none=True)
    flops = None

for _ in range(max(1, a.warmup_steps)):  # torch.compile compiles in the first step: never timed
    step()
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats(dev)
timed = a.steps - max(1, a.warmup_steps)
t0 = time.perf_counter()
for _ in range(timed):
    step()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({
    "imgPerSec": timed * a.batch_size / dt,
    "maxMemoryAllocated": torch.cuda.max_memory_allocated(dev),
    "flopsPerStep": flops, "flopsPerImage": flops / a.batch_size if flops else None,
    "applied": {"fp16": a.fp16, "bf16": a.bf16, "channelsLast": channels_last, "cudnnBenchmark": a.extras, "fusedAdamW": fused, "setToNone": a.extras, "compile": a.compile},
    "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
}))
