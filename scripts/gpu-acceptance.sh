#!/usr/bin/env bash
# Cohort's GPU acceptance, for anyone with ONE NVIDIA GPU. Two ways to run it (one script):
#
#   from a clone:    ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install && bash scripts/gpu-acceptance.sh
#   from the kit:    bash scripts/device-kit.sh device-kit   (here), then on the GPU machine, offline,
#                    bash device-kit/gpu-acceptance.sh       (no Node, npm or network needed there)
#
# Knobs: IMG=224 BS=256 STEPS=50 LOG=10 WARM=10 PYTHON=python3 BUDGET_S=450 SKIP_TFJS=1 SKIP_CLI=1
#        OUT=DIR (raw files; default a temp directory, printed) RESULTS_DIR=DIR (default bench/results)
#        ONLY="compile probe" runs only the parts named (rungs: fp32 channels-last fp16 bf16 compile all;
#        product: cli-auto check bf16-cli probe tfjs), e.g. what one call's budget skipped, in a second
#        call; the others say "skipped: not in ONLY" in the table.
#
# Needs: nvidia-smi, a Python (PYTHON, default python3) with torch >= 2 built with CUDA, and
# torchvision. Node >= 20 and the built CLI for the parts that go through `cohort` (skipped, and
# said so, without them); the tfjs part also needs the npm registry and libtensorflow's download
# site (never from the kit: it is offline).
#
# Time: it fits one device call of <= 8 min on one H100/H200. It keeps its own budget (BUDGET_S,
# default 450 s after the GPU check): before each part it compares the part's estimate (EST_*
# below, from the published figures: README "GPU acceptance") with what is left, skips what no
# longer fits (the table says "skipped: time budget") and caps every process at what is left.
# The parts run most-wanted first; the table lists the ladder in its own order.
#
# What it runs, one rank throughout (two DDP ranks on one GPU are not a valid test):
# 0. preflight: GPU, driver, CUDA, torch, cuDNN, NCCL, TF32 switches, C compiler, Node (machine.txt).
# 1. the seeds' ladder at 224², batch 256, synthetic data, through Cohort's torch engine
#    (standalone), each rung beside the plain PyTorch script of the same step (bench/gpu/reference.py),
#    back to back: fp32 (cuDNN's default TF32 convolutions), channels-last (+ the seeds' extras),
#    AMP fp16, bf16, compile, all together (extras + fp16 + compile). The engine's side of "all"
#    runs with --warmup-steps 0: the compile step must stay out of throughput anyway. Memory per
#    rung by GPU UUID; FLOPs per image (torch's FlopCounterMode) for an MFU estimate.
# 2. through the product: `cohort run --local --engine auto` (the CUDA torch must win);
#    `cohort check local` when this build has the command; `--engine torch --bf16` (the agent's
#    pre-launch check against the GPU's compute capability); `cohort probe local`.
# 3. the tfjs engine on tfjs-node-gpu where it installs (not from the kit).
# 4. the table: RESULTS_DIR/gpu-<machine>.md (report.py), then PASS/FAIL per claim (checks.py).
# Exit codes: 0 done and every check passed, 1 a check failed (see the table), 77 no NVIDIA GPU here
# (skipped), 2 the machine lacks what the run needs.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)

# ---- is there a GPU at all? (one line, exit 77, the automake "skipped" code) --------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
  echo "gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo 'lists no GPU' || echo 'not found'))"
  exit 77
fi
SECONDS=0

# ---- ONLY: the parts to run (all by default); a name it does not know stops here, before any GPU work
PARTS="fp32 channels-last fp16 bf16 compile all cli-auto check bf16-cli probe tfjs"
ONLY=$(echo "${ONLY:-}" | tr ',' ' ' | xargs)
for p in $ONLY; do
  [[ " $PARTS " == *" $p "* ]] || { echo "gpu-acceptance: ONLY names '$p', which is not a part; the parts: $PARTS"; exit 2; }
done
wanted() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

