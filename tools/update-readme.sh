#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate the real output shown in README.md (devq-info, the demo) and
# the demo's trace picture, so the README cannot drift from the code.
# Run from the build folder: make readme
set -eu
srcdir=${1:?usage: update-readme.sh SRCDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plugins="$PWD/plugins/cuda/.libs:$PWD/plugins/hip/.libs"
DEVQ_PLUGIN_PATH=$plugins ./tools/devq-info | sed "s|$PWD/||g" > "$tmp/info.txt"
DEVQ_TRACE="$tmp/trace.json" ./examples/demo > "$tmp/demo.txt"
./tools/devq-trace-svg "$tmp/trace.json" "$srcdir/docs/demo-trace.svg" \
    "devq demo pipeline: upload, blur + histogram, read back (cpu backend)"
python3 - "$srcdir/README.md" "$tmp/info.txt" "$tmp/demo.txt" <<'PY'
import re, sys
readme, info, demo = sys.argv[1:4]
text = open(readme).read()
def splice(text, tag, body, cmd):
    block = "<!-- %s:begin -->\n```\n$ %s\n%s```\n<!-- %s:end -->" % (tag, cmd, body, tag)
    return re.sub(r"<!-- %s:begin -->.*?<!-- %s:end -->" % (tag, tag), lambda m: block, text, flags=re.S)
text = splice(text, "devq-info", open(info).read(), "DEVQ_PLUGIN_PATH=plugins/cuda/.libs:plugins/hip/.libs tools/devq-info   # in the build folder; no GPU on this machine")
text = splice(text, "demo", open(demo).read(), "./examples/demo")
open(readme, "w").write(text)
PY
echo "README.md and docs/demo-trace.svg regenerated"
