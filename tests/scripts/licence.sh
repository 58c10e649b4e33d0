#!/bin/sh
# SPDX-License-Identifier: MIT
# Every source file carries an `SPDX-License-Identifier: MIT` line in its
# first lines (devq is MIT: LICENSE, debian/copyright).  Which files count,
# and why the others do not, is in one place: tools/spdx-add, which this
# runs with --check; `tools/spdx-add` (no option) adds the missing lines.
# Run by 'make check' (mk/dist.mk); skipped (77) without python3.
set -u
top_srcdir=${top_srcdir:-.}
[ -f "$top_srcdir/tools/spdx-add" ] || { echo "licence: $top_srcdir/tools/spdx-add not found (is top_srcdir set?)"; exit 99; }
[ -f "$top_srcdir/LICENSE" ] || { echo "FAIL: no LICENSE in $top_srcdir"; exit 1; }
grep -q '^MIT License$' "$top_srcdir/LICENSE" || { echo "FAIL: LICENSE is not the MIT licence"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "licence: SKIP: python3 not found"; exit 77; }
python3 "$top_srcdir/tools/spdx-add" --check "$top_srcdir"
