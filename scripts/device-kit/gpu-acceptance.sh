#!/usr/bin/env bash
# Cohort's GPU acceptance from the device kit, offline: scripts/gpu-acceptance.sh (the one script,
# packed in the kit) with the kit's Node first on PATH. Files go to $OUT when it is set (a device
# call sets it, and what is there comes back), else to results/ beside this file; the table too.
# Without an NVIDIA GPU: one line, exit 77. Knobs: those of scripts/gpu-acceptance.sh.
set -uo pipefail
KIT=$(cd "$(dirname "$0")" && pwd)
export OUT=${OUT:-$KIT/results}
export RESULTS_DIR=${RESULTS_DIR:-$OUT}
export PATH=$KIT/bin:$PATH
export COHORT_KIT=$KIT
exec bash "$KIT/scripts/gpu-acceptance.sh" "$@"
