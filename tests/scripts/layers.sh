#!/bin/sh
# SPDX-License-Identifier: MIT
# lib/ keeps its layers (DESIGN §10): no file calls a file of a higher
# layer, no circle of calls is larger than 5 files (checked on the built
# objects), and no circle of include/type use is larger than 5 files
# (checked on the sources; the check itself first, on made-up trees).
# By tests/scripts/layers.py; skipped (77) without python3 or nm.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "layers: python3 not found"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "layers: nm not found"; exit 77; }
python3 "$top_srcdir/tests/scripts/layers.py" --self-test || exit 1
exec python3 "$top_srcdir/tests/scripts/layers.py" "$top_builddir" "$top_srcdir"
