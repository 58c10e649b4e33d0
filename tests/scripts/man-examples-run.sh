#!/bin/sh
# SPDX-License-Identifier: MIT
# Man page examples that say what they print are run, and must print it:
# a roff comment line '.\" run: TEXT' before an .EX block marks that
# block as a whole program; it is compiled against this tree's headers
# and library, run on the cpu backend, and must exit 0 with every TEXT
# (a fixed string) in its output.  So the failure examples of devq(7)
# FAILURES and devq_queue(3) are tested as documented.
# Run by 'make check'; skips (77) without a C compiler.
set -u
top_srcdir=$(cd "${top_srcdir:-.}" && pwd) || exit 99
top_builddir=$(cd "${top_builddir:-.}" && pwd) || exit 99
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || { echo "man-examples-run: no C compiler"; exit 77; }
lib="$top_builddir/.libs"
[ -f "$lib/libdevq.so" ] || { echo "man-examples-run: $lib/libdevq.so not built"; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/devq-manrun-XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
failures=0
n=0
for page in "$top_srcdir"/man/man3/*.3 "$top_srcdir"/man/man7/*.7; do
    base=$(basename "$page" | tr '.' '_')
    # Blocks preceded by run: lines -> NAME_K.c plus NAME_K.expect
    awk -v out="$work/$base" '
        /^\.\\" run: / { sub(/^\.\\" run: /, ""); want = want $0 "\n"; next }
        /^\.EX/ { if (want != "") { n++; file = out "_" n; printf "%s", want > (file ".expect");
                                    close(file ".expect"); inex = 1; want = "" } ; next }
        /^\.EE/ { inex = 0; next }
        inex { print > (file ".src") }' "$page"
    for src in "$work/$base"_*.src; do
        [ -f "$src" ] || continue
        n=$((n + 1))
        stem=${src%.src}
        sed -e 's/\\e/\\/g' -e 's/\\-/-/g' -e 's/\\(dq/"/g' -e "s/\\\\(aq/'/g" \
            -e 's/\\[&%]//g' "$src" > "$stem.c"
        # shellcheck disable=SC2086  # the build's sanitizer flags, if any
        if ! out=$("$cc" -std=gnu11 ${DEVQ_EXAMPLE_FLAGS:-} -I"$top_srcdir/include" "$stem.c" -o "$stem" \
                -L"$lib" -Wl,-rpath,"$lib" -ldevq 2>&1); then
            echo "FAIL: $(basename "$page"): example does not build:"; echo "$out" | head -20
            failures=$((failures + 1)); continue
        fi
        got=$(DEVQ_BACKEND=cpu timeout 60 "$stem" 2>&1); rc=$?
        if [ $rc -ne 0 ]; then
            echo "FAIL: $(basename "$page"): example exited $rc:"; echo "$got" | sed 's/^/    /'
            failures=$((failures + 1)); continue
        fi
        while IFS= read -r want; do
            case "$got" in
            *"$want"*) ;;
            *) echo "FAIL: $(basename "$page"): output lacks '$want':"; echo "$got" | sed 's/^/    /'
               failures=$((failures + 1)) ;;
            esac
        done < "$stem.expect"
        echo "ran $(basename "$page") example $(basename "$stem"):"; echo "$got" | sed 's/^/    /'
    done
done
echo "man-examples-run: $n example(s) run, $failures failure(s)"
[ "$n" -gt 0 ] && [ "$failures" -eq 0 ]
