#!/bin/sh
# SPDX-License-Identifier: MIT
# Memory where a user looks for it: DEVQ_TRACE has an alloc and a free
# slice on the queues' tracks and a bytes-outstanding counter, which
# devq-trace-svg draws; DEVQ_LOG=basic reports a budget refusal.
set -eu
b=${top_builddir:-.}
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse the trace"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DEVQ_MEM_BUDGET=512K DEVQ_TRACE=$tmp/t.json DEVQ_LOG=basic DEVQ_LOG_FILE=$tmp/log \
    "$b/tests/helpers/mem_events" > "$tmp/out"
grep -q '^ok$' "$tmp/out"
python3 - "$tmp/t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
queues = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
def on_queue(name):
    return [e for e in ev if e["ph"] == "X" and e["name"] == name and e["tid"] in queues]
alloc, free = on_queue("alloc"), on_queue("free")
assert len(alloc) == 1 and alloc[0]["args"]["bytes"] == 64 << 10, alloc
# buf freed on queue 2, dst (no queue named) on the queue that last used it
assert len(free) == 2 and all(e["args"]["bytes"] == 64 << 10 for e in free), free
assert alloc[0]["tid"] != free[0]["tid"], "the free was asked for on the second queue"
counter = [e["args"]["bytes"] for e in ev if e["ph"] == "C" and e["name"] == "bytes outstanding"]
assert max(counter) >= 128 << 10, counter
assert counter[-1] == 0, counter     # everything freed, and the stream-ordered free reaped
print("memory in the trace: alloc on %s, free on %s, peak %d bytes"
      % (queues[alloc[0]["tid"]], queues[free[0]["tid"]], max(counter)))
PY
"$b/tools/devq-trace-svg" "$tmp/t.json" "$tmp/t.svg" "memory"
grep -q '<polyline' "$tmp/t.svg" || { echo "no counter line drawn"; exit 1; }
grep -q 'bytes outstanding (peak 128.0 KiB)' "$tmp/t.svg" || { echo "no counter lane label"; exit 1; }
if command -v xmllint >/dev/null; then xmllint --noout "$tmp/t.svg"; fi
grep -q "allocation of 1048576 bytes (tag 7, stream-ordered) refused: budget" "$tmp/log" ||
    { echo "no budget refusal at DEVQ_LOG=basic:"; cat "$tmp/log"; exit 1; }
echo "memory trace: ok"
