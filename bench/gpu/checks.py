"""The GPU acceptance's checks of what Cohort reports about the GPU (issue 13), read from the run's
files. One line per check, PASS / FAIL / SKIP with the numbers; exit 1 when any check fails.

    python3 checks.py OUT

Reads (written by scripts/gpu-acceptance.sh): gpus.csv (nvidia-smi index, uuid, name[, compute_cap]),
visible.txt (the CUDA_VISIBLE_DEVICES the ranks ran under), rungs.tsv (the ladder: which rungs ran),
engine-RUNG.jsonl and ref-RUNG.json per rung (engine-all.jsonl: --compile at --warmup-steps 0;
engine-bf16.jsonl: the engine with --bf16), cli-auto.jsonl (a Cohort run with --engine auto),
bf16-cli.jsonl + bf16-cli.exit (a Cohort run with --engine torch --bf16: the agent's pre-launch
check), check.txt + check.exit or
check.skipped (cohort check local), probe.txt (cohort probe local), tfjs.jsonl and tfjs-compile.jsonl
(the tfjs engine on tfjs-node-gpu, without and with --compile)."""
import json
import sys

import run_files
from run_files import first, last

out = sys.argv[1]
results = []


def check(name, ok, detail):
    results.append(("PASS" if ok else "FAIL") if ok is not None else "SKIP")
    print(f"- {results[-1]} {name}: {detail}")


def events(name):
    return run_files.events(out, name)


def read(name, default=""):
    return run_files.text(out, name, default)


gpus = []
for line in read("gpus.csv").splitlines():
    f = [s.strip() for s in line.split(",")]
    if len(f) >= 3 and f[0].isdigit():
        gpus.append({"index": int(f[0]), "uuid": f[1], "name": f[2], "cc": f[3] if len(f) > 3 and f[3][:1].isdigit() else None})
visible = read("visible.txt").split(",")[0].strip()
mine = next((g for g in gpus if (visible.isdigit() and g["index"] == int(visible)) or (not visible.isdigit() and visible and g["uuid"].startswith(visible))), None)
print(f"# Checks (GPU under test: {mine['name'] + ' ' + mine['uuid'] + ', index ' + str(mine['index']) if mine else 'not found in gpus.csv for CUDA_VISIBLE_DEVICES=' + visible})\n")

# ---- torch engine: which device each rank really used, and its own memory -------------------------
for line in read("rungs.tsv").splitlines():
    rung, status = line.split("\t")[0], line.split("\t")[-1]
    if status != "ran":
        check(f"{rung}: engine ran", None, status)
        continue
    evs = events(f"engine-{rung}.jsonl")
    if evs is None:
        check(f"{rung}: engine ran", None, "no engine output")
        continue
    plan, hello = first(evs, "plan"), first(evs, "hello")
    steps = [e for e in evs if e.get("type") == "step"]
    r0 = (plan or {}).get("ranks", [{}])[0]
    check(f"{rung}: plan names the GPU the rank used", bool(mine) and r0.get("gpuUuid") == mine["uuid"] and r0.get("gpu") == mine["index"] and str(r0.get("device", "")).startswith("cuda:"),
          f"plan.ranks[0] = {json.dumps(r0)}; nvidia-smi: {mine['uuid'] if mine else '?'} index {mine['index'] if mine else '?'}")
    check(f"{rung}: hello names it too", bool(mine) and mine["uuid"] in str((hello or {}).get("device", "")), f"hello.device = {(hello or {}).get('device')!r}")
    if not steps:
        check(f"{rung}: step events", False, "no step event")
        continue
    m = steps[-1]["memory"][0]
    t, pk, rs, proc, used, tot = (m.get(k) for k in ("tensorBytes", "peakTensorBytes", "reservedBytes", "gpuProcessBytes", "gpuUsedBytes", "gpuTotalBytes"))
    check(f"{rung}: allocator figures are this rank's (tensor ≤ peak, tensor ≤ reserved)", all(isinstance(x, (int, float)) for x in (t, pk, rs)) and 0 < t <= pk and t <= rs,
          f"tensorBytes {t}, peakTensorBytes {pk}, reservedBytes {rs}")
    check(f"{rung}: this process's bytes on its GPU (nvidia-smi, by pid and UUID) sit between its allocator and the device",
          isinstance(proc, (int, float)) and isinstance(used, (int, float)) and t <= proc <= used <= (tot or 0) and m.get("gpuUuid") == r0.get("gpuUuid"),
          f"gpuProcessBytes {proc}, gpuUsedBytes {used}, gpuTotalBytes {tot}, gpuUuid {m.get('gpuUuid')}"
          + ("" if proc is not None else " (absent: nvidia-smi listed no process with the rank's pid; in a container without the host's PID namespace it cannot)"))
    ref = run_files.load_json(out, f"ref-{rung}.json", {})
    rp = ref.get("maxMemoryAllocated")
    check(f"{rung}: peak (reset after warm-up) within 25% of the plain script's max_memory_allocated", (abs(pk / rp - 1) <= 0.25) if pk and rp else None,
          f"Cohort {pk} vs plain {rp}" + (f" ({(pk / rp - 1) * 100:+.1f}%)" if pk and rp else ""))

