#!/bin/sh
# SPDX-License-Identifier: MIT
# On a GPU machine, from the repository root, with .gpu carried there
# (tests/gpu/bundle.sh made it): tests/gpu/run.sh on the prebuilt tree,
# its log and the test logs in $OUT; BENCH=1 adds devq-bench on cuda
# and on cpu.  Exit status: run.sh's.
set -u
OUT=${OUT:-/tmp/devq-gpu-out}
mkdir -p "$OUT"
root=$(cat .gpu/ROOT)
if [ "$(cd "$root" 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
    [ -e "$root" ] && { echo "device.sh: $root exists and is not this tree"; exit 2; }
    mkdir -p "$(dirname "$root")" && ln -s "$(pwd -P)" "$root"
fi
cd "$root/.gpu" || exit 2
find . -exec touch -h -d "@$(date +%s)" {} +
export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b="$root/.gpu/src/b"
t0=$(date +%s)
(cd src && DEVQ_GPU_PREBUILT=1 JOBS=$(nproc) timeout "${RUN_TIMEOUT:-250}" sh tests/gpu/run.sh "$b") >"$OUT/run.log" 2>&1
rc=$?
echo "run.sh: exit $rc in $(($(date +%s) - t0)) s"
grep -E '^(PASS|FAIL):|passed, .* failed' "$OUT/run.log"
cd "$b" || exit 2
if [ "${BENCH:-0}" = 1 ]; then
    DEVQ_PLUGIN_PATH="$b/plugins/cuda/.libs" timeout 110 tools/devq-bench -b cuda >"$OUT/bench-cuda.txt" 2>&1
    timeout 60 tools/devq-bench -b cpu --quick >"$OUT/bench-cpu.txt" 2>&1
fi
{ find . -name '*.log' -path './tests/*'; [ -f graph-native.log ] && echo graph-native.log; } >/tmp/devq-gpu-logs
tar czf "$OUT/logs.tgz" -T /tmp/devq-gpu-logs 2>/dev/null
exit $rc
