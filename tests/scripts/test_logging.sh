#!/bin/sh
# SPDX-License-Identifier: MIT
# DEVQ_LOG: basic logs each wait the tracker inserts (what it is for) and a
# summary per device at close; full also logs each binding decision.
set -eu
b=${top_builddir:-.}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
DEVQ_LOG=basic DEVQ_LOG_FILE=$log "$b/examples/hello" >/dev/null
grep -q "queue #2 waits on queue #1 @1 for signal #1 >= 1 (stream 1 on stream 0)" "$log" || { echo "no inserted-wait line:"; cat "$log"; exit 1; }
grep -q "closed: batches 2 submitted, 2 completed" "$log" || { echo "no close summary:"; cat "$log"; exit 1; }
if grep -q "binds buffer" "$log"; then echo "basic logged full-level lines"; exit 1; fi
: > "$log"
DEVQ_LOG=full DEVQ_LOG_FILE=$log "$b/examples/hello" >/dev/null
grep -q "binds buffer #[0-9]* (tag [0-9]*, .*) read-write" "$log" || { echo "no binding decision at full:"; cat "$log"; exit 1; }
: > "$log"
"$b/examples/hello" >/dev/null 2>"$log"
[ ! -s "$log" ] || { echo "devq printed without DEVQ_LOG:"; cat "$log"; exit 1; }
if DEVQ_LOG=loud "$b/examples/hello" >/dev/null 2>"$log"; then echo "a bad DEVQ_LOG was accepted"; exit 1; fi
grep -q "DEVQ_LOG='loud'" "$log" || { echo "bad DEVQ_LOG not named:"; cat "$log"; exit 1; }
echo "logging: ok"
