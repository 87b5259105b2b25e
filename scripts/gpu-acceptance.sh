#!/usr/bin/env bash
# Cohort's GPU acceptance, for anyone with ONE NVIDIA GPU, run from a fresh clone:
#
#   ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install     # also builds (prepare: npm run build); the app's Electron binary is not needed
#   bash scripts/gpu-acceptance.sh                  # knobs: IMG=224 BS=64 STEPS=60 LOG=10 WARM=5 PYTHON=python3 SKIP_TFJS=1 SKIP_CLI=1
#                                                   #        OUT=DIR (raw files) RESULTS_DIR=DIR (default bench/results)
#
# Needs: nvidia-smi, a Python (PYTHON, default python3) with torch >= 2 built with CUDA, and
# torchvision. Node >= 20 and the built CLI for the parts that go through `cohort run` (skipped,
# and said so, without them); the tfjs part also needs the npm registry and libtensorflow's
# download site. Roughly 15-30 min on an A100/H100 (torch.compile compiles several times).
#
# What it runs, one rank throughout (two DDP ranks on one GPU are not a valid test):
# 0. preflight: GPU, driver, CUDA, torch/CUDA/cuDNN, Node, on the terminal and in machine.txt.
# 1. the seeds' ladder through Cohort's torch engine (standalone), each rung next to a plain PyTorch
#    script of the same step (bench/gpu/reference.py): native, compile, fp16, fp16 + channels-last
#    (with the seeds' extras: COHORT_TORCH_EXTRAS=1 / reference --extras), all; peak memory as Cohort
#    reports it vs torch.cuda.max_memory_allocated. Plus --compile --warmup-steps 0 (compile must
#    not land in the first throughput window).
# 2. through the product (`cohort run --local`): --engine auto must pick the CUDA torch; --bf16
#    against the GPU's compute capability (the agent's pre-launch check); `cohort probe local`.
# 3. the tfjs engine on tfjs-node-gpu where it installs (its hello says which device it really
#    used), and its --compile (timed in wall time with the device synchronised).
# 4. the table: bench/results/gpu-<machine>.md (report.py; RESULTS_DIR moves it), then PASS/FAIL per claim (checks.py).
# Raw files go to $OUT (default: a temp directory, printed).
# Exit codes: 0 done and every check passed, 1 a check failed (see the table), 77 no NVIDIA GPU here
# (skipped), 2 the machine lacks what the run needs.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)

# ---- is there a GPU at all? (one line, exit 77, the automake "skipped" code) --------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
  echo "gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo 'lists no GPU' || echo 'not found'))"
  exit 77
fi

PY=${PYTHON:-python3}
IMG=${IMG:-224} BS=${BS:-64} STEPS=${STEPS:-60} LOG=${LOG:-10} WARM=${WARM:-5}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/cohort-gpu-acceptance.XXXXXX")}
mkdir -p "$OUT"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONUNBUFFERED=1
# Cohort's own state for the CLI runs stays in $OUT: the user's profiles and history are not touched.
export COHORT_DATA_DIR=$OUT/cohort-data COHORT_CONFIG_DIR=$OUT/cohort-config
# The torch engine: the built copy (it reads train-config.json, which the build writes beside it).
ENGINE=${ENGINE:-$REPO/resources/trainer/engines/torch_engine.py}
CLI=$REPO/dist/cli.mjs

# ---- 0. preflight: the machine ---------------------------------------------------------------
{
  # compute_cap asked apart: a driver before R510 rejects the field (and says so on stdout)
  { G=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null) ||
      G=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader); echo "$G" | head -n 1; }
  nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -n 1
  "$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available())'
  echo "node $(node --version 2>/dev/null || echo 'not found')"
} > "$OUT/machine.txt" 2>&1
sed 's/^/preflight: /' "$OUT/machine.txt"
"$PY" -c 'import sys, torch, torchvision; sys.exit(0 if torch.cuda.is_available() and int(torch.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null ||
  { echo "gpu-acceptance: $PY needs torch >= 2 built with CUDA, and torchvision (set PYTHON=...; see $OUT/machine.txt)"; exit 2; }
[ -f "$ENGINE" ] && [ -f "$(dirname "$ENGINE")/train-config.json" ] ||
  { echo "gpu-acceptance: no built torch engine at $ENGINE: run 'ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install' (or npm run build) in $REPO first"; exit 2; }
HAVE_CLI=0
if [ "${SKIP_CLI:-0}" = 1 ]; then echo "preflight: SKIP_CLI=1: the cohort run / probe / tfjs parts are skipped (their checks say SKIP)"
elif node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null && [ -f "$CLI" ]; then HAVE_CLI=1
else echo "preflight: no Node >= 20 or no built CLI ($CLI): the cohort run / probe / tfjs parts are skipped (their checks say SKIP)"; fi
# The GPUs by nvidia-smi's index and UUID (compute_cap asked apart: drivers before R510 reject it), and
# what the ranks were told to use: the checks match each rank's reported device against these.
nvidia-smi --query-gpu=index,uuid,name,compute_cap --format=csv,noheader,nounits > "$OUT/gpus.csv" 2>/dev/null ||
  nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader,nounits > "$OUT/gpus.csv"
echo "$CUDA_VISIBLE_DEVICES" > "$OUT/visible.txt"
MACHINE=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
engine() { # engine NAME EXTRAS(0|1) [flags...]: one standalone rank of the torch engine, events to engine-NAME.jsonl
  local name=$1 extras=$2; shift 2
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)) RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 COHORT_HOST=${HOSTNAME:-$(uname -n)} COHORT_TORCH_EXTRAS=$extras \
    "$PY" "$ENGINE" "$@" > "$OUT/engine-$name.jsonl" 2> "$OUT/engine-$name.log"
}

