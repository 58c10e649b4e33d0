#!/bin/sh
# Build devq's Debian packages from the tracked files of SRCDIR (in a copy:
# the source tree stays unconfigured for the VPATH builds), check them
# with lintian (no errors), install them on this machine, smoke-test the
# installed copy (devq-info, the README program built with pkg-config, man
# pages present; with Open MPI, devq-plugin-mpi's contents and the
# devq_channel_create_mpi(3) example on 2 ranks) and remove them again.  Root or sudo; needs debhelper,
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
# devq-plugin-mpi needs Open MPI's headers (libopenmpi-dev; .ci/run installs it).
if pkg-config --exists ompi-c 2>/dev/null; then
    mpi=yes
else
    mpi=no
    profiles="${profiles:+$profiles,}nompi"
    echo "no Open MPI (pkg-config ompi-c): building without devq-plugin-mpi (profile nompi)"
fi
echo "=== dpkg-buildpackage -us -uc -b ${profiles:+-P$profiles}"
(cd "$work/devq" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" DPKG_GENSYMBOLS_CHECK_LEVEL=2 \
    dpkg-buildpackage -us -uc -b ${profiles:+-P$profiles}) > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "FAIL: dpkg-buildpackage"; exit 1; }
debs=$(cd "$work" && ls ./*.deb | grep -v -- -dbgsym_)
echo "built:" $debs

echo "=== package contents"
if [ $mpi = yes ]; then
    # The engine alone in its package, MPI only in its dependencies: a
    # program that never makes a channel never needs MPI installed.
    mpideb=$(cd "$work" && ls ./devq-plugin-mpi_*.deb 2>/dev/null | head -n1)
    if [ -z "$mpideb" ]; then
        fail "no devq-plugin-mpi package built"
    else
        files=$(dpkg-deb -c "$work/$mpideb" | awk '$1 !~ /^d/ { print $NF }' | grep -v '^\./usr/share/doc/')
        printf '%s\n' "$files" | grep -q -x '\./usr/lib/[^/]*/devq/engines/devq-mpi\.so' ||
            fail "devq-plugin-mpi lacks usr/lib/*/devq/engines/devq-mpi.so: $files"
        [ "$(printf '%s\n' "$files" | wc -l)" = 1 ] || fail "devq-plugin-mpi holds more than the engine: $files"
        dpkg-deb -f "$work/$mpideb" Depends | grep -q 'libopenmpi' ||
            fail "devq-plugin-mpi does not depend on Open MPI: $(dpkg-deb -f "$work/$mpideb" Depends)"
    fi
fi
dpkg-deb -f "$work"/libdevq1_*.deb Depends | grep -q -i 'mpi' &&
    fail "libdevq1 depends on MPI: $(dpkg-deb -f "$work"/libdevq1_*.deb Depends)"
devfiles=$(dpkg-deb -c "$work"/libdevq-dev_*.deb)
printf '%s\n' "$devfiles" | grep -q '/usr/include/devq/devq_mpi\.h$' || fail "libdevq-dev lacks devq_mpi.h"

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

if [ $mpi = yes ]; then
    man -w devq_channel_create_mpi > /dev/null 2>&1 || fail "no man page devq_channel_create_mpi"
    # The installed engine: devq-info sees it, and the example of
    # devq_channel_create_mpi(3) builds with pkg-config (devq and
    # ompi-c) and runs on 2 ranks, printing what the page says.
    printf '%s\n' "$out" | grep -q "caps:.* channels" || fail "devq-info: no 'channels' capability with devq-plugin-mpi"
    if command -v mpirun >/dev/null 2>&1; then
        page="$src/man/man3/devq_channel_create_mpi.3"
        awk '/^\.EX/ { n++; inex = 1; next } /^\.EE/ { inex = 0; next }
             inex && n == 1 { print > "'"$work"'/mpi_ex.roff" } inex && n == 2 { print > "'"$work"'/mpi_ex.expect" }' "$page"
        sed -e 's/\\e/\\/g' -e 's/\\-/-/g' "$work/mpi_ex.roff" > "$work/mpi_ex.c"
        # shellcheck disable=SC2046  # pkg-config's flag lists
        if cc "$work/mpi_ex.c" -o "$work/mpi_ex" $(pkg-config --cflags --libs devq ompi-c); then
            mout=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
                   OMPI_MCA_rmaps_base_oversubscribe=1 timeout -k 10 120 mpirun -np 2 "$work/mpi_ex" 2>&1) ||
                fail "the devq_channel_create_mpi(3) example exited $?: $mout"
            while IFS= read -r line; do
                printf '%s\n' "$mout" | grep -q -x -F "$line" || fail "the MPI example did not print '$line': $mout"
            done < "$work/mpi_ex.expect"
            printf 'devq_channel_create_mpi(3) example, installed, on 2 ranks:\n%s\n' "$mout"
        else
            fail "the devq_channel_create_mpi(3) example does not build against the installed packages"
        fi
    else
        echo "no mpirun (openmpi-bin): the installed MPI engine is not run"
    fi
fi

echo "=== remove"
$SUDO apt-get purge -y -q libdevq1 > "$work/purge.log" 2>&1 || fail "purging libdevq1"
[ "$failures" = 0 ] && echo "PASS: Debian packages" && exit 0
exit 1
