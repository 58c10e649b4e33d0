#!/bin/sh
# SPDX-License-Identifier: MIT
# The emulated drivers export exactly the symbols the plugins dlopen them
# for (the cuda plugin asks cuGetProcAddress for most, but a real
# libcuda.so.1 exports them under these names; the hip plugin dlsyms
# every one; libnccl-emu/librccl-emu dlsym devq_emu_engine), whatever
# file of tests/emu defines them: the CUDA and HIP faces share their
# front end (tests/emu/emu_face.h), so a function left out of a face or
# exported by mistake shows here.  The -old and -broken HIP variants
# lack what they stand for.  nm -D --defined-only of each library must
# equal its list below, no more, no less.
# Run by 'make check' (top_builddir from AM_TESTS_ENVIRONMENT); skipped
# (77) without nm or when no emulated driver is built.
set -u
top_builddir=${top_builddir:-.}
libs=$top_builddir/tests/emu/.libs

cuda_syms() {
    cat <<'LIST'
cuCtxGetCurrent cuCtxGetStreamPriorityRange cuCtxSetCurrent cuDeviceGet
cuDeviceGetAttribute cuDeviceGetCount cuDeviceGetName cuDevicePrimaryCtxRelease_v2
cuDevicePrimaryCtxRetain cuDeviceTotalMem_v2 cuDriverGetVersion cuEventCreate
cuEventDestroy_v2 cuEventElapsedTime_v2 cuEventQuery cuEventRecord cuEventSynchronize
cuFuncGetParamInfo cuGetErrorName cuGetErrorString cuGetProcAddress cuGetProcAddress_v2
cuInit cuLaunchHostFunc cuLaunchKernel cuMemAllocAsync cuMemAlloc_v2 cuMemFreeAsync
cuMemFree_v2 cuMemHostGetDevicePointer_v2 cuMemHostRegister_v2 cuMemHostUnregister
cuMemcpyDtoDAsync_v2 cuMemcpyDtoHAsync_v2 cuMemcpyHtoDAsync_v2 cuMemsetD8Async
cuModuleGetFunction cuModuleLoadData cuModuleUnload cuStreamAddCallback
cuStreamCreateWithPriority cuStreamDestroy_v2 cuStreamQuery cuStreamSynchronize
cuStreamWaitEvent cuStreamWaitValue64_v2 cuStreamWriteValue64_v2 devq_emu_engine
cuGraphCreate cuGraphAddKernelNode_v2 cuGraphInstantiateWithFlags cuGraphLaunch
cuGraphExecKernelNodeSetParams_v2 cuGraphExecDestroy cuGraphDestroy
LIST
}

# The HIP runtime's, less what a variant leaves out ($1: -old, -broken or
# nothing); only the full one carries devq_emu_engine (for librccl-emu).
hip_syms() {
    {
        cat <<'LIST'
hipDeviceGet hipDeviceGetAttribute hipDeviceGetName hipDeviceGetStreamPriorityRange
hipDeviceReset hipDeviceSynchronize hipDeviceTotalMem hipDriverGetVersion
hipEventCreateWithFlags hipEventDestroy hipEventElapsedTime hipEventQuery hipEventRecord
hipEventSynchronize hipFree hipGetDevice hipGetDeviceCount hipGetErrorName
hipGetErrorString hipHostGetDevicePointer hipHostRegister hipHostUnregister hipInit
hipMalloc hipMemcpyDtoDAsync hipMemcpyDtoHAsync hipMemcpyHtoDAsync hipMemsetD8Async
hipModuleGetFunction hipModuleLoadData hipModuleUnload hipRuntimeGetVersion hipSetDevice
hipStreamCreateWithPriority hipStreamDestroy hipStreamQuery hipStreamSynchronize
hipStreamWaitEvent
LIST
        case $1 in
        -old) echo hipModuleLaunchKernel hipStreamAddCallback ;;
        -broken) echo hipFreeAsync hipMallocAsync hipStreamWaitValue64 hipStreamWriteValue64 ;;
        *) echo devq_emu_engine hipModuleLaunchKernel hipStreamAddCallback hipFreeAsync \
            hipMallocAsync hipStreamWaitValue64 hipStreamWriteValue64 ;;
        esac
        # graphs are optional: -old has none
        case $1 in
        -old) ;;
        *) echo hipGraphCreate hipGraphAddKernelNode hipGraphInstantiateWithFlags hipGraphLaunch \
            hipGraphExecKernelNodeSetParams hipGraphExecDestroy hipGraphDestroy ;;
        esac
    }
}

command -v nm >/dev/null 2>&1 || { echo "emu-exports: nm not found (binutils)"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
checked=0 failures=0

# check LIBRARY: compare its dynamic symbols with the list on stdin.
check() {
    so=$libs/$1.so
    if [ ! -f "$so" ]; then
        echo "emu-exports: $so not built: skipped"
        return
    fi
    tr ' ' '\n' | sed '/^$/d' | sort >"$tmp/want"
    nm -D --defined-only "$so" | awk '{ print $NF }' | sort >"$tmp/have"
    checked=$((checked + 1))
    if cmp -s "$tmp/want" "$tmp/have"; then
        echo "ok: $1 exports its $(wc -l <"$tmp/want") symbols"
        return
    fi
    failures=$((failures + 1))
    comm -23 "$tmp/want" "$tmp/have" | sed "s/^/FAIL: $1 does not export /"
    comm -13 "$tmp/want" "$tmp/have" | sed "s/^/FAIL: $1 also exports /"
}

# (lists through a file: check must run in this shell to count)
cuda_syms >"$tmp/list" && check libcuda-emu <"$tmp/list"
hip_syms "" >"$tmp/list" && check libamdhip64-emu <"$tmp/list"
hip_syms -old >"$tmp/list" && check libamdhip64-emu-old <"$tmp/list"
hip_syms -broken >"$tmp/list" && check libamdhip64-emu-broken <"$tmp/list"

[ "$checked" -gt 0 ] || { echo "emu-exports: no emulated driver built (no cuda or hip area)"; exit 77; }
[ "$failures" -eq 0 ] || exit 1
exit 0