# ---- 1. the ladder: Cohort's engine and the plain script, rung by rung ----------------------
SHAPE=(--image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --log-steps "$LOG" --warmup-steps "$WARM")
rung() { # rung NAME EXTRAS(0|1) ENGINE_FLAGS -- REFERENCE_FLAGS
  local name=$1 extras=$2; shift 2
  local eflags=() rflags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do eflags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rflags=("$@")
  echo "rung $name: engine ${eflags[*]} (COHORT_TORCH_EXTRAS=$extras); plain ${rflags[*]}"
  engine "$name" "$extras" "${SHAPE[@]}" "${eflags[@]}"
  "$PY" "$REPO/bench/gpu/reference.py" --image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --warmup-steps "$WARM" "${rflags[@]}" > "$OUT/ref-$name.json" 2> "$OUT/ref-$name.log"
}
rung native 0 --
rung compile 0 --compile -- --compile
rung fp16 0 --fp16 -- --fp16
rung fp16-channels-last 1 --fp16 -- --fp16 --extras
rung all 1 --fp16 --compile -- --fp16 --extras --compile
echo "compile with --warmup-steps 0: the compile step must stay out of the first throughput window"
engine compile-warmup0 0 --image-size "$IMG" --batch-size "$BS" --steps 30 --log-steps 10 --warmup-steps 0 --compile

# ---- 1b. bf16: the engine's own rule ------------------------------------------------------------
echo "bf16: engine --bf16"
engine bf16 1 "${SHAPE[@]}" --bf16

# ---- 2. through the product: engine auto-pick, the agent's --bf16 check, the probe -------------
if [ "$HAVE_CLI" = 1 ]; then
  # auto: no COHORT_PYTHON, so the agent searches (system, PATH, venvs, conda) and must prefer a CUDA
  # torch over any CPU torch it also finds; $PY's folder goes first on PATH so a venv's python is seen.
  PY_BIN=$(dirname "$(command -v "$PY")")
  echo "cohort run --local --engine auto (must pick a CUDA torch; PATH starts with $PY_BIN)"
  env -u COHORT_PYTHON PATH="$PY_BIN:$PATH" node "$CLI" run --local --engine auto --image-size 64 --batch-size 16 --steps 6 --log-steps 3 --warmup-steps 1 --json > "$OUT/cli-auto.jsonl" 2> "$OUT/cli-auto.log"
  echo "cohort run --local --engine torch --bf16; cohort probe local"
  COHORT_PYTHON=$PY node "$CLI" run --local --engine torch --bf16 --image-size 64 --batch-size 8 --steps 6 --log-steps 3 --warmup-steps 1 --json > "$OUT/bf16-cli.jsonl" 2> "$OUT/bf16-cli.log"
  echo $? > "$OUT/bf16-cli.exit"
  COHORT_PYTHON=$PY node "$CLI" probe local > "$OUT/probe.txt" 2>&1
fi

# ---- 3. tfjs on tfjs-node-gpu, where it installs ----------------------------------------------
# A small shape: on a stock CUDA 12 host libtensorflow 2.9.1 (CUDA 11.2 + cuDNN 8.1) falls back to
# the CPU, and 224² batch 64 there would take tens of minutes to say so.
TFJS_SHAPE=(--image-size 64 --batch-size 32 --steps 20 --log-steps 5 --warmup-steps 2)
if [ "${SKIP_TFJS:-0}" = 1 ]; then echo "skipped (SKIP_TFJS=1)" > "$OUT/tfjs.skipped"
elif [ "$HAVE_CLI" != 1 ]; then echo "skipped: needs Node >= 20 and a built clone (ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm install), and not SKIP_CLI=1" > "$OUT/tfjs.skipped"
elif ! { mkdir -p "$OUT/runtime" && echo '{"private":true}' > "$OUT/runtime/package.json" &&
          npm install --prefix "$OUT/runtime" --no-audit --no-fund @tensorflow/tfjs-node-gpu@4.22.0; } > "$OUT/tfjs-install.log" 2>&1; then
  echo "skipped: npm install @tensorflow/tfjs-node-gpu@4.22.0 failed (see tfjs-install.log; arm64 has no GPU build)" > "$OUT/tfjs.skipped"
else
  echo "tfjs: cohort run --local --engine tfjs --backend tensorflow, then the same with --compile"
  COHORT_RUNTIME_DIR=$OUT/runtime node "$CLI" run --local --json --engine tfjs --backend tensorflow "${TFJS_SHAPE[@]}" > "$OUT/tfjs.jsonl" 2> "$OUT/tfjs.log"
  COHORT_RUNTIME_DIR=$OUT/runtime node "$CLI" run --local --json --engine tfjs --backend tensorflow --compile "${TFJS_SHAPE[@]}" > "$OUT/tfjs-compile.jsonl" 2> "$OUT/tfjs-compile.log"
fi

# ---- 4. the table -----------------------------------------------------------------------------
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results}
mkdir -p "$RESULTS_DIR"
RESULT=$RESULTS_DIR/gpu-$MACHINE.md
"$PY" "$REPO/bench/gpu/report.py" "$OUT" native compile fp16 fp16-channels-last all > "$RESULT"
echo >> "$RESULT"
"$PY" "$REPO/bench/gpu/checks.py" "$OUT" >> "$RESULT"
CHECKS=$?
cat "$RESULT"
echo "raw files: $OUT"
[ "$CHECKS" = 0 ] || { echo "gpu-acceptance: some checks FAILED (see above)"; exit 1; }
