#!/usr/bin/env bash
# The adversary that reproduced CI stop 38's system-compare failure (bench/results/suite.md, "session 18"):
# busy neighbours on CPU 0, each in a session (autogroup) of its own, as the other worker's agents and
# ranks are, while system-compare's QUIET run trains; gone once the hog joins the file's cgroup.
#   scripts/cpu0-neighbours.sh & npx vitest run test/e2e/system-compare.test.ts; wait
# Needs root (the file's cgroup v1 `cpu`) and taskset/setsid (util-linux). N neighbours: $1 (default 6).
set -u
n=${1:-6}
while :; do d=$(ls -d /sys/fs/cgroup/cpu/cohort-system-compare-* 2>/dev/null | head -1); [ -n "$d" ] && break; sleep 0.05; done
for _ in $(seq "$n"); do setsid -w taskset -c 0 node -e 'for(;;){}' & done
# the quiet run's agent and rank are in the cgroup; the hog adds eight more
while :; do c=$(wc -l < "$d/cgroup.procs" 2>/dev/null || echo 0); [ "$c" -ge 8 ] && break; sleep 0.05; done
pkill -f "^node -e for" || true
echo "cpu0-neighbours: $n neighbours stopped at $(date +%T.%N)"
