"""The plain PyTorch step the GPU acceptance compares Cohort's torch engine with: torchvision
ResNet-50, synthetic data, AdamW, one process, one GPU, no Cohort code. One rung per call:

    python3 reference.py --image-size 224 --batch-size 64 --steps 60 --warmup-steps 5 [--fp16] [--channels-last] [--compile]

Prints one JSON line: img/s over the timed steps (CUDA synchronised), max_memory_allocated after
a reset at the end of warm-up, and the versions."""
import argparse, json, time
import torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("--image-size", type=int, default=224)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--warmup-steps", type=int, default=5)
p.add_argument("--classes", type=int, default=100)
p.add_argument("--fp16", action="store_true")
p.add_argument("--channels-last", action="store_true")
p.add_argument("--compile", action="store_true")
a = p.parse_args()

dev = torch.device("cuda", 0)
fmt = torch.channels_last if a.channels_last else torch.contiguous_format
model = torchvision.models.resnet50(num_classes=a.classes).to(dev, memory_format=fmt)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
scaler = torch.cuda.amp.GradScaler(enabled=a.fp16)
step_model = torch.compile(model) if a.compile else model
x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev).contiguous(memory_format=fmt)
y = torch.randint(0, a.classes, (a.batch_size,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16, enabled=a.fp16):
        loss = loss_fn(step_model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


for _ in range(a.warmup_steps):
    step()
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats(dev)
t0 = time.perf_counter()
for _ in range(a.steps - a.warmup_steps):
    step()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({
    "imgPerSec": (a.steps - a.warmup_steps) * a.batch_size / dt,
    "maxMemoryAllocated": torch.cuda.max_memory_allocated(dev),
    "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
}))
