#!/bin/sh
# SPDX-License-Identifier: MIT
# Build devq's Debian packages the way a distribution does, from Debian
# packages alone: the release tarball (`make dist`'s, given as TARBALL or
# made here from the tracked files of SRCDIR) becomes devq_VERSION.orig.tar.gz,
# SRCDIR's debian/ goes beside it (it is not in the tarball), and
# dpkg-buildpackage builds the 3.0 (quilt) source package and every binary
# package with DEB_BUILD_OPTIONS=nocheck (the suites ran before it) and no
# CUDA toolkit (debian/rules: --with-cuda=no; checked below).  Then:
# lintian --pedantic on the source and binary packages (any tag not
# overridden in debian/*lintian-overrides fails), install them on this
# machine, smoke-test the installed copy (devq-info, the README program
# built with pkg-config, man pages present and every cited overview page
# installed by a dependency; with Open MPI, devq-plugin-mpi's contents and
# the devq_channel_create_mpi(3) example on 2 ranks), run the autopkgtest
# tests of debian/tests/control directly, and remove the packages again.
# Each phase is timed.  Root or sudo; needs debhelper, dh-autoreconf,
# lintian (.ci/run installs them).
# Usage: tests/install/debian.sh SRCDIR WORKDIR [TARBALL]
set -eu
src=$(cd "${1:?usage: debian.sh SRCDIR WORKDIR [TARBALL]}" && pwd)
work=${2:?usage: debian.sh SRCDIR WORKDIR [TARBALL]}
tarball=${3:-}
[ -z "$tarball" ] || tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t0=$(date +%s)
phase_start=$t0
phase() {   # phase NAME: the time of the phase before, then NAME's header
    now=$(date +%s)
    [ "$now" = "$t0" ] || echo "    ($((now - phase_start)) s)"
    phase_start=$now
    echo "=== $1"
}