PY=${PYTHON:-python3}
IMG=${IMG:-224} BS=${BS:-256} STEPS=${STEPS:-50} LOG=${LOG:-10} WARM=${WARM:-10} BUDGET_S=${BUDGET_S:-450}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/cohort-gpu-acceptance.XXXXXX")}
mkdir -p "$OUT"
: > "$OUT/rungs.tsv"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONUNBUFFERED=1
# Cohort's own state for the CLI runs stays in $OUT: the user's profiles and history are not touched.
export COHORT_DATA_DIR=$OUT/cohort-data COHORT_CONFIG_DIR=$OUT/cohort-config
# The torch engine: the built copy (it reads train-config.json, which the build writes beside it).
ENGINE=${ENGINE:-$REPO/resources/trainer/engines/torch_engine.py}
CLI=$REPO/dist/cli.mjs

# ---- the time budget ------------------------------------------------------------------------------
# Estimates per part on an H100 at the defaults, in seconds (README "GPU acceptance" derives them):
# each side of a rung starts Python + torch + CUDA (~12 s) then runs STEPS steps of batch 256; a
# compiled side adds torch.compile of ResNet-50's training step (~60 s cold, ~25 s once the
# inductor/triton caches hold the kernels).
EST_FP32=40 EST_CL=40 EST_FP16=30 EST_BF16=30 EST_COMPILE=120 EST_ALL=115 EST_CLI=40 EST_BF16CLI=25 EST_CHECK=20 EST_PROBE=15
left() { echo $((BUDGET_S - SECONDS)); }
fits() { [ "$(left)" -ge "$1" ]; } # fits EST: the part still fits in what is left
capped() { timeout -k 5 "$(( $(left) > 20 ? $(left) : 20 ))" "$@"; } # a process never outlives the budget by more than 20 s

# ---- 0. preflight: the machine ---------------------------------------------------------------
{
  # compute_cap asked apart: a driver before R510 rejects the field (and says so on stdout)
  { G=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null) ||
      G=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader); echo "$G" | head -n 1; }
  nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -n 1
  "$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available())'
  "$PY" -c 'import torch; n = torch.cuda.nccl.version() if torch.cuda.is_available() and hasattr(torch.cuda, "nccl") else None; print("nccl", ".".join(map(str, n)) if isinstance(n, tuple) else n, "tf32 cudnn", getattr(torch.backends.cudnn, "allow_tf32", "?"), "tf32 matmul", getattr(torch.backends.cuda.matmul, "allow_tf32", "?"))'
  # torch.compile's triton backend builds small C launchers at run time: without a compiler it fails (and falls back, said in the table)
  echo "c compiler $({ gcc --version 2>/dev/null || cc --version 2>/dev/null; } | head -n 1 | grep . || echo 'none (torch.compile needs one)')"
  echo "node $(node --version 2>/dev/null || echo 'not found')${COHORT_KIT:+ (from the device kit)}"
} > "$OUT/machine.txt" 2>&1
sed 's/^/preflight: /' "$OUT/machine.txt"
"$PY" -c 'import sys, torch, torchvision; sys.exit(0 if torch.cuda.is_available() and int(torch.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null ||
  { echo "gpu-acceptance: $PY needs torch >= 2 built with CUDA, and torchvision (set PYTHON=...; see $OUT/machine.txt)"; exit 2; }
[ -f "$ENGINE" ] && [ -f "$(dirname "$ENGINE")/train-config.json" ] ||
  { echo "gpu-acceptance: no built torch engine at $ENGINE: run 'ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install' (or npm run build) in $REPO first"; exit 2; }
HAVE_CLI=0
if [ "${SKIP_CLI:-0}" = 1 ]; then echo "preflight: SKIP_CLI=1: the cohort run / check / probe / tfjs parts are skipped (their checks say SKIP)"
elif node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null && [ -f "$CLI" ]; then HAVE_CLI=1
else echo "preflight: no Node >= 20 or no built CLI ($CLI): the cohort run / check / probe / tfjs parts are skipped (their checks say SKIP)"; fi
# The GPUs by nvidia-smi's index and UUID (compute_cap asked apart: drivers before R510 reject it), and
# what the ranks were told to use: the checks match each rank's reported device against these.
nvidia-smi --query-gpu=index,uuid,name,compute_cap --format=csv,noheader,nounits > "$OUT/gpus.csv" 2>/dev/null ||
  nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader,nounits > "$OUT/gpus.csv"
echo "$CUDA_VISIBLE_DEVICES" > "$OUT/visible.txt"
MACHINE=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
engine() { # engine NAME EXTRAS(0|1) [flags...]: one standalone rank of the torch engine, events to engine-NAME.jsonl
  local name=$1 extras=$2; shift 2
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)) RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 COHORT_HOST=${HOSTNAME:-$(uname -n)} COHORT_TORCH_EXTRAS=$extras \
    capped "$PY" "$ENGINE" "$@" > "$OUT/engine-$name.jsonl" 2> "$OUT/engine-$name.log"
}

