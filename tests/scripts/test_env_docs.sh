#!/bin/sh
# SPDX-License-Identifier: MIT
# The environment is described in four places: the table in lib
# (lib/env_table.c, printed by devq-info -e), the ENVIRONMENT sections of
# devq(7) and devq-info(1), and the README's table.  Each must name exactly
# the table's variables, so that they cannot drift apart again.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Variables named in one section of a file: DEVQ_ words, without the
# DEVQ_MEM_* style wildcards and the DEVQ_CAP_* capability bits.
names() { grep -o 'DEVQ_[A-Z0-9_]*' | grep -v -e '_$' -e '^DEVQ_CAP_' | sort -u; }
man_section() {   # file: the text of its .SH ENVIRONMENT section
    awk '/^\.SH /{ on = ($2 == "ENVIRONMENT") } on' "$1"
}
readme_section() {
    awk '/^## /{ on = ($0 == "## Environment") } on' "$top_srcdir/README.md"
}

# DEVQ_PLUGIN_PATH=/nonexistent: no plugin is loaded (an empty value would
# let a build-tree devq-info load the plugins built beside it).
table=$(DEVQ_PLUGIN_PATH=/nonexistent "$top_builddir/tools/devq-info" -e 2>/dev/null |
        awk '/^environment/{ on = 1; next } on && /^  DEVQ_/{ print $1 }' | sort -u)
[ -n "$table" ] || { echo "devq-info -e printed no environment table"; exit 99; }
echo "the table: $(echo $table)"

compare() {   # what, names
    extra=$(printf '%s\n' "$2" | grep -v -x -F "$table")
    missing=$(printf '%s\n' "$table" | grep -v -x -F "$2")
    [ -z "$extra" ] || fail "$1 names variables that are not in lib/env_table.c: $(echo $extra)"
    [ -z "$missing" ] || fail "$1 omits: $(echo $missing)"
}
compare "devq(7) ENVIRONMENT" "$(man_section "$top_srcdir/man/man7/devq.7" | names)"
compare "devq-info(1) ENVIRONMENT" "$(man_section "$top_srcdir/man/man1/devq-info.1" | names)"
compare "README.md Environment" "$(readme_section | names)"

[ "$failures" = 0 ] && echo "PASS: environment documented the same everywhere" && exit 0
exit 1
