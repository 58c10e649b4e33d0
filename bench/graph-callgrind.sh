#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per graph submission of 1, 64 and 1024 tiny launches on
# the submitting thread (issue 30): bench_graph under callgrind,
# collecting only inside devq_graph_submit, one dump per size (its
# measured submissions only: bench_graph zeroes the counters after the
# warm-up).  Run from the build tree: make bench-graph-callgrind.
#   bench/graph-callgrind.sh [SUBMISSIONS_OF_64]   (default 200)
set -eu
command -v valgrind >/dev/null 2>&1 || { echo "graph-callgrind: valgrind not found"; exit 77; }
subs=${1:-200}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
./libtool --mode=execute valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect=devq_graph_submit ./bench/bench_graph "$subs" >"$out/log" 2>&1 ||
    { cat "$out/log"; exit 1; }
printf '%8s %12s %14s %10s\n' ops submissions Ir/submission Ir/op
for f in "$out"/cg.*; do
    # "desc: Trigger: Client Request: 64 ops x 200" and "totals: N"
    awk '/^desc: Trigger: Client Request:/ { ops = $5; n = $8 }
         /^totals:/ { t = $2 }
         END { if (n) printf "%8d %12d %14.0f %10.1f\n", ops, n, t / n, t / n / ops }' "$f"
done | sort -n
