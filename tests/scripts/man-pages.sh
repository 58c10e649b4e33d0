#!/bin/sh
# SPDX-License-Identifier: MIT
# Man pages: every function declared in include/devq/devq.h has a page
# in man/man3 (or is at least mentioned there), and every page in
# man/man1, man/man3 and man/man7 formats without a single groff warning,
# every devq page a SEE ALSO section names exists, and the examples in
# them that include a devq header compile.
# Run by 'make check' (top_srcdir comes from AM_TESTS_ENVIRONMENT);
# skipped (77) where groff is not installed.
set -u
top_srcdir=${top_srcdir:-.}
# Absolute, since the checks below run from man/.
top_srcdir=$(cd "$top_srcdir" 2>/dev/null && pwd) || {
    echo "man-pages: top_srcdir does not exist"; exit 99; }
header="$top_srcdir/include/devq/devq.h"
man="$top_srcdir/man"
if [ ! -f "$header" ] || [ ! -d "$man/man3" ]; then
    echo "man-pages: $header or $man/man3 not found (is top_srcdir set?)"
    exit 99
fi
if ! command -v groff >/dev/null 2>&1; then
    echo "man-pages: groff not found; install groff to check the man pages"
    exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 1. Every public function has a page, or is documented on another page.
functions=$(grep -oE 'devq_[a-z0-9_]+[[:space:]]*\(' "$header" |
            sed -E 's/[[:space:]]*\($//' | sort -u)
[ -n "$functions" ] || fail "no function found in $header"
nfun=0
for f in $functions; do
    nfun=$((nfun + 1))
    [ -f "$man/man3/$f.3" ] && continue
    # Mentioned as a whole word (\fB before the name is fine).
    if ! grep -rqsE "(^|[^a-z0-9_])$f([^a-z0-9_]|\$)" "$man/man3"; then
        fail "$f (declared in include/devq/devq.h) has no page man/man3/$f.3 and no page mentions it"
    fi
done

# 2. Every page formats cleanly.  Run from man/ so that '.so man3/x.3'
# alias pages resolve as man(1) resolves them; -t runs tbl for pages
# that use tables.
npages=0
cd "$man" || exit 99
for page in man1/*.1 man3/*.3 man7/*.7; do
    [ -f "$page" ] || continue
    npages=$((npages + 1))
    target=$(sed -n 's/^\.so[[:space:]]\{1,\}//p' "$page" | head -n 1)
    if [ -n "$target" ] && [ ! -f "$target" ]; then
        fail "man/$page: '.so $target' names a page that does not exist"
        continue
    fi
    out=$(LC_ALL=C groff -t -man -ww -z "$page" 2>&1)
    if [ -n "$out" ]; then
        fail "man/$page: groff -man -ww -z is not clean:"
        printf '%s\n' "$out" | sed 's/^/    /'
    fi
done
[ "$npages" -gt 0 ] || fail "no man page found under $man"

# 3. Every devq page named in a SEE ALSO section exists in man/ (as
# .BR name (N), .B name (N) or \fBname\fP(N), with \- for -), so a
# renamed or missing page never leaves a dangling reference.
nsee=0
for page in man1/*.1 man3/*.3 man7/*.7; do
    [ -f "$page" ] || continue
    refs=$(awk '/^\.SH/ { insee = ($0 ~ /^\.SH "?SEE ALSO"?/); next } insee' "$page" |
           sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' |
           grep -oE '(^|[^a-z0-9_-])devq[a-z0-9_-]*[[:space:]]*\([1-8]\)' |
           sed -E 's/^[^a-z]*//; s/[[:space:]]+//g')
    for ref in $refs; do
        nsee=$((nsee + 1))
        name=${ref%%(*}
        sect=${ref#*(}
        sect=${sect%)}
        [ -f "man$sect/$name.$sect" ] ||
            fail "man/$page: SEE ALSO names $name($sect), which has no page man/man$sect/$name.$sect"
    done
done
[ "$nsee" -gt 0 ] || fail "no SEE ALSO reference found"

# 4. Every EXAMPLES block that includes a devq header still compiles
# against the headers of this tree (so examples follow API changes).
# Skipped, with a note, where no C compiler is found.
cc=${CC:-cc}
nex=0
if command -v "$cc" >/dev/null 2>&1; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/devq-man-XXXXXX") || exit 99
    trap 'rm -rf "$work"' EXIT
    for page in man1/*.1 man3/*.3 man7/*.7; do
        [ -f "$page" ] || continue
        base=$(printf '%s' "$page" | tr '/.' '__')
        # One file per .EX/.EE block; groff escapes back to C.
        awk -v out="$work/$base" '
            /^\.EX/ { n++; inex = 1; file = out "_" n ".c"; printf "" > file; next }
            /^\.EE/ { inex = 0; close(file); next }
            inex { print >> file }' "$page"
        for src in "$work/$base"_*.c; do
            [ -f "$src" ] || continue
            grep -q '#include <devq/devq' "$src" || continue
            # devq_mpi.h includes <mpi.h>: MPI's flags from configure.
            mpi_flags=""
            if grep -q '#include <devq/devq_mpi.h>' "$src"; then
                if [ -z "${DEVQ_TEST_MPI_CFLAGS:-}" ]; then
                    echo "man-pages: man/$page: an example needs <mpi.h>; configure found no MPI: not compiled"
                    continue
                fi
                mpi_flags=$DEVQ_TEST_MPI_CFLAGS
            fi
            nex=$((nex + 1))
            sed -e 's/\\e/\\/g' -e 's/\\-/-/g' -e 's/\\(dq/"/g' -e "s/\\\\(aq/'/g" \
                -e 's/\\[&%]//g' "$src" > "$src.c"
            # shellcheck disable=SC2086  # MPI's flags are a list
            if ! out=$("$cc" -std=gnu11 -fsyntax-only -I"$top_srcdir/include" $mpi_flags \
                    -Werror=implicit-function-declaration -Werror=incompatible-pointer-types \
                    -Werror=int-conversion "$src.c" 2>&1); then
                fail "man/$page: an example does not compile:"
                printf '%s\n' "$out" | sed 's/^/    /' | head -n 20
            fi
        done
    done
else
    echo "man-pages: no C compiler ('$cc'); examples not compiled"
fi

echo "man-pages: $nfun functions, $npages pages, $nsee SEE ALSO references, $nex examples, $failures failure(s)"
[ "$failures" -eq 0 ]
