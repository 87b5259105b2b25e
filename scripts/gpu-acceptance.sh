#!/usr/bin/env bash
# Cohort's GPU acceptance, for anyone with ONE NVIDIA GPU, run from a clone (after npm ci && npm run build):
#
#   bash scripts/gpu-acceptance.sh            # knobs: IMG=224 BS=64 STEPS=60 LOG=10 WARM=5 PYTHON=python3 SKIP_TFJS=1
#
# The seeds' ladder (native, compile, fp16, fp16 + channels-last, all) through Cohort's torch engine,
# each rung next to a plain PyTorch script of the same step (bench/gpu/reference.py); peak memory as
# Cohort reports it vs torch.cuda.max_memory_allocated; then the tfjs engine on tfjs-node-gpu where
# it installs (its hello says which device it really used). The table goes to
# bench/results/gpu-<machine>.md; raw files to $OUT (default: a temp directory, printed).
# Then the checks of what Cohort reports about the GPU (bench/gpu/checks.py, appended to the table):
# each rank's device in plan/hello matched to nvidia-smi by UUID; step.memory per rank (allocator
# figures, this process's own bytes on its GPU, device used/total, peak vs the plain script); --bf16
# against the GPU's compute capability in the engine, in the agent's pre-launch check (a real
# `cohort run --local --engine torch --bf16`) and in `cohort probe`; tfjs's device and true peak.
# Exit codes: 0 done and every check passed, 1 a check failed (see the table), 77 no NVIDIA GPU here
# (skipped), 2 the machine lacks what the run needs.
# One rank throughout: two DDP ranks on one GPU are not a valid test.
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
# The torch engine: where this checkout keeps it (the built copy, npm run build: it reads train-config.json beside it).
ENGINE=${ENGINE:-}
for c in "$REPO/resources/trainer/engines/torch_engine.py" "$REPO/resources/engines/torch_engine.py"; do
  [ -z "$ENGINE" ] && [ -f "$c" ] && ENGINE=$c
done
[ -n "$ENGINE" ] || { echo "gpu-acceptance: cannot find the torch engine script in $REPO"; exit 2; }

# ---- 0. the machine ------------------------------------------------------------------------
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | head -n 1
  nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -n 1
  "$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available())'
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
"$PY" -c 'import sys, torch, torchvision; sys.exit(0 if torch.cuda.is_available() and int(torch.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null ||
  { echo "gpu-acceptance: $PY needs torch >= 2 with CUDA and torchvision (see $OUT/machine.txt)"; exit 2; }
# The GPUs by nvidia-smi's index and UUID (compute_cap asked apart: drivers before R510 reject it), and
# what the ranks were told to use: the checks match each rank's reported device against these.
nvidia-smi --query-gpu=index,uuid,name,compute_cap --format=csv,noheader,nounits > "$OUT/gpus.csv" 2>/dev/null ||
  nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader,nounits > "$OUT/gpus.csv"
echo "$CUDA_VISIBLE_DEVICES" > "$OUT/visible.txt"
MACHINE=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//' | tr 'A-Z' 'a-z')

# ---- 1+2. the ladder: Cohort's engine and the plain script, rung by rung ----------------------
SHAPE=(--image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --log-steps "$LOG" --warmup-steps "$WARM")
rung() { # rung NAME EXTRAS(0|1) ENGINE_FLAGS -- REFERENCE_FLAGS
  local name=$1 extras=$2; shift 2
  local eflags=() rflags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do eflags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rflags=("$@")
  echo "rung $name: engine ${eflags[*]} (COHORT_TORCH_EXTRAS=$extras); plain ${rflags[*]}"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)) RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 COHORT_HOST=$(hostname) COHORT_TORCH_EXTRAS=$extras \
    "$PY" "$ENGINE" "${SHAPE[@]}" "${eflags[@]}" > "$OUT/engine-$name.jsonl" 2> "$OUT/engine-$name.log"
  "$PY" "$REPO/bench/gpu/reference.py" --image-size "$IMG" --batch-size "$BS" --steps "$STEPS" --warmup-steps "$WARM" "${rflags[@]}" > "$OUT/ref-$name.json" 2> "$OUT/ref-$name.log"
}
rung native 0 --
rung compile 0 --compile -- --compile
rung fp16 0 --fp16 -- --fp16
rung fp16-channels-last 1 --fp16 -- --fp16 --channels-last
rung all 1 --fp16 --compile -- --fp16 --channels-last --compile

# ---- 2b. bf16: the engine's own rule, then the agent's pre-launch check through a real Cohort run --------
echo "bf16: engine --bf16, then cohort run --local --engine torch --bf16, then cohort probe local"
MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)) RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 COHORT_HOST=$(hostname) \
  "$PY" "$ENGINE" "${SHAPE[@]}" --bf16 > "$OUT/engine-bf16.jsonl" 2> "$OUT/engine-bf16.log"
if command -v node >/dev/null 2>&1 && [ -f "$REPO/dist/cli.mjs" ]; then
  COHORT_PYTHON=$PY COHORT_DATA_DIR="$OUT/cohort-data" node "$REPO/dist/cli.mjs" run --local --engine torch --bf16 --image-size 64 --batch-size 8 --steps 6 --log-steps 3 --warmup-steps 1 --json > "$OUT/bf16-cli.jsonl" 2> "$OUT/bf16-cli.log"
  echo $? > "$OUT/bf16-cli.exit"
  COHORT_PYTHON=$PY COHORT_DATA_DIR="$OUT/cohort-data" node "$REPO/dist/cli.mjs" probe local > "$OUT/probe.txt" 2>&1
fi

# ---- 3. tfjs on tfjs-node-gpu, where it installs ----------------------------------------------
if [ "${SKIP_TFJS:-0}" = 1 ]; then echo "skipped (SKIP_TFJS=1)" > "$OUT/tfjs.skipped"
elif ! command -v node >/dev/null 2>&1 || [ ! -f "$REPO/dist/cli.mjs" ]; then echo "skipped: needs node and a built clone (npm ci && npm run build)" > "$OUT/tfjs.skipped"
elif ! npm install --prefix "$OUT/runtime" --no-save @tensorflow/tfjs-node-gpu@4.22.0 > "$OUT/tfjs-install.log" 2>&1; then
  echo "skipped: npm install @tensorflow/tfjs-node-gpu@4.22.0 failed (see tfjs-install.log; arm64 has no GPU build)" > "$OUT/tfjs.skipped"
else
  COHORT_RUNTIME_DIR=$OUT/runtime node "$REPO/dist/cli.mjs" run --local --json --engine tfjs --backend tensorflow "${SHAPE[@]}" > "$OUT/tfjs.jsonl" 2> "$OUT/tfjs.log"
fi

# ---- 4. the table -----------------------------------------------------------------------------
mkdir -p "$REPO/bench/results"
"$PY" "$REPO/bench/gpu/report.py" "$OUT" native compile fp16 fp16-channels-last all > "$REPO/bench/results/gpu-$MACHINE.md"
echo >> "$REPO/bench/results/gpu-$MACHINE.md"
"$PY" "$REPO/bench/gpu/checks.py" "$OUT" >> "$REPO/bench/results/gpu-$MACHINE.md"
CHECKS=$?
cat "$REPO/bench/results/gpu-$MACHINE.md"
echo "raw files: $OUT"
[ "$CHECKS" = 0 ] || { echo "gpu-acceptance: some checks FAILED (see above)"; exit 1; }
