#!/bin/sh
# SPDX-License-Identifier: MIT
# Install to two prefixes in a row from one build folder, reconfiguring in
# between without 'make clean' (as a user moving an install does), and
# check each copy on its own, with no LD_LIBRARY_PATH:
#   - its devq-info runs (a run path relative to the program), searches
#     its own prefix's plugin folder and loads the plugins from there;
#   - a program built with the README's pkg-config line runs and uses that
#     prefix's libdevq;
#   - the first copy still uses its own files after the second install.
# Usage: tests/install/two-prefixes.sh SRCDIR [WORKDIR]   (CI: .ci/run)
set -eu
src=$(cd "${1:?usage: two-prefixes.sh SRCDIR [WORKDIR]}" && pwd)
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/devq-install-XXXXXX")}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
unset LD_LIBRARY_PATH DEVQ_PLUGIN_PATH DEVQ_BACKEND PKG_CONFIG_PATH || true

# The README's program, built with the README's line.
# The first ```c block only: later ones (the graph section) are fragments.
awk '/^```c$/ && !done { on = 1; next } on && /^```$/ { on = 0; done = 1 } on' "$src/README.md" > "$work/hello.c"
grep -q 'int main' "$work/hello.c" || { echo "no program in README.md"; exit 99; }
compile_line=$(grep -o 'cc -rdynamic hello.c [^`]*' "$src/README.md" | head -n1)
[ -n "$compile_line" ] || { echo "no compile line in README.md"; exit 99; }
echo "README compile line: $compile_line"

mkdir -p "$work/build"
install_to() {
    echo "=== configure --prefix=$1, make, make install"
    (cd "$work/build" && "$src/configure" -q --prefix="$1" >/dev/null &&
        make -j"$jobs" >/dev/null && make install > "$work/install.log" 2>&1) ||
        { cat "$work/install.log"; fail "install to $1"; return 1; }
    # A file built for the previous prefix shows as a libtool warning
    # naming it (a plugin .la not relinked after the reconfigure).
    stale=$(grep -v -F "$1" "$work/install.log" | grep -F "$work/p" || true)
    [ -z "$stale" ] || fail "install to $1 mentions another prefix: $stale"
}

check_copy() {   # prefix
    p=$1
    out=$("$p/bin/devq-info" 2>&1) || fail "$p/bin/devq-info exited $?: $out"
    printf '%s\n' "$out" | grep -q -x "plugin folders: $p/lib/devq" ||
        fail "$p: devq-info searches $(printf '%s\n' "$out" | sed -n 's/^plugin folders: //p'), not $p/lib/devq"
    for so in "$p"/lib/devq/devq-*.so; do
        [ -e "$so" ] || continue
        printf '%s\n' "$out" | grep -q -x "  $so" || fail "$p: devq-info did not load $so"
    done
    other=$(printf '%s\n' "$out" | grep '^  /' | grep -v "^  $p/" || true)
    [ -z "$other" ] || fail "$p: plugins from elsewhere: $other"
    # The README line, run with this prefix's pkg-config file.
    (cd "$work" && rm -f hello && PKG_CONFIG_PATH="$p/lib/pkgconfig" sh -c "$compile_line") ||
        { fail "$p: README compile line failed"; return; }
    lib=$(ldd "$work/hello" | sed -n 's/.*libdevq\.so\.[0-9]* => \([^ ]*\).*/\1/p')
    case "$lib" in
        "$p"/lib/*) ;;
        *) fail "$p: hello uses libdevq '$lib'" ;;
    esac
    hello=$("$work/hello" 2>&1) || fail "$p: hello exited $?: $hello"
    case "$hello" in *"(expected 30)"*) ;; *) fail "$p: hello printed '$hello'" ;; esac
    echo "ok: $p"
}

install_to "$work/p1" && check_copy "$work/p1"
install_to "$work/p2" && check_copy "$work/p2"
grep -q "\"$work/p2/lib/devq\"" "$work/build/config.h" ||
    fail "config.h does not hold the second prefix's plugin folder"
check_copy "$work/p1"   # untouched by the second install
[ -n "${2:-}" ] || rm -rf "$work"
[ "$failures" = 0 ] && echo "PASS: two prefixes" && exit 0
exit 1
