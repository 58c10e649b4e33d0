#!/bin/sh
# SPDX-License-Identifier: MIT
# DEVQ_TRACE: valid Chrome trace JSON with one track per queue, a slice per
# op, a flow arrow per inserted wait and a bytes-outstanding counter;
# bounded by DEVQ_TRACE_MAX and still valid; drawn by devq-trace-svg.
set -eu
b=${top_builddir:-.}
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse the trace"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DEVQ_TRACE=$tmp/t.json "$b/examples/hello" >/dev/null
python3 - "$tmp/t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
def ph(p): return [e for e in ev if e["ph"] == p]
threads = [e["args"]["name"] for e in ph("M") if e["name"] == "thread_name"]
assert len(threads) == 2 and all(t.startswith("queue ") for t in threads), threads
names = [e["name"] for e in ph("X")]
for want in ("scale", "write (host to device)", "read (device to host)"):
    assert want in names, (want, names)
assert all(e["dur"] >= 0 for e in ph("X"))
starts = {e["id"]: e for e in ph("s")}
ends = {e["id"]: e for e in ph("f")}
assert starts and set(starts) == set(ends), (starts, ends)
for i in starts:
    assert starts[i]["tid"] != ends[i]["tid"], "a flow crosses queues"
    assert starts[i]["ts"] <= ends[i]["ts"] + 1, "a flow goes back in time"
assert [e for e in ph("C") if e["name"] == "bytes outstanding"], "no memory counter"
meta = [e for e in ph("M") if e["name"] == "devq"][0]
assert meta["args"]["dropped_events"] == 0
print("trace: %d slices, %d flows" % (len(names), len(starts)))
PY
# Bounded: a tiny limit drops events but the file stays valid JSON.
DEVQ_TRACE=$tmp/small.json DEVQ_TRACE_MAX=4096 "$b/examples/demo" >/dev/null
python3 - "$tmp/small.json" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
meta = [e for e in doc["traceEvents"] if e.get("name") == "devq"][0]
assert meta["args"]["dropped_events"] > 0, meta
assert os.path.getsize(sys.argv[1]) < 4096 + 1024
print("bounded trace: %d events dropped" % meta["args"]["dropped_events"])
PY
# A malformed limit is an error that names the variable.
if DEVQ_TRACE=$tmp/x.json DEVQ_TRACE_MAX=lots "$b/examples/hello" >/dev/null 2>"$tmp/err"; then
    echo "a bad DEVQ_TRACE_MAX was accepted"; exit 1
fi
grep -q "DEVQ_TRACE_MAX" "$tmp/err" || { cat "$tmp/err"; exit 1; }
# The picture.
"$b/tools/devq-trace-svg" "$tmp/t.json" "$tmp/t.svg" "test"
grep -q "marker-end" "$tmp/t.svg" || { echo "no arrow drawn"; exit 1; }
[ "$(grep -c '<rect' "$tmp/t.svg")" -ge 4 ] || { echo "too few boxes drawn"; exit 1; }
if command -v xmllint >/dev/null; then xmllint --noout "$tmp/t.svg"; fi
echo "trace: ok"
