"""Reads the acceptance run's files (OUT/rungs.tsv, OUT/ladder.txt, OUT/engine-RUNG.jsonl, OUT/ref-RUNG.json,
OUT/cli-auto.jsonl, OUT/check.txt, OUT/tfjs.jsonl, OUT/machine.txt) and prints the markdown table
for bench/results/gpu-<machine>.md.

    python3 report.py OUT

rungs.tsv (written by scripts/gpu-acceptance.sh, one line per rung in the ladder's order): name,
COHORT_TORCH_EXTRAS, the engine's flags, the plain script's flags, and "ran" or why it was skipped."""
import statistics
import sys

from run_files import events, first, last, load_json, text

out = sys.argv[1]

# Dense tensor-core peaks in TFLOPS from NVIDIA's datasheets, (TF32, FP16/BF16), matched on
# nvidia-smi's name, most specific first. fp32 rungs count against the TF32 peak: cuDNN runs
# convolutions in TF32 by default (machine.txt shows the switch), and they are nearly all the FLOPs.
PEAKS = [
    ("H200 NVL", (417.5, 835.5)), ("H200", (494.7, 989.4)),
    ("H100 NVL", (417.5, 835.5)), ("H100 PCIe", (378.0, 756.0)), ("H100", (494.7, 989.4)),
    ("A100", (156.0, 312.0)),
]


def mib(b):
    return f"{b / 2**20:.0f} MiB" if isinstance(b, (int, float)) else "—"


def rungs():
    rows = []
    for line in text(out, "rungs.tsv").splitlines():
        f = line.split("\t")
        if len(f) == 5:
            rows.append({"name": f[0], "extras": f[1], "engine": f[2], "plain": f[3], "status": f[4]})
    order = text(out, "ladder.txt").split()  # the ladder's order; the script runs the most wanted rungs first
    return sorted(rows, key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))


def precision(flags):
    return "fp16" if "--fp16" in flags.split() else "bf16" if "--bf16" in flags.split() else "tf32"


machine = text(out, "machine.txt")
gpu_name = machine.splitlines()[0] if machine else "?"
peak = next((p for key, p in PEAKS if key in gpu_name), None)
print(f"# GPU acceptance: {gpu_name}\n")
print("```\n" + machine + "\n```\n")
print("Cohort's torch engine (standalone, 1 rank) beside a plain PyTorch script of the same step "
      "(bench/gpu/reference.py), run back to back per rung; synthetic data. img/s: the engine's median "
      "window, the plain script's timed steps; compile and warm-up never counted. Peak memory: the engine's "
      "`peakTensorBytes` (what Cohort reports) vs `torch.cuda.max_memory_allocated` in the plain script, both "
      "reset after warm-up. MFU: img/s × the step's FLOPs per image (FlopCounterMode) ÷ the GPU's dense "
      + (f"peak ({peak[0]:g} TFLOPS TF32, {peak[1]:g} FP16/BF16; NVIDIA's datasheet)" if peak else "peak (not known for this GPU: no MFU)") + ".\n")
