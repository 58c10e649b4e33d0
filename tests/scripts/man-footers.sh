#!/bin/sh
# SPDX-License-Identifier: MIT
# Man-page footers are one form: every page's .TH line is
#   .TH NAME SECTION DATE "devq VERSION" "TITLE"
# with VERSION configure's version (AC_INIT, e.g. 0.1.0: the release the
# page ships in, never a short form) and TITLE "devq Manual" in section 1,
# "devq Programmer's Manual" in sections 3 and 7.
# Run by 'make check' (mk/dist.mk, which passes DEVQ_VERSION); by hand:
#   DEVQ_VERSION=0.1.0 top_srcdir=. tests/scripts/man-footers.sh [--fix]
# --fix rewrites the two fields of every page that differs (after a
# version bump, or on pages merged from another branch).
set -u
top_srcdir=${top_srcdir:-.}
man="$top_srcdir/man"
[ -d "$man/man3" ] || { echo "man-footers: $man/man3 not found (is top_srcdir set?)"; exit 99; }
version=${DEVQ_VERSION:-$(sed -n 's/^AC_INIT(\[devq\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac" 2>/dev/null)}
[ -n "$version" ] || { echo "man-footers: no version (set DEVQ_VERSION)"; exit 99; }
fix=no
[ "${1:-}" = --fix ] && fix=yes
failures=0
pages=0
for page in "$man"/man[137]/*.[137]; do
    [ -f "$page" ] || continue
    case "$page" in
        *.1) title="devq Manual" ;;
        *) title="devq Programmer's Manual" ;;
    esac
    want_tail="\"devq $version\" \"$title\""
    # A page that is only '.so other.3' takes the other page's footer.
    head -n1 "$page" | grep -q '^\.so ' && continue
    th=$(grep -m1 '^\.TH ' "$page")
    if [ -z "$th" ]; then
        echo "FAIL: $page has no .TH line"
        failures=$((failures + 1))
        continue
    fi
    # NAME SECTION DATE, then the rest (the two quoted fields).
    head3=$(printf '%s\n' "$th" | awk '{ print $1, $2, $3, $4 }')
    have_tail=$(printf '%s\n' "$th" | sed 's/^\.TH [^ ]* [^ ]* [^ ]* //')
    pages=$((pages + 1))
    [ "$have_tail" = "$want_tail" ] && continue
    if [ $fix = yes ]; then
        new="$head3 $want_tail"
        awk -v new="$new" '!done && /^\.TH / { print new; done = 1; next } { print }' "$page" > "$page.tmp" &&
            mv "$page.tmp" "$page" && echo "fixed: $page"
    else
        echo "FAIL: ${page#"$top_srcdir"/}: footer $have_tail, want $want_tail (tests/scripts/man-footers.sh --fix)"
        failures=$((failures + 1))
    fi
done
[ "$pages" -gt 0 ] || { echo "FAIL: no man pages under $man"; exit 1; }
[ "$failures" = 0 ] || exit 1
echo "PASS: $pages man pages, footer \"devq $version\""
