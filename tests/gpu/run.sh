#!/bin/sh
# SPDX-License-Identifier: MIT
# devq on a real NVIDIA GPU: build with the cuda backend, run the plugin's
# own tests (over the emulated driver, as CI does), the backend-agnostic
# conformance suites against the real driver, the graph suite on CUDA
# graphs (no run replayed op by op), and the PTX SAXPY example
# checked against the host.  Not run by `make check`: CI has no GPU.
#
#   tests/gpu/run.sh [BUILD_DIR]        (default: ./build-gpu)
#
# The conformance kernels run as tests/gpu/conf_kernels.ptx (PTX ISA 6.0,
# sm_60: JIT-compiled for any GPU since Pascal), made from conf_kernels.cu
# by `make gpu-ptx`; CONF_KERNEL_MODULE tells the suites where it is.
#
# Environment: CUDA_HOME (default /usr/local/cuda) holds include/cuda.h;
# DEVQ_CUDA_LIBRARY may name the driver (default libcuda.so.1);
# CONF_KERNEL_MODULE another image with the conf_<name> kernels;
# JOBS (default: nproc) for make; DEVQ_GPU_PREBUILT=1 skips configure and
# build when BUILD_DIR was configured and built (make check TESTS=) on
# another machine -- for a GPU machine without autotools or Check: build
# with --disable-fast-install (libtool's wrappers then never relink) and
# give every file one timestamp there, so make finds nothing to remake.
set -eu

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$PWD/build-gpu}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
failed=0
passed=0

step() { printf '\n== %s\n' "$*"; }
ok() { passed=$((passed + 1)); printf 'PASS: %s\n' "$*"; }
bad() { failed=$((failed + 1)); printf 'FAIL: %s\n' "$*"; }

step "driver"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
else
    echo "nvidia-smi not found: is the NVIDIA driver installed?"
fi

if [ "${DEVQ_GPU_PREBUILT:-0}" = 1 ] && [ -f "$build/config.status" ]; then
    step "prebuilt in $build (DEVQ_GPU_PREBUILT=1)"
    cd "$build"
else
    step "configure and build in $build"
    [ -x "$srcdir/configure" ] || (cd "$srcdir" && ./autogen.sh)
    mkdir -p "$build"
    cd "$build"
    "$srcdir/configure" -q --enable-cuda=yes --with-cuda="$cuda_home"
    make -j"$jobs"
    # every check program, without running any yet
    make -j"$jobs" check TESTS=
fi

step "the conformance kernels' PTX"
# ptx-assemble skips (and make check passes) without ptxas in CUDA_HOME/bin
if PATH="$PATH:$cuda_home/bin" make check TESTS="tests/gpu/ptx-kernels tests/gpu/ptx-assemble"; then
    ok "tests/gpu/conf_kernels.ptx matches conf_kernels.c and assembles"
else
    bad "tests/gpu/conf_kernels.ptx (see tests/gpu/ptx-*.log; make gpu-ptx regenerates it)"
fi

step "cuda plugin over the emulated driver"
if make check TESTS="tests/unit/test_cuda_emu tests/scripts/gpu-plugin-cuda-emu tests/scripts/gpu-faults-cuda-emu \
    tests/scripts/gpu-graph-cuda-emu tests/scripts/graph-native-emu"; then
    ok "plugin tests (emulated driver)"
else
    bad "plugin tests (emulated driver)"
fi

# From here on: the real driver, found by the plugin in this build tree.
unset DEVQ_EMU_FAIL DEVQ_EMU_DELAY DEVQ_EMU_MISSING 2>/dev/null || true
DEVQ_PLUGIN_PATH="$build/plugins/cuda/.libs"
DEVQ_BACKEND=cuda
DEVQ_TEST_DEVICE=cuda
CONF_KERNEL_MODULE=${CONF_KERNEL_MODULE:-$srcdir/tests/gpu/conf_kernels.ptx}
export DEVQ_PLUGIN_PATH DEVQ_BACKEND DEVQ_TEST_DEVICE CONF_KERNEL_MODULE

step "devices"
if [ -x tools/devq-info ]; then
    tools/devq-info || bad "devq-info"
fi

step "conformance suites on cuda"
# The backend-agnostic runner; DEVQ_TEST_DEVICE=cuda points it at the GPU
# (the tests/conformance-<backend> wrappers would force their backend), and
# its kernels come from CONF_KERNEL_MODULE.  The kernel-failure tests are
# skipped: a trap loses a GPU's context (no DEVQ_CAP_SKIP_ON_ERROR).
if [ -x tests/conformance/conformance ]; then
    if tests/conformance/conformance; then
        ok "tests/conformance/conformance (cuda)"
    else
        bad "tests/conformance/conformance (cuda)"
    fi
else
    bad "tests/conformance/conformance not built"
fi

step "graphs on cuda: the driver's own (CUDA graphs)"
# The conformance graph suite again, logging: on a driver with graphs
# (devq-info lists graph_native) every run of launches must become a
# CUDA graph -- libdevq logs "replay without a native graph" when the
# plugin's graph_create refused one (its reason follows), and replays.
if [ -x tests/conformance/conformance ]; then
    if tools/devq-info 2>/dev/null | grep -q 'graph_native'; then
        rm -f "$build/graph-native.log"
        if DEVQ_LOG=full DEVQ_LOG_FILE="$build/graph-native.log" CK_RUN_SUITE=graph tests/conformance/conformance &&
            ! grep 'replay without a native graph' "$build/graph-native.log"; then
            ok "graph suite on CUDA graphs (cuGraphInstantiateWithFlags/cuGraphLaunch)"
        else
            bad "graph suite on CUDA graphs (see above and $build/graph-native.log)"
        fi
    else
        bad "the cuda device does not report graph_native: the driver lacks CUDA 12 graphs (devq-info; DEVQ_LOG=basic says which entry point)"
    fi
else
    bad "tests/conformance/conformance not built"
fi

step "PTX SAXPY example"
if make examples/cuda-saxpy && ./examples/cuda-saxpy cuda:0; then
    ok "examples/cuda-saxpy"
else
    bad "examples/cuda-saxpy"
fi

printf '\n%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
