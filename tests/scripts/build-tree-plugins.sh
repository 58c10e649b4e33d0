#!/bin/sh
# SPDX-License-Identifier: MIT
# Programs run from the build tree find the plugins built beside them
# without DEVQ_PLUGIN_PATH (lib/loader/plugin_dir.c): examples/saxpy-vulkan
# runs on vulkan:0 instead of skipping, devq-info lists the build tree's
# plugins; a copy of libdevq.so outside the build tree (as an installed
# one is) never searches them.  Skips (77) without the vulkan backend or a
# Vulkan device.
set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
saxpy=$top_builddir/examples/saxpy-vulkan
[ -x "$saxpy" ] || { echo "SKIP: the vulkan backend is not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/devq-build-tree-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# As tests/scripts/vulkan-run: llvmpipe's JIT allocations look like leaks to ASan.
MESA_SHADER_CACHE_DIR="$top_builddir/tests/mesa-shader-cache"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export MESA_SHADER_CACHE_DIR ASAN_OPTIONS
spv=$top_srcdir/examples/saxpy.spv

# Is there a Vulkan device at all?  Asked with the folder named by hand.
DEVQ_PLUGIN_PATH="$top_builddir/plugins/vulkan/.libs" "$saxpy" "$spv" 4096 > "$tmp/with" 2>&1
rc=$?
cat "$tmp/with"
[ "$rc" = 77 ] && { echo "SKIP: no Vulkan device here"; exit 77; }
[ "$rc" = 0 ] || fail "saxpy-vulkan with DEVQ_PLUGIN_PATH exited $rc"

# The point: the same without DEVQ_PLUGIN_PATH, from any working folder.
(cd "$tmp" && env -u DEVQ_PLUGIN_PATH "$saxpy" "$spv" 4096) > "$tmp/without" 2>&1
rc=$?
cat "$tmp/without"
[ "$rc" = 0 ] || fail "saxpy-vulkan without DEVQ_PLUGIN_PATH exited $rc (77: skipped)"
grep -q "on vulkan:0 .*: match C$" "$tmp/without" || fail "saxpy-vulkan did not run on vulkan:0"

env -u DEVQ_PLUGIN_PATH "$top_builddir/tools/devq-info" > "$tmp/info" 2>&1
grep -q "^  $top_builddir/plugins/vulkan/.libs/devq-vulkan.so$" "$tmp/info" ||
    fail "devq-info (build tree) does not list the vulkan plugin built beside it"
grep -q "^plugin folders: .*$top_builddir/plugins/vulkan/.libs" "$tmp/info" ||
    fail "devq-info (build tree) does not name the build tree's plugin folders"

# A libdevq.so outside a build folder's .libs: no build-tree folders.
if [ ! -x "$top_builddir/tools/.libs/devq-info" ] || ! ls "$top_builddir"/.libs/libdevq.so* > /dev/null 2>&1; then
    echo "note: no shared libdevq.so or libtool-wrapped devq-info: the copied-library check is skipped"
elif mkdir "$tmp/lib"; then
    cp -P "$top_builddir"/.libs/libdevq.so* "$tmp/lib/" || exit 99
    env -u DEVQ_PLUGIN_PATH LD_LIBRARY_PATH="$tmp/lib" "$top_builddir/tools/.libs/devq-info" > "$tmp/info2" 2>&1
    grep -q "^plugin folders: $tmp/lib/devq$" "$tmp/info2" || fail "the copy searches $(grep '^plugin folders' "$tmp/info2")"
    if grep -q "plugins/vulkan/.libs" "$tmp/info2"; then
        fail "a libdevq.so outside the build tree searched the build tree's plugins"
    fi
fi

[ "$failures" = 0 ] && echo "PASS: the build tree finds its own plugins" && exit 0
exit 1