# ---- torch.compile with --warmup-steps 0 (the "all" rung's engine side): the compile step is warm-up ---
evs = events("engine-all.jsonl")
comp, warm = last(evs, "compile"), first(evs, "warmup")
wsteps = [e for e in evs or [] if e.get("type") == "step"]
if not evs:
    check("compile, --warmup-steps 0: compile kept out of throughput", None, "not run")
elif not (comp and comp.get("status") == "ok" and wsteps):
    check("compile, --warmup-steps 0: compile kept out of throughput", False, f"compile event {json.dumps(comp)}, {len(wsteps)} step event(s)")
else:
    s0 = wsteps[0]
    # The first window ran (step - warm-up steps) steps of stepTimeMs each and ended at its event's time.
    opened = s0["time"] - s0["stepTimeMs"] * (s0["step"] - (warm or {}).get("steps", 0))
    later = [e["globalSamplesPerSec"] for e in wsteps[1:]]
    ratio = s0["globalSamplesPerSec"] / sorted(later)[len(later) // 2] if later else None
    check("compile, --warmup-steps 0: compile kept out of throughput", bool(warm) and warm.get("steps", 0) >= 1 and opened >= comp["time"] - 250,
          f"compile {comp['durationMs'] / 1000:.1f} s; warmup {json.dumps(warm)}; first window opened {(opened - comp['time']) / 1000:+.2f} s after the compile event"
          + (f"; first window {ratio:.2f}x the median of the later ones" if ratio else ""))

# ---- engine auto-pick through a real Cohort run: a CUDA torch wins ------------------------------------
auto = events("cli-auto.jsonl")
ah, ad = first(auto, "hello"), first(auto, "done")
if auto is None:
    check("cohort run --engine auto picks the CUDA torch and trains on the GPU", None, "not run")
else:
    check("cohort run --engine auto picks the CUDA torch and trains on the GPU",
          bool(ah) and ah.get("engine") == "torch" and bool(mine) and mine["uuid"] in str(ah.get("device", "")) and bool(ad) and ad.get("status") == "ok",
          f"hello.engine {(ah or {}).get('engine')!r}, device {(ah or {}).get('device')!r}, reason {str((ah or {}).get('reason'))[:200]!r}; done {(ad or {}).get('status')}")

# ---- bf16: the engine's rule, the agent's pre-launch check, the probe -------------------------------
cc = mine and mine["cc"]
native = None if not cc else tuple(int(x) for x in cc.split(".")) >= (8, 0)
hello = first(events("engine-bf16.jsonl"), "hello")
cap = ((hello or {}).get("capabilities") or {}).get("bf16", {})
check("engine --bf16 follows compute capability", (cap.get("available") == native) if hello and native is not None else None,
      f"compute_cap {cc}, capabilities.bf16 = {json.dumps(cap)}")
cli = events("bf16-cli.jsonl")
err, done = first(cli, "error"), first(cli, "done")
if cli is None or native is None:
    check("agent refuses or allows --bf16 before launch", None, "not run" if cli is None else "compute_cap unknown (driver before R510)")
elif native:
    check("agent allows --bf16 on a ≥ 8.0 GPU and the run finishes", bool(done) and done.get("status") == "ok" and not err, f"exit {read('bf16-cli.exit')}, error {json.dumps(err)}")
else:
    check("agent refuses --bf16 on a < 8.0 GPU before any rank, naming it", bool(err) and err.get("code") == "bf16-unsupported" and mine["uuid"] in err.get("message", "") and not first(cli, "hello"),
          f"exit {read('bf16-cli.exit')}, error {json.dumps(err)}")
probe = read("probe.txt", None)
if probe is None:  # not run (time budget, ONLY, no CLI): a SKIP that says why, not a FAIL
    check("cohort probe shows the compute capability", None, read("probe.skipped", "not run"))
else:
    check("cohort probe shows the compute capability", (f"cc {cc}" in probe) if cc else None, probe.splitlines()[0][:300] if probe else "no probe output")

# ---- the cluster doctor on this machine, where this build has it -----------------------------------
doctor = read("check.txt", None)
check("cohort check local finds nothing wrong", (read("check.exit") == "0") if doctor is not None else None,
      f"exit {read('check.exit')}: {doctor.splitlines()[0][:300] if doctor else 'no output'}" if doctor is not None else read("check.skipped", "not run"))

# ---- tfjs on tfjs-node-gpu --------------------------------------------------------------------------
tf = events("tfjs.jsonl")
th = first(tf, "hello")
if not th:
    check("tfjs engine", None, read("tfjs.skipped", "not run"))
else:
    on_gpu = not th.get("deviceWarning") and th.get("backend") == "tensorflow"
    tp = first(tf, "plan") or {}
    tsteps = [e for e in tf if e.get("type") == "step"]
    tm = tsteps[-1]["memory"][0] if tsteps else {}
    check("tfjs: plan names the GPU (UUID) when the binding reports one", (bool(mine) and (tp.get("ranks") or [{}])[0].get("gpuUuid") == mine["uuid"]) if on_gpu else None,
          f"deviceWarning {th.get('deviceWarning')!r}; plan.ranks[0] = {json.dumps((tp.get('ranks') or [{}])[0])}")
    check("tfjs: true peak ≥ resident tensor bytes", bool(tm) and tm.get("peakTensorBytes", 0) >= tm.get("tensorBytes", 1), f"tensorBytes {tm.get('tensorBytes')}, peakTensorBytes {tm.get('peakTensorBytes')}")
    check("tfjs: this process's own bytes on its GPU", isinstance(tm.get("gpuProcessBytes"), (int, float)) if on_gpu else None, f"gpuProcessBytes {tm.get('gpuProcessBytes')}, gpuUuid {tm.get('gpuUuid')}")

tc = events("tfjs-compile.jsonl")
tch, tcc = first(tc, "hello"), last(tc, "compile")  # the last: kernel selection reports progress as "running" first
if not tch:
    check("tfjs --compile on libtensorflow: timed in wall time with the device synchronised", None, read("tfjs.skipped", "not run"))
else:
    check("tfjs --compile on libtensorflow: timed in wall time with the device synchronised",
          tch.get("backend") == "tensorflow" and bool(tcc) and tcc.get("status") == "ok" and " ms wall" in tcc.get("detail", ""),
          f"backend {tch.get('backend')!r}, device {tch.get('device')!r}; compile {(tcc or {}).get('status')}: {str((tcc or {}).get('detail'))[:240]!r}")

print(f"\n{results.count('PASS')} passed, {results.count('FAIL')} failed, {results.count('SKIP')} skipped")
sys.exit(1 if "FAIL" in results else 0)
