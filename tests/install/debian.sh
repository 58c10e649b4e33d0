#!/bin/sh
# Build devq's Debian packages from the tracked files of SRCDIR (in a copy:
# the source tree stays unconfigured for the VPATH builds), check them
# with lintian (no errors), install them on this machine, smoke-test the
# installed copy (devq-info, the README program built with pkg-config, man
# pages present) and remove them again.  Root or sudo; needs debhelper,
# dh-autoreconf and lintian (.ci/run installs them).  The package build
# runs no tests (DEB_BUILD_OPTIONS=nocheck): the suites ran before it.
# Usage: tests/install/debian.sh SRCDIR WORKDIR
set -eu
src=$(cd "${1:?usage: debian.sh SRCDIR WORKDIR}" && pwd)
work=${2:?usage: debian.sh SRCDIR WORKDIR}
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
rm -rf "$work" && mkdir -p "$work/devq"
work=$(cd "$work" && pwd)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

(cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -x -C "$work/devq"

# The cuda plugin needs cuda.h, which Debian main does not have.
profiles=""
if [ -f /usr/local/cuda/include/cuda.h ]; then
    cuda=yes
else
    cuda=no
    profiles="nocuda"
    echo "no /usr/local/cuda/include/cuda.h: building without devq-plugin-cuda (profile nocuda)"
fi
echo "=== dpkg-buildpackage -us -uc -b ${profiles:+-P$profiles}"
(cd "$work/devq" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" DPKG_GENSYMBOLS_CHECK_LEVEL=2 \
    dpkg-buildpackage -us -uc -b ${profiles:+-P$profiles}) > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "FAIL: dpkg-buildpackage"; exit 1; }
debs=$(cd "$work" && ls ./*.deb | grep -v -- -dbgsym_)
echo "built:" $debs

echo "=== lintian"
(cd "$work" && lintian --fail-on error --tag-display-limit 0 ./*.changes) || fail "lintian reports errors"

echo "=== install"
(cd "$work" && $SUDO apt-get install -y -q --no-install-recommends $debs) > "$work/apt.log" 2>&1 ||
    { tail -20 "$work/apt.log"; echo "FAIL: installing the packages"; exit 1; }
libdir=$(pkg-config --variable=libdir devq)

echo "=== smoke test of the installed packages"
out=$(devq-info 2>&1) || fail "devq-info exited $?: $out"
printf '%s\n' "$out" | grep -q -x "plugin folders: $libdir/devq" || fail "devq-info: $(printf '%s\n' "$out" | head -3)"
for b in hip $( [ $cuda = yes ] && echo cuda ); do
    printf '%s\n' "$out" | grep -q -x "  $libdir/devq/devq-$b.so" || fail "devq-info did not load devq-$b.so"
done
printf '%s\n' "$out" | grep -q "^devq_device_open(NULL) opens cpu:0$" || fail "no default device"
readelf -d "$(command -v devq-info)" | grep -q -i "rpath\|runpath" && fail "devq-info has a run path under /usr"
sed -n '/^```c$/,/^```$/p' "$src/README.md" | sed '1d;$d' > "$work/hello.c"
line=$(grep -o 'cc -rdynamic hello.c [^`]*' "$src/README.md" | head -n1)
(cd "$work" && sh -c "$line") || fail "README compile line: $line"
hello=$("$work/hello" 2>&1) || fail "hello exited $?: $hello"
case "$hello" in *"(expected 30)"*) ;; *) fail "hello printed '$hello'" ;; esac
for page in devq-info devq-bench devq-trace-svg devq_queue_submit devq_buffer_alloc devq devq-plugin devq-hip \
            $( [ $cuda = yes ] && echo devq-cuda ); do
    man -w "$page" > /dev/null 2>&1 || fail "no man page $page"
done

echo "=== remove"
$SUDO apt-get purge -y -q libdevq1 > "$work/purge.log" 2>&1 || fail "purging libdevq1"
[ "$failures" = 0 ] && echo "PASS: Debian packages" && exit 0
exit 1
