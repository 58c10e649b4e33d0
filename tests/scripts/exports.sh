#!/bin/sh
# SPDX-License-Identifier: MIT
# libdevq.so's exports match lib/libdevq.map and the public headers:
#  - every DEVQ_API function declared in include/devq/*.h is named in the
#    map, and the map names nothing the headers do not declare;
#  - libdevq.so exports (nm -D --defined-only) exactly the map's names,
#    each at the version node the map puts it in;
#  - a released node is frozen: its size and checksum are below, so a new
#    function added to it instead of to the newest node fails.
# When a release ships, add a `released` line for its node.
# Run by 'make check' (top_srcdir, top_builddir from AM_TESTS_ENVIRONMENT);
# skipped (77) without nm or without a shared libdevq.so.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
map=$top_srcdir/lib/libdevq.map
so=$top_builddir/.libs/libdevq.so

# node, number of functions, md5sum of their sorted names (one a line)
released() {
    cat <<'EOF'
DEVQ_0.1 75 3b9eb5dcd4d699fe593094d94ddd9df3
EOF
}

command -v nm >/dev/null 2>&1 || { echo "exports: nm not found (binutils)"; exit 77; }
[ -f "$map" ] || { echo "exports: $map not found (is top_srcdir set?)"; exit 99; }
[ -f "$so" ] || { echo "exports: $so not built (--disable-shared?): nothing to compare"; exit 77; }

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Declared: "name header" for each DEVQ_API function (comments stripped,
# declarations joined across lines).
for h in "$top_srcdir"/include/devq/*.h; do
    tr '\n' ' ' <"$h" | sed -E 's#/\*([^*]|\*+[^*/])*\*+/##g' |
        grep -oE 'DEVQ_API[^;(]*\(' | grep -oE 'devq_[A-Za-z0-9_]+[[:space:]]*\($' |
        sed -E "s/[[:space:]]*\(\$/ include\/devq\/${h##*/}/"
done | sort -u >"$tmp/declared"

# C comments out, line by line (the map may have them on several lines).
uncomment() {
    awk '{
        line = $0; out = ""
        while (line != "") {
            if (incomment) {
                i = index(line, "*/"); if (!i) break
                line = substr(line, i + 2); incomment = 0
            } else {
                i = index(line, "/*"); if (!i) { out = out line; break }
                out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
            }
        }
        print out
    }' "$1"
}

# The map: "name node" for each name in a node's global: part; the node
# order as written (the last one is the newest).
uncomment "$map" | awk '
    /^[[:space:]]*[A-Za-z0-9_.]+[[:space:]]*\{/ { node = $1; sub(/\{.*/, "", node); print node > "/dev/stderr"; part = ""; next }
    /global:/ { part = "global"; next }
    /local:/ { part = "local"; next }
    /^[[:space:]]*\}/ { node = ""; next }
    node != "" && part == "global" {
        for (i = 1; i <= NF; i++) { s = $i; sub(/;$/, "", s); if (s != "") print s, node }
    }' >"$tmp/map" 2>"$tmp/nodes"
newest=$(tail -n 1 "$tmp/nodes")
[ -n "$newest" ] || fail "no version node found in lib/libdevq.map"

# Exported: "name version" from the dynamic symbol table (version nodes
# themselves are absolute symbols, type A, and left out).
nm -D --defined-only "$so" | awk '$2 != "A" { n = $3; v = n; sub(/@.*/, "", n); sub(/^[^@]*@+/, "", v); if (v == $3) v = "(none)"; print n, v }' |
    sort -u >"$tmp/exported"
# The default version of each name (name@@node); a name exported at
# several nodes keeps its older layouts at the older ones (name@node).
nm -D --defined-only "$so" | awk '$2 != "A" && index($3, "@@") { n = $3; v = n; sub(/@.*/, "", n); sub(/^[^@]*@@/, "", v); print n, v }' |
    sort -u >"$tmp/default"

# Globs would hide what is exported: the map names each symbol.
if awk '{ print $1 }' "$tmp/map" | grep -q '[*?]'; then
    fail "lib/libdevq.map has a pattern in a global: part; name every symbol"
fi
# A name may stand in several nodes only when libdevq.so exports it at
# each (a changed layout keeps its old version: devq_stats_get at DEVQ_0.1
# and DEVQ_0.4); its default (@@) is then the newest of them.
awk '{ print $1 }' "$tmp/map" | sort | uniq -d | while read -r n; do
    last=$(awk -v n="$n" '$1 == n { print $2 }' "$tmp/map" | tail -n 1)
    def=$(awk -v n="$n" '$1 == n { print $2 }' "$tmp/default")
    [ "$def" = "$last" ] ||
        echo "FAIL: $n is in more than one node of lib/libdevq.map, but its default version is ${def:-none}, not the newest of them ($last): use .symver"
done >"$tmp/dups"
[ -s "$tmp/dups" ] && { cat "$tmp/dups"; failures=$((failures + $(wc -l <"$tmp/dups"))); }

while read -r name header; do
    grep -q "^$name " "$tmp/map" ||
        fail "$name is DEVQ_API in $header but not in lib/libdevq.map: add it to the newest node, $newest"
done <"$tmp/declared"

while read -r name node; do
    grep -q "^$name " "$tmp/declared" ||
        fail "lib/libdevq.map ($node) names $name, which no include/devq header declares DEVQ_API"
    got=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/exported" | tr '\n' ' ')
    if [ -z "$got" ]; then
        fail "lib/libdevq.map ($node) names $name, which libdevq.so does not export (not defined, or not DEVQ_API)"
    elif ! awk -v n="$name" -v v="$node" '$1 == n && $2 == v { f = 1 } END { exit !f }' "$tmp/exported"; then
        fail "libdevq.so exports $name at $got, lib/libdevq.map says $node"
    fi
done <"$tmp/map"

while read -r name version; do
    grep -q "^$name $version\$" "$tmp/map" ||
        fail "libdevq.so exports $name at $version, which lib/libdevq.map does not name there"
done <"$tmp/exported"

released >"$tmp/released"
while read -r node count sum; do
    awk -v v="$node" '$2 == v { print $1 }' "$tmp/map" | sort >"$tmp/node"
    have=$(wc -l <"$tmp/node" | tr -d ' ')
    have_sum=$(md5sum <"$tmp/node" | cut -d' ' -f1)
    if [ "$have" != "$count" ] || [ "$have_sum" != "$sum" ]; then
        fail "$node is released ($count functions) and frozen, now $have: new functions go into $newest"
    fi
done <"$tmp/released"

while read -r node; do
    echo "exports: $node has $(awk -v v="$node" '$2 == v' "$tmp/map" | wc -l | tr -d ' ')"
done <"$tmp/nodes"
echo "exports: $(wc -l <"$tmp/declared" | tr -d ' ') declared, $(wc -l <"$tmp/exported" | tr -d ' ') exported"
[ "$failures" -eq 0 ] || { echo "exports: $failures failure(s)"; exit 1; }
exit 0
