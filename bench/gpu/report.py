"""Reads the acceptance run's files (OUT/engine-RUNG.jsonl, OUT/ref-RUNG.json, OUT/tfjs.jsonl,
OUT/machine.txt) and prints the markdown table for bench/results/gpu-<machine>.md.

    python3 report.py OUT RUNG [RUNG ...]"""
import statistics
import sys

from run_files import events, first, last, load_json, text

out, rungs = sys.argv[1], sys.argv[2:]


def mib(b):
    return f"{b / 2**20:.0f} MiB" if isinstance(b, (int, float)) else "—"


machine = text(out, "machine.txt")
print(f"# GPU acceptance: {machine.splitlines()[0]}\n")
print("```\n" + machine + "\n```\n")
print("Cohort's torch engine (standalone, 1 rank) next to a plain PyTorch script of the same step "
      "(bench/gpu/reference.py). Peak memory: the engine's `peakTensorBytes` (what Cohort reports) vs "
      "`torch.cuda.max_memory_allocated` in the plain script, both reset after warm-up.\n")
print("| rung | Cohort img/s | plain img/s | Cohort / plain | Cohort peak | plain max_memory_allocated | peak diff | GPU memory (this rank / device) | compile |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rungs:
    evs = events(out, f"engine-{r}.jsonl") or []
    steps = [e for e in evs if e.get("type") == "step"]
    err = first(evs, "error")
    rate = statistics.median(e["globalSamplesPerSec"] for e in steps) if steps else None
    mem = steps[-1]["memory"][0] if steps and steps[-1].get("memory") else {}
    comp = first(evs, "compile")
    ref = load_json(out, f"ref-{r}.json", {})
    ratio = f"{rate / ref['imgPerSec']:.3f}" if rate and ref.get("imgPerSec") else "—"
    peak, refpeak = mem.get("peakTensorBytes"), ref.get("maxMemoryAllocated")
    diff = f"{(peak / refpeak - 1) * 100:+.1f}%" if peak and refpeak else "—"
    gpu = f"{mib(mem.get('gpuProcessBytes'))} / {mib(mem.get('gpuUsedBytes'))} of {mib(mem.get('gpuTotalBytes'))}"
    cohort = f"{rate:.1f}" if rate else f"failed: {err['message'][:60]}" if err else "—"
    plain = f"{ref['imgPerSec']:.1f}" if ref.get("imgPerSec") else "—"
    print(f"| {r} | {cohort} | {plain} | {ratio} | {mib(peak)} | {mib(refpeak)} | {diff} | {gpu} | {comp['status'] if comp else '—'} |")

print("\nfp16-channels-last and all run the seeds' extras on both sides (engine COHORT_TORCH_EXTRAS=1, plain --extras: "
      "channels_last, cudnn.benchmark, fused AdamW, zero_grad(set_to_none=True)); the other rungs run neither.")

w0 = events(out, "engine-compile-warmup0.jsonl") or []
w0_steps = [e for e in w0 if e.get("type") == "step"]
w0_comp = last(w0, "compile")
if w0:
    rates = ", ".join(f"{e['globalSamplesPerSec']:.1f}" for e in w0_steps) or "none"
    comp = f"{w0_comp['status']} in {w0_comp['durationMs'] / 1000:.1f} s" if w0_comp else "—"
    print(f"\n--compile --warmup-steps 0: compile {comp}; throughput per window (img/s): {rates}")

auto = events(out, "cli-auto.jsonl") or []
ah = first(auto, "hello")
if ah:
    print(f"\n`cohort run --engine auto`: engine {ah['engine']} on `{ah['device']}` ({ah.get('reason', '')})")

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
