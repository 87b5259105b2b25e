"""The seed-style PyTorch reference: a plain training loop with no Cohort in it, to measure what the
torch engine costs (test/bench/torch-engine.ts) and to give the tfjs engine a PyTorch baseline.

It is the TorchAcc guide's native ResNet-50 script (torchvision resnet50, 100 classes, AdamW lr
1e-3, CrossEntropy, `Throughputs: ... samples/s` every log window) with SC20's channels-last and
zero_grad(set_to_none=True), synthetic data made on the device (a pool of up to 4 random batches,
as the engine does), and an explicit thread count:

    /usr/bin/python3 test/bench/torch-reference.py --image-size 32 --batch-size 16 --threads 2 --steps 30
    /usr/bin/python3 test/bench/torch-reference.py --image-size 32 --batch-size 16 --threads 2 --steps 30 --json

Windows are measured like the engine's: the first --warmup steps are excluded, then one window every
--log-steps steps (back to back, the last one possibly shorter); img/s is the median over windows.
With --json, stdout is exactly one line: {"imgPerSec", "stepMs", "threads", "torch", ...}.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torchvision

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--image-size", type=int, default=32)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=2, help="steps excluded from throughput")
p.add_argument("--log-steps", type=int, default=5)
p.add_argument("--classes", type=int, default=100)
p.add_argument("--no-channels-last", action="store_true")
p.add_argument("--seed", type=int, default=42)
p.add_argument("--json", action="store_true", help="print one JSON line on stdout (logs go to stderr)")
args = p.parse_args()
if args.steps <= args.warmup:
    sys.exit(f"--steps {args.steps} must exceed --warmup {args.warmup} to leave steps to measure")

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
if device.type == "cuda":
    torch.backends.cudnn.benchmark = True
fmt = torch.preserve_format if args.no_channels_last else torch.channels_last

model = torchvision.models.resnet50(num_classes=args.classes).to(device, memory_format=fmt)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
b, s = args.batch_size, args.image_size
pool = max(1, min(4, (256 << 20) // (b * 3 * s * s * 4)))
batches = [(torch.randn(b, 3, s, s, device=device).contiguous(memory_format=fmt),
            torch.randint(0, args.classes, (b,), device=device)) for _ in range(pool)]

model.train()
rates, windows_ms = [], []
t_win, n_win = time.time(), 0
for step in range(1, args.steps + 1):
    inputs, labels = batches[(step - 1) % pool]
    optimizer.zero_grad(set_to_none=True)
    loss = criterion(model(inputs), labels)
    loss.backward()
    optimizer.step()
    if step == args.warmup:
        loss.item()
        t_win = time.time()
    elif step > args.warmup:
        n_win += 1
        if step % args.log_steps == 0 or step == args.steps:
            loss_value = loss.item()  # waits for the device
            t_end = time.time()
            rates.append(b * n_win / (t_end - t_win))
            windows_ms.append(1000 * (t_end - t_win) / n_win)
            print(f"Epoch: 0, Step: {step}, Loss: {loss_value:.4f}, Throughputs: {rates[-1]:.4f} samples/s", file=sys.stderr)
            t_win, n_win = t_end, 0

result = {"imgPerSec": statistics.median(rates), "stepMs": statistics.median(windows_ms), "threads": args.threads,
          "torch": torch.__version__, "imageSize": s, "batchSize": b, "steps": args.steps, "warmup": args.warmup,
          "channelsLast": not args.no_channels_last, "device": device.type}
if args.json:
    print(json.dumps(result), flush=True)
else:
    print(f"median {result['imgPerSec']:.2f} img/s ({result['stepMs']:.1f} ms/step) at {s}x{s}, batch {b}, {args.threads} threads, torch {torch.__version__}")
