#!/bin/sh
# SPDX-License-Identifier: MIT
# Build devq for tests/gpu/run.sh on a GPU machine that has the NVIDIA
# driver but no autotools or Check (a lent device machine): configure
# and build HEAD here into .gpu/ (ignored through .git/info/exclude),
# then carry .gpu there and run tests/gpu/device.sh.
#
#   tests/gpu/bundle.sh            (from the repository root; CUDA_HOME
#                                   default /usr/local/cuda, for cuda.h)
#
# Built with --disable-fast-install (libtool's wrappers never relink)
# and --disable-dependency-tracking (a header missing there remakes
# nothing); device.sh gives every file one timestamp, so make there
# only runs tests.  The build's absolute paths are this tree's: the
# folder is recorded in .gpu/ROOT and device.sh links it.
set -eu
top=$(git rev-parse --show-toplevel)
cd "$top"
cuda_home=${CUDA_HOME:-/usr/local/cuda}
grep -qx '/.gpu/' "$(git rev-parse --git-path info/exclude)" 2>/dev/null ||
    echo /.gpu/ >>"$(git rev-parse --git-path info/exclude)"
rm -rf .gpu
mkdir -p .gpu/src .gpu/lib
git archive HEAD | tar -x -C .gpu/src
(cd .gpu/src && ./autogen.sh >/dev/null 2>&1 && rm -rf autom4te.cache)
mkdir .gpu/src/b
cd .gpu/src/b
../configure -q --enable-cuda=yes --with-cuda="$cuda_home" --enable-vulkan=no --enable-hip=no \
    --disable-dependency-tracking --disable-fast-install CFLAGS="-O2 -g1"
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" check TESTS= >/dev/null
make examples/cuda-saxpy >/dev/null
cd "$top"
# what the test programs need beyond glibc
for f in .gpu/src/b/tests/conformance/.libs/conformance .gpu/src/b/tests/unit/test_cuda_emu; do
    { ldd "$f" 2>/dev/null || true; } | awk '/=> \// && !/libc\.so|libm\.so|ld-linux|libdevq|libpthread|libdl|librt/ { print $3 }'
done | sort -u | while read -r lib; do cp -L "$lib" .gpu/lib/; done
cp tests/gpu/device.sh .gpu/
echo "$top" >.gpu/ROOT
du -sh .gpu
echo "carry .gpu and run: sh .gpu/device.sh   (BENCH=1 adds devq-bench on cuda and cpu)"
