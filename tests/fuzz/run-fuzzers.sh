#!/bin/sh
# SPDX-License-Identifier: MIT
# make fuzz-short: run each libFuzzer target for a few seconds on a copy
# of its committed corpus.  Usage: run-fuzzers.sh SECONDS CORPUS_ROOT BIN_DIR NAME...
# Exit 1 when any target crashes; its reproducer is kept under
# BIN_DIR/artifacts/ and replayed once more with full output.
seconds=$1 root=$2 bindir=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/devq-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$bindir/artifacts"
status=0
for name in "$@"; do
    bin="$bindir/fuzz-$name"
    mkdir -p "$work/$name"
    rm -f "$bindir/artifacts/$name-"*
    if [ -d "$root/corpus/$name" ]; then
        cp "$root/corpus/$name"/* "$work/$name"/ 2>/dev/null
    fi
    # The emulator's parser prints every bad rule: close the target's
    # stderr (libFuzzer keeps its own) and replay a crash with it open.
    mask=0
    [ "$name" = emu_fail ] && mask=2
    echo "fuzz-short: $name for ${seconds}s"
    if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=$mask \
        -print_final_stats=1 -artifact_prefix="$bindir/artifacts/$name-" \
        "$work/$name" >"$work/$name.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done' "$work/$name.log" | sed "s/^/  $name: /"
    else
        echo "fuzz-short: FAIL $name"
        tail -n 40 "$work/$name.log"
        for crash in "$bindir/artifacts/$name-"*; do
            [ -f "$crash" ] || continue
            echo "--- reproducer $crash:"
            "$bin" "$crash" 2>&1 | tail -n 40
        done
        status=1
    fi
done
exit $status