phase "release tarball"
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
    # A clean copy of the tracked files, as a fresh clone has them.
    mkdir "$work/dist"
    (cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -x -C "$work/dist"
    # Configured as CI's distcheck is (by default): conditional EXTRA_DIST
    # files are distributed only where their condition holds.
    (cd "$work/dist" && ./autogen.sh && ./configure -q && make dist) > "$work/dist.log" 2>&1 ||
        { tail -30 "$work/dist.log"; echo "FAIL: make dist"; exit 1; }
    tarball=$(ls "$work"/dist/devq-*.tar.gz | head -n1)
fi
base=$(basename "$tarball" .tar.gz)
upstream=${base#devq-}
deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "${deb_version%-*}" = "$upstream" ] ||
    { echo "FAIL: debian/changelog is at $deb_version, the tarball at $upstream: add a changelog entry"; exit 1; }
tar -tzf "$tarball" | grep -q "^$base/debian/" && fail "$base.tar.gz holds debian/ (it must come from the repository only)"
cp "$tarball" "$work/devq_$upstream.orig.tar.gz"
tar -xzf "$work/devq_$upstream.orig.tar.gz" -C "$work"
(cd "$src" && git ls-files -z debian | tar --null -T - -cf -) | tar -x -C "$work/$base"
echo "$base.tar.gz -> devq_$upstream.orig.tar.gz + debian/ ($deb_version)"

# devq-plugin-mpi needs Open MPI's headers (libopenmpi-dev; .ci/run installs it).
profiles=""
if pkg-config --exists ompi-c 2>/dev/null; then
    mpi=yes
else
    mpi=no
    profiles="pkg.devq.nompi"
    echo "no Open MPI (pkg-config ompi-c): building without devq-plugin-mpi (profile pkg.devq.nompi)"
fi
phase "dpkg-buildpackage -us -uc ${profiles:+-P$profiles} (source and binaries, nocheck)"
(cd "$work/$base" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" DPKG_GENSYMBOLS_CHECK_LEVEL=2 \
    dpkg-buildpackage -us -uc ${profiles:+-P$profiles}) > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "FAIL: dpkg-buildpackage"; exit 1; }
# From Debian alone: the cuda plugin built, and no toolkit looked at.
grep -q '^ *cuda backend: *yes' "$work/build.log" || fail "the cuda plugin was not built: $(grep 'cuda backend' "$work/build.log")"
grep -q '^ *cuda toolkit: *none' "$work/build.log" || fail "configure looked at a CUDA toolkit: $(grep 'cuda toolkit' "$work/build.log")"
grep -q 'usr/local/cuda' "$work/build.log" && fail "the build log names /usr/local/cuda"
grep -q "couldn't open directory" "$work/build.log" && fail "autoreconf warns: $(grep "couldn't open directory" "$work/build.log")"
debs=$(cd "$work" && for d in ./*.deb; do case $d in *-dbgsym_*) ;; *) [ -e "$d" ] && echo "$d";; esac; done)
echo "built:" $debs
phase "package contents"
if [ $mpi = yes ]; then
    # The engine alone in its package, MPI only in its dependencies: a
    # program that never makes a channel never needs MPI installed.
    mpideb=$(cd "$work" && ls ./devq-plugin-mpi_*.deb 2>/dev/null | head -n1)
    if [ -z "$mpideb" ]; then
        fail "no devq-plugin-mpi package built"
    else
        files=$(dpkg-deb -c "$work/$mpideb" | awk '$1 !~ /^d/ { print $NF }' | grep -v '^\./usr/share/\(doc\|lintian\)/')
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
printf '%s\n' "$devfiles" | grep -q '/usr/lib/[^/]*/libdevq\.a$' || fail "libdevq-dev lacks the static library libdevq.a"
# Every overview page (section 7) a package cites is installed with it:
# shipped by the package itself or by one it depends on or recommends.
for deb in $debs; do
    pkg=$(dpkg-deb -f "$work/$deb" Package)
    rels=$(dpkg-deb -f "$work/$deb" Depends Recommends | sed 's/^[A-Za-z]*: //' | tr ',|' '\n\n' | sed 's/^ *//; s/[ (].*//')
    rm -rf "$work/x" && mkdir "$work/x" && dpkg-deb -x "$work/$deb" "$work/x"
    cited=$( (find "$work/x" -name '*.gz' -path '*/man/*' -exec zcat {} + 2>/dev/null
              dpkg-deb -f "$work/$deb" Description) |
             grep -o 'devq[a-z-]*\( \|\\f[RP]\)*(7)' | sed 's/[ (].*//; s/\\f[RP]//' | sort -u)
    for page in $cited; do
        owner=$(cd "$work" && for d in $debs; do
                    dpkg-deb -c "$d" 2>/dev/null | grep -q "/man7/$page\.7\.gz$" && dpkg-deb -f "$d" Package; done | head -n1)
        [ -n "$owner" ] || { fail "$pkg cites $page(7), which no package ships"; continue; }
        [ "$owner" = "$pkg" ] && continue
        printf '%s\n' "$rels" | grep -q -x "$owner" ||
            fail "$pkg cites $page(7), shipped by $owner, but neither depends on nor recommends it"
    done
done

phase "lintian --pedantic"
(cd "$work" && lintian -I --pedantic --fail-on error,warning,info,pedantic --tag-display-limit 0 ./*.changes) ||
    fail "lintian --pedantic reports tags (justify one in debian/*lintian-overrides, or fix it)"

phase "install"
(cd "$work" && $SUDO apt-get install -y -q --no-install-recommends $debs) > "$work/apt.log" 2>&1 ||
    { tail -20 "$work/apt.log"; echo "FAIL: installing the packages"; exit 1; }
libdir=$(pkg-config --variable=libdir devq)

phase "smoke test of the installed packages"
out=$(devq-info 2>&1) || fail "devq-info exited $?: $out"
printf '%s\n' "$out" | grep -q -x "plugin folders: $libdir/devq" || fail "devq-info: $(printf '%s\n' "$out" | head -3)"
for b in cuda hip vulkan; do
    printf '%s\n' "$out" | grep -q -x "  $libdir/devq/devq-$b.so" || fail "devq-info did not load devq-$b.so"
done
printf '%s\n' "$out" | grep -q "^devq_device_open(NULL) opens cpu:0$" || fail "no default device"
readelf -d "$(command -v devq-info)" | grep -q -i "rpath\|runpath" && fail "devq-info has a run path under /usr"
# The first ```c block only: later ones (the graph section) are fragments.
awk '/^```c$/ && !done { on = 1; next } on && /^```$/ { on = 0; done = 1 } on' "$src/README.md" > "$work/hello.c"
line=$(grep -o 'cc -rdynamic hello.c [^`]*' "$src/README.md" | head -n1)
(cd "$work" && sh -c "$line") || fail "README compile line: $line"
hello=$("$work/hello" 2>&1) || fail "hello exited $?: $hello"
case "$hello" in *"(expected 30)"*) ;; *) fail "hello printed '$hello'" ;; esac
for page in devq-info devq-bench devq-trace-svg devq_queue_submit devq_buffer_alloc devq devq-cpu devq-channels \
            devq-plugin devq-cuda devq-hip devq-vulkan; do
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

# The autopkgtest tests, run directly on this machine (their Depends are
# what .ci/run installs), from the unpacked source as autopkgtest would.
phase "autopkgtest (debian/tests/control)"
tests=$(sed -n 's/^Tests: *//p' "$work/$base/debian/tests/control" | tr ',' ' ')
[ -n "$tests" ] || fail "debian/tests/control names no test"
for t in $tests; do
    tmp=$(mktemp -d)
    if (cd "$work/$base" && AUTOPKGTEST_TMP=$tmp "debian/tests/$t") > "$work/autopkgtest-$t.log" 2>&1; then
        echo "autopkgtest $t: PASS"; sed 's/^/    /' "$work/autopkgtest-$t.log"
    else
        cat "$work/autopkgtest-$t.log"; fail "autopkgtest $t"
    fi
    rm -rf "$tmp"
done

phase "remove"
$SUDO apt-get purge -y -q libdevq1 devq-doc > "$work/purge.log" 2>&1 || fail "purging libdevq1 and devq-doc"
now=$(date +%s)
echo "    ($((now - phase_start)) s)"
echo "debian: $((now - t0)) s in all"
[ "$failures" = 0 ] && echo "PASS: Debian packages" && exit 0
exit 1
