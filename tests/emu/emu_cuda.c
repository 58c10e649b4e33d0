/* SPDX-License-Identifier: MIT */
/* The CUDA face of the emulator: the subset of the CUDA driver API that
 * devq-cuda.so uses, over emu_engine.  Built as tests/emu/libcuda-emu.so
 * and loaded by the plugin through DEVQ_CUDA_LIBRARY.
 *
 * Functions are defined under the names the macros of cuda_decls.h (as
 * those of cuda.h) give them (cuMemAlloc -> cuMemAlloc_v2, ...), which
 * are the names a real
 * libcuda.so.1 exports; cuGetProcAddress hands them out by base name.
 *
 * DEVQ_EMU_DRIVER_VERSION (default: FACE_DEFAULT_VERSION, a CUDA 13.0
 * driver, whatever headers built the emulator) is what cuDriverGetVersion
 * reports, and what cuGetProcAddress knows.
 *
 * What both drivers have is in the shared front (emu_face.h,
 * emu_front_*.c, built here with EMU_FACE_CUDA); this file holds what
 * only CUDA has: its error lookups, the current context of a thread,
 * cuInit, primary contexts, cuFuncGetParamInfo and cuGetProcAddress. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu_face.h"


/* ---- errors ---- */

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = emu_front_error_name(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = emu_front_error_text(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- init, the current context: the front's hooks ---- */

/* initial-exec: see emu_front_in_callback. */
static __thread emu_ctx *current __attribute__((tls_model("initial-exec")));

bool face_ready(void)
{
    return emu_initialized();
}

emu_ctx *face_current(void)
{
    return current;
}

face_result face_no_context(void)
{
    return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* cuStreamAddCallback: the error as it is. */
face_result face_callback_status(int st)
{
    return emu_front_status(st);
}

EXPORT CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (emu_init(&emu_front_face))
        return CUDA_ERROR_INVALID_VALUE; /* a bad DEVQ_EMU_* value, told on stderr */
    return emu_front_inject("cuInit");
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    CUresult r = emu_front_out_check(count);
    if (r)
        return r;
    *count = emu_device_count();
    return emu_front_inject("cuDeviceGetCount");
}

/* ---- contexts ---- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = emu_front_out_check(pctx);
    if (!r)
        r = emu_front_inject("cuDevicePrimaryCtxRetain");
    if (r)
        return r;
    emu_ctx *c;
    int st = emu_primary_retain(dev, &c);
    RETURN_MADE(st, pctx, (CUcontext)c);
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CHECK_CALL();
    return emu_front_status(emu_primary_release(dev));
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CHECK_CALL();
    current = (emu_ctx *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = emu_front_out_check(pctx);
    if (!r)
        *pctx = (CUcontext)current;
    return r;
}

/* ---- what only CUDA has of streams and kernels ---- */

EXPORT CUresult cuStreamWaitValue64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    return emu_front_wait_value("cuStreamWaitValue64", h, HPTR(addr), value,
                                flags == CU_STREAM_WAIT_VALUE_GEQ);
}

/* Driver 12.4+: each parameter's offset and size in the parameter
 * buffer, from the module's declared sizes (each aligned to its size, up
 * to 8, as the compiler lays them out).  Hidden like any entry point:
 * DEVQ_EMU_MISSING=cuFuncGetParamInfo or DEVQ_EMU_DRIVER_VERSION below
 * 12040 is a driver without it (the plugin then checks no launch). */
EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    CHECK("cuFuncGetParamInfo");
    const struct emu_kfunc *fn = (const struct emu_kfunc *)func;
    if (!fn || !fn->fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!paramOffset || paramIndex >= fn->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (size_t i = 0;; i++) {
        size_t align = fn->sizes[i] >= 8 ? 8 : fn->sizes[i] >= 4 ? 4 : fn->sizes[i] >= 2 ? 2 : 1;
        off = (off + align - 1) & ~(align - 1);
        if (i == paramIndex)
            break;
        off += fn->sizes[i];
    }
    *paramOffset = off;
    if (paramSize)
        *paramSize = fn->sizes[paramIndex];
    return CUDA_SUCCESS;
}

/* ---- entry points by name ---- */

struct proc {
    const char *name;
    int since;
    void *fn;
};

#define P(name, since)             \
    {                              \
#name, since, (void *)name \
    }
static const struct proc procs[] = {
    P(cuGetErrorName, 6000),
    P(cuGetErrorString, 6000),
    P(cuInit, 2000),
    P(cuDriverGetVersion, 2020),
    P(cuDeviceGet, 2000),
    P(cuDeviceGetCount, 2000),
    P(cuDeviceGetName, 2000),
    P(cuDeviceTotalMem, 3020),
    P(cuDeviceGetAttribute, 2000),
    P(cuDevicePrimaryCtxRetain, 7000),
    P(cuDevicePrimaryCtxRelease, 11000),
    P(cuCtxSetCurrent, 4000),
    P(cuCtxGetCurrent, 4000),
    P(cuCtxGetStreamPriorityRange, 5050),
    P(cuStreamCreateWithPriority, 5050),
    P(cuStreamDestroy, 4000),
    P(cuStreamSynchronize, 2000),
    P(cuStreamQuery, 2000),
    P(cuStreamWaitEvent, 3020),
    P(cuStreamAddCallback, 5000),
    P(cuLaunchHostFunc, 10000),
    P(cuEventCreate, 2000),
    P(cuEventDestroy, 4000),
    P(cuEventRecord, 2000),
    P(cuEventQuery, 2000),
    P(cuEventSynchronize, 2000),
    P(cuEventElapsedTime, 2000),
    P(cuMemAlloc, 3020),
    P(cuMemFree, 3020),
    P(cuMemAllocAsync, 11020),
    P(cuMemFreeAsync, 11020),
    P(cuMemcpyHtoDAsync, 3020),
    P(cuMemcpyDtoHAsync, 3020),
    P(cuMemcpyDtoDAsync, 3020),
    P(cuMemsetD8Async, 3020),
    P(cuMemHostRegister, 6050),
    P(cuMemHostUnregister, 4000),
    P(cuMemHostGetDevicePointer, 3020),
    P(cuStreamWaitValue64, 9000),
    P(cuStreamWriteValue64, 9000),
    P(cuModuleLoadData, 2000),
    P(cuModuleUnload, 2000),
    P(cuModuleGetFunction, 2000),
    P(cuLaunchKernel, 4000),
    P(cuFuncGetParamInfo, 12040),
    /* graphs: the ABI versions implemented (kernel nodes take CUDA 12's
     * CUDA_KERNEL_NODE_PARAMS_v2) */
    P(cuGraphCreate, 10000),
    P(cuGraphAddKernelNode, 12000),
    P(cuGraphInstantiateWithFlags, 11040),
    P(cuGraphLaunch, 10000),
    P(cuGraphExecKernelNodeSetParams, 12000),
    P(cuGraphExecDestroy, 10000),
    P(cuGraphDestroy, 10000),
};
#undef P

/* The macros of cuda_decls.h renamed the definitions above (cuMemAlloc ->
 * cuMemAlloc_v2, cuGetProcAddress -> cuGetProcAddress_v2); the table's
 * #name strings are the base names, taken before expansion. */
#undef cuGetProcAddress

static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion,
                         CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult dummy;
    if (!status)
        status = &dummy;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    int dv = emu_front_version();
    if (cudaVersion > dv)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (emu_symbol_missing(symbol))
        return CUDA_SUCCESS;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        if (procs[i].since > dv)
            return CUDA_SUCCESS; /* this driver would not know it */
        if (cudaVersion < procs[i].since) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_SUCCESS;
        }
        *pfn = procs[i].fn;
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)flags;
    return get_proc(symbol, pfn, cudaVersion, symbolStatus);
}

/* The CUDA 11.3 form, kept by real drivers for old callers. */
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    (void)flags;
    return get_proc(symbol, pfn, cudaVersion, NULL);
}