# ---- 1. the ladder: Cohort's engine and the plain script, rung by rung ----------------------
SHAPE=(--image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --log-steps "$LOG" --warmup-steps "$WARM")
rung() { # rung NAME EST EXTRAS(0|1) ENGINE_FLAGS -- REFERENCE_FLAGS; one line per rung in rungs.tsv
  local name=$1 est=$2 extras=$3; shift 3
  local eflags=() rflags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do eflags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rflags=("$@")
  if ! wanted "$name"; then
    echo "rung $name: skipped: not in ONLY=\"$ONLY\""
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$extras" "${eflags[*]}" "${rflags[*]}" "skipped: not in ONLY=\"$ONLY\"" >> "$OUT/rungs.tsv"
    return
  fi
  if ! fits "$est"; then
    echo "rung $name: skipped: time budget ($(left) s left of BUDGET_S=$BUDGET_S, the rung needs ~$est s)"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$extras" "${eflags[*]}" "${rflags[*]}" "skipped: time budget ($(left) s left, ~$est s needed)" >> "$OUT/rungs.tsv"
    return
  fi
  echo "rung $name: engine ${eflags[*]} (COHORT_TORCH_EXTRAS=$extras); plain ${rflags[*]} [$SECONDS s]"
  engine "$name" "$extras" "${SHAPE[@]}" "${eflags[@]}"
  capped "$PY" "$REPO/bench/gpu/reference.py" --image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --warmup-steps "$WARM" "${rflags[@]}" > "$OUT/ref-$name.json" 2> "$OUT/ref-$name.log"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$extras" "${eflags[*]}" "${rflags[*]}" ran >> "$OUT/rungs.tsv"
}

# ---- 2. through the product (cohort run / check / probe) --------------------------------------
cli_auto() {
  # auto: no COHORT_PYTHON, so the agent searches (system, PATH, venvs, conda) and must prefer a CUDA
  # torch over any CPU torch it also finds; $PY's folder goes first on PATH so a venv's python is seen.
  local py_bin
  py_bin=$(dirname "$(command -v "$PY")")
  echo "cohort run --local --engine auto (must pick a CUDA torch; PATH starts with $py_bin) [$SECONDS s]"
  (unset COHORT_PYTHON; PATH="$py_bin:$PATH" capped node "$CLI" run --local --engine auto --image-size 64 --batch-size 16 --steps 6 --log-steps 3 --warmup-steps 1 --json > "$OUT/cli-auto.jsonl" 2> "$OUT/cli-auto.log")
}
cli_bf16() { # the agent's pre-launch check against the GPU's compute capability (allowed on >= 8.0, refused below)
  echo "cohort run --local --engine torch --bf16 [$SECONDS s]"
  COHORT_PYTHON=$PY capped node "$CLI" run --local --engine torch --bf16 --image-size 64 --batch-size 8 --steps 6 --log-steps 3 --warmup-steps 1 --json > "$OUT/bf16-cli.jsonl" 2> "$OUT/bf16-cli.log"
  echo $? > "$OUT/bf16-cli.exit"
}
cli_check() {
  # `cohort check` (the cluster doctor) only where this build has it: an unknown command exits 2.
  if ! node "$CLI" check --help > /dev/null 2>&1; then
    echo "skipped: this build of cohort has no 'check' command" > "$OUT/check.skipped"; echo "cohort check local: $(cat "$OUT/check.skipped")"; return
  fi
  echo "cohort check local [$SECONDS s]"
  COHORT_PYTHON=$PY capped node "$CLI" check local > "$OUT/check.txt" 2>&1
  echo $? > "$OUT/check.exit"
}
part() { # part EST NAME FUNCTION: runs FUNCTION when the CLI is there and it fits the budget
  if [ "$HAVE_CLI" != 1 ]; then return; fi
  if ! wanted "$2"; then echo "skipped: not in ONLY=\"$ONLY\"" > "$OUT/$2.skipped"; echo "$2: $(cat "$OUT/$2.skipped")"; return; fi
  if fits "$1"; then "$3"; else echo "skipped: time budget ($(left) s left, ~$1 s needed)" > "$OUT/$2.skipped"; echo "$2: $(cat "$OUT/$2.skipped")"; fi
}
cli_probe() { echo "cohort probe local [$SECONDS s]"; COHORT_PYTHON=$PY capped node "$CLI" probe local > "$OUT/probe.txt" 2>&1; }