print("| rung | step | Cohort img/s | plain img/s | Cohort / plain | MFU Cohort / plain | Cohort peak | plain max_memory_allocated | peak diff | GPU memory (this rank / device) | compile |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rungs():
    name = r["name"]
    step = f"`{r['plain']}`" if r["plain"] else "defaults (fp32, TF32 convolutions)"
    if r["status"] != "ran":
        print(f"| {name} | {step} | {r['status']} | | | | | | | | |")
        continue
    evs = events(out, f"engine-{name}.jsonl") or []
    steps = [e for e in evs if e.get("type") == "step"]
    err = first(evs, "error")
    rate = statistics.median(e["globalSamplesPerSec"] for e in steps) if steps else None
    mem = steps[-1]["memory"][0] if steps and steps[-1].get("memory") else {}
    comp = last(evs, "compile")
    ref = load_json(out, f"ref-{name}.json", {})
    plain = ref.get("imgPerSec")
    ratio = f"{rate / plain:.3f}" if rate and plain else "—"
    fpi, tflops = ref.get("flopsPerImage"), peak and peak[0 if precision(r["plain"]) == "tf32" else 1]
    mfu = " / ".join(f"{x * fpi / (tflops * 1e12) * 100:.1f}%" if x else "—" for x in (rate, plain)) if fpi and tflops else "—"
    pk, refpeak = mem.get("peakTensorBytes"), ref.get("maxMemoryAllocated")
    diff = f"{(pk / refpeak - 1) * 100:+.1f}%" if pk and refpeak else "—"
    gpu = f"{mib(mem.get('gpuProcessBytes'))} / {mib(mem.get('gpuUsedBytes'))} of {mib(mem.get('gpuTotalBytes'))}"
    cohort = f"{rate:.1f}" if rate else f"failed: {err['message'][:60]}" if err else "— (see engine-" + name + ".log)"
    compiled = f"{comp['status']}, {comp['durationMs'] / 1000:.1f} s (excluded)" if comp and comp.get("durationMs") is not None else "—"
    print(f"| {name} | {step} | {cohort} | {f'{plain:.1f}' if plain else '—'} | {ratio} | {mfu} | {mib(pk)} | {mib(refpeak)} | {diff} | {gpu} | {compiled} |")

print("\nchannels-last and all run the seeds' extras on both sides (engine COHORT_TORCH_EXTRAS=1, plain --extras: "
      "channels_last, cudnn.benchmark, fused AdamW, zero_grad(set_to_none=True)); the other rungs run neither. "
      "all = extras + AMP fp16 + torch.compile; its engine side runs with --warmup-steps 0 (the compile step is warm-up regardless). "
      "Anchors (img/s per GPU, ResNet-50 training): NVIDIA's PyTorch AMP on A100 ~2,470; MLPerf v4.0 ~7,160 per H100 and "
      "~7,950 per H200 (DALI, batch 400: the ceiling); PyTorch AMP + channels-last + compile, realistic: 4,500–5,500 per H100.")

w0 = events(out, "engine-all.jsonl") or []
w0_steps = [e for e in w0 if e.get("type") == "step"]
if w0_steps:
    rates = ", ".join(f"{e['globalSamplesPerSec']:.1f}" for e in w0_steps)
    print(f"\nall, engine at --warmup-steps 0: throughput per window (img/s): {rates}")

auto = events(out, "cli-auto.jsonl") or []
ah = first(auto, "hello")
if ah:
    print(f"\n`cohort run --engine auto`: engine {ah['engine']} on `{ah['device']}` ({ah.get('reason', '')})")

check = text(out, "check.txt", None)
if check is not None:
    print(f"\n`cohort check local` (exit {text(out, 'check.exit', '?')}):\n\n```\n{check}\n```")
elif text(out, "check.skipped", None) is not None:
    print("\n`cohort check local`: " + text(out, "check.skipped"))

tf = events(out, "tfjs.jsonl") or []
hello = first(tf, "hello")
if hello:
    steps = [e for e in tf if e.get("type") == "step"]
    rate = statistics.median(e["globalSamplesPerSec"] for e in steps) if steps else None
    warn = f" — NOT ON A GPU: {hello['deviceWarning']}" if hello.get("deviceWarning") else ""
    speed = f"median {rate:.1f} img/s" if rate else "no step finished"
    print(f"\ntfjs engine, backend {hello['backend']}: device `{hello['device']}`{warn}; {speed}")
    tcomp = last(events(out, "tfjs-compile.jsonl"), "compile")
    if tcomp:
        print(f"\ntfjs --compile: {tcomp['status']}: {tcomp['detail']}")
elif text(out, "tfjs.skipped", None) is not None:
    print("\ntfjs engine: " + text(out, "tfjs.skipped"))

elapsed = text(out, "elapsed.txt", None)
if elapsed:
    print(f"\nThe acceptance took {elapsed} s after the GPU check.")