# Most wanted first (the headline rung and the auto-pick); a slow compile then costs the rest, not these.
echo "fp32 channels-last fp16 bf16 compile all" > "$OUT/ladder.txt" # the table's order
rung fp32 "$EST_FP32" 0 --
part "$EST_CLI" cli-auto cli_auto
rung all "$EST_ALL" 1 --fp16 --compile --warmup-steps 0 -- --fp16 --extras --compile
rung fp16 "$EST_FP16" 0 --fp16 -- --fp16
rung bf16 "$EST_BF16" 0 --bf16 -- --bf16
rung channels-last "$EST_CL" 1 -- --extras
part "$EST_CHECK" check cli_check
rung compile "$EST_COMPILE" 0 --compile -- --compile
part "$EST_BF16CLI" bf16-cli cli_bf16
part "$EST_PROBE" probe cli_probe

# ---- 3. tfjs on tfjs-node-gpu, where it installs (never from the kit: it is offline) ------------
# A small shape: on a stock CUDA 12 host libtensorflow 2.9.1 (CUDA 11.2 + cuDNN 8.1) falls back to
# the CPU, and 224² there would take tens of minutes to say so.
TFJS_SHAPE=(--image-size 64 --batch-size 32 --steps 20 --log-steps 5 --warmup-steps 2)
if [ -n "${COHORT_KIT:-}" ]; then echo "skipped: the device kit runs offline, and tfjs-node-gpu installs from the npm registry and downloads libtensorflow (CUDA 11.2, no Hopper kernels)" > "$OUT/tfjs.skipped"
elif [ "${SKIP_TFJS:-0}" = 1 ]; then echo "skipped (SKIP_TFJS=1)" > "$OUT/tfjs.skipped"
elif ! wanted tfjs; then echo "skipped: not in ONLY=\"$ONLY\"" > "$OUT/tfjs.skipped"
elif [ "$HAVE_CLI" != 1 ]; then echo "skipped: needs Node >= 20 and a built clone (ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install), and not SKIP_CLI=1" > "$OUT/tfjs.skipped"
elif ! fits 120; then echo "skipped: time budget ($(left) s left, ~120 s needed)" > "$OUT/tfjs.skipped"
elif ! { mkdir -p "$OUT/runtime" && echo '{"private":true}' > "$OUT/runtime/package.json" &&
          capped npm install --prefix "$OUT/runtime" --no-audit --no-fund @tensorflow/tfjs-node-gpu@4.22.0; } > "$OUT/tfjs-install.log" 2>&1; then
  echo "skipped: npm install @tensorflow/tfjs-node-gpu@4.22.0 failed (see tfjs-install.log; arm64 has no GPU build)" > "$OUT/tfjs.skipped"
else
  echo "tfjs: cohort run --local --engine tfjs --backend tensorflow, then the same with --compile"
  COHORT_RUNTIME_DIR=$OUT/runtime capped node "$CLI" run --local --json --engine tfjs --backend tensorflow "${TFJS_SHAPE[@]}" > "$OUT/tfjs.jsonl" 2> "$OUT/tfjs.log"
  COHORT_RUNTIME_DIR=$OUT/runtime capped node "$CLI" run --local --json --engine tfjs --backend tensorflow --compile "${TFJS_SHAPE[@]}" > "$OUT/tfjs-compile.jsonl" 2> "$OUT/tfjs-compile.log"
fi

# ---- 4. the table -----------------------------------------------------------------------------
echo "$SECONDS" > "$OUT/elapsed.txt"
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results}
mkdir -p "$RESULTS_DIR"
RESULT=$RESULTS_DIR/gpu-$MACHINE.md
"$PY" "$REPO/bench/gpu/report.py" "$OUT" > "$RESULT"
echo >> "$RESULT"
"$PY" "$REPO/bench/gpu/checks.py" "$OUT" >> "$RESULT"
CHECKS=$?
cat "$RESULT"
echo "raw files: $OUT; $SECONDS s after the GPU check"
[ "$CHECKS" = 0 ] || { echo "gpu-acceptance: some checks FAILED (see above)"; exit 1; }
