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
 * DEVQ_EMU_DRIVER_VERSION (default: EMU_CUDA_DRIVER_VERSION, a CUDA 13.0
 * driver, whatever headers built the emulator) is what cuDriverGetVersion
 * reports. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define DEVQ_CUDA_DECLS_PROTOTYPES
#include "cuda_decls.h" /* plugins/cuda: no CUDA toolkit needed */
#include "emu_engine.h"

#define EXPORT __attribute__((visibility("default")))
#define EMU_CUDA_DRIVER_VERSION 13000

/* ---- errors ---- */

struct cu_error {
    CUresult code;
    const char *name, *text;
    bool sticky;
};

#define E(c, t)         \
    {                   \
        c, #c, t, false \
    }
#define S(c, t)        \
    {                  \
        c, #c, t, true \
    }
static const struct cu_error cu_errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    S(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    S(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    S(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    S(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
      "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    S(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    S(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    S(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    S(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    S(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    S(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E
#undef S

static const struct cu_error *find_error(CUresult r)
{
    for (size_t i = 0; i < sizeof cu_errors / sizeof cu_errors[0]; i++)
        if (cu_errors[i].code == r)
            return &cu_errors[i];
    return NULL;
}

static bool parse_error(const char *name, int *code, bool *sticky)
{
    for (size_t i = 1; i < sizeof cu_errors / sizeof cu_errors[0]; i++)
        if (strcmp(cu_errors[i].name, name) == 0) {
            *code = (int)cu_errors[i].code;
            *sticky = cu_errors[i].sticky;
            return true;
        }
    return false;
}

static const struct emu_face cuda_face = { .name = "cuda", .parse_error = parse_error };

/* Engine status -> CUresult. */
static CUresult cu(int st)
{
    switch (st) {
    case EMU_OK:
        return CUDA_SUCCESS;
    case EMU_E_INVALID_VALUE:
        return CUDA_ERROR_INVALID_VALUE;
    case EMU_E_INVALID_HANDLE:
        return CUDA_ERROR_INVALID_HANDLE;
    case EMU_E_OUT_OF_MEMORY:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case EMU_E_NOT_READY:
        return CUDA_ERROR_NOT_READY;
    case EMU_E_NOT_FOUND:
        return CUDA_ERROR_NOT_FOUND;
    case EMU_E_INVALID_IMAGE:
        return CUDA_ERROR_INVALID_IMAGE;
    case EMU_E_ILLEGAL_ADDRESS:
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    case EMU_E_LAUNCH_FAILED:
        return CUDA_ERROR_LAUNCH_FAILED;
    case EMU_E_NOT_INITIALIZED:
        return CUDA_ERROR_NOT_INITIALIZED;
    case EMU_E_INVALID_DEVICE:
        return CUDA_ERROR_INVALID_DEVICE;
    case EMU_E_INVALID_CONTEXT:
        return CUDA_ERROR_INVALID_CONTEXT;
    case EMU_E_ALREADY_REGISTERED:
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    case EMU_E_NOT_REGISTERED:
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    case EMU_E_NOT_SUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return st > 0 ? (CUresult)st : CUDA_ERROR_UNKNOWN;
    }
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    const struct cu_error *e = find_error(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    const struct cu_error *e = find_error(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- init, current context, fault injection ---- */

/* initial-exec: a dlopened library's dynamic TLS trips LeakSanitizer's
 * thread scan (it reads a bogus DTLS range and crashes at exit). */
static __thread emu_ctx *current __attribute__((tls_model("initial-exec")));
/* Set while a host function or stream callback runs: the real driver
 * refuses every call from there with CUDA_ERROR_NOT_PERMITTED. */
static __thread bool in_callback __attribute__((tls_model("initial-exec")));

static int driver_version(void)
{
    const char *v = getenv("DEVQ_EMU_DRIVER_VERSION");
    return v && *v ? atoi(v) : EMU_CUDA_DRIVER_VERSION;
}

/* DEVQ_EMU_FAIL for calls that fail on the spot.  A sticky error also
 * poisons the current context, as a real one would be. */
static CUresult inject(const char *func)
{
    struct emu_fail f;
    if (!emu_fault_take(func, &f))
        return CUDA_SUCCESS;
    if (f.sticky && current)
        emu_ctx_poison(current, f.code);
    return (CUresult)f.code;
}

/* For work that runs on a stream: a sticky error happens when the work
 * runs (the call itself succeeds, as with a real faulting kernel); other
 * errors are returned by the call. */
static CUresult inject_async(const char *func, struct emu_fail *later)
{
    struct emu_fail f;
    *later = (struct emu_fail){ 0 };
    if (!emu_fault_take(func, &f))
        return CUDA_SUCCESS;
    if (f.sticky) {
        *later = f;
        return CUDA_SUCCESS;
    }
    return (CUresult)f.code;
}

/* The checks at the top of every context call; func NULL: the caller
 * does its own fault injection. */
/* What every call but the init and the queries checks first: the
 * library is initialised, and this is not a stream callback (which must
 * not call it). */
static CUresult call_check(void)
{
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (in_callback)
        return CUDA_ERROR_NOT_PERMITTED;
    return CUDA_SUCCESS;
}
#define CHECK_CALL()                \
    do {                            \
        CUresult r_ = call_check(); \
        if (r_)                     \
            return r_;              \
    } while (0)

static CUresult ctx_check(const char *func)
{
    CUresult r0 = call_check();
    if (r0)
        return r0;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = func ? inject(func) : CUDA_SUCCESS;
    if (r)
        return r;
    return cu(emu_ctx_status(current));
}

#define CHECK(func)                    \
    do {                               \
        CUresult r_ = ctx_check(func); \
        if (r_)                        \
            return r_;                 \
    } while (0)

EXPORT CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (emu_init(&cuda_face))
        return CUDA_ERROR_INVALID_VALUE; /* a bad DEVQ_EMU_* value, told on stderr */
    return inject("cuInit");
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = driver_version();
    return CUDA_SUCCESS;
}

/* ---- devices ---- */

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = emu_device_count();
    return inject("cuDeviceGetCount");
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!emu_device_attrs(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return inject("cuDeviceGet");
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    const struct emu_device_attrs *a = emu_device_attrs(dev);
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!a)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", a->name);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    const struct emu_device_attrs *a = emu_device_attrs(dev);
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!a)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = a->total_memory;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    const struct emu_device_attrs *a = emu_device_attrs(dev);
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!a)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = a->multiprocessors;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        *pi = a->async_engines;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        *pi = a->memory_pools;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
        *pi = a->stream_memops;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        *pi = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = 8;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *pi = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        *pi = 48 * 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *pi = 32;
        break;
    default:
        *pi = 0;
        break;
    }
    return inject("cuDeviceGetAttribute");
}

/* ---- contexts ---- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = inject("cuDevicePrimaryCtxRetain");
    if (r)
        return r;
    emu_ctx *c;
    int st = emu_primary_retain(dev, &c);
    if (st)
        return cu(st);
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CHECK_CALL();
    return cu(emu_primary_release(dev));
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CHECK_CALL();
    current = (emu_ctx *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!emu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)current;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CHECK("cuCtxGetStreamPriorityRange");
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* ---- streams ---- */

static emu_stream *stream_of(CUstream s)
{
    return (emu_stream *)s;
}

EXPORT CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
    CHECK("cuStreamCreateWithPriority");
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    if (priority > 0)
        priority = 0;
    if (priority < -5)
        priority = -5;
    emu_stream *s;
    int st = emu_stream_create(current, priority, &s);
    if (st)
        return cu(st);
    *ph = (CUstream)s;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy(CUstream h)
{
    CHECK_CALL();
    if (!emu_stream_valid(stream_of(h)))
        return CUDA_ERROR_INVALID_HANDLE;
    emu_ctx *c = emu_stream_ctx(stream_of(h));
    int poisoned = emu_ctx_status(c);
    emu_stream_destroy(stream_of(h)); /* resources go back even when poisoned */
    return cu(poisoned);
}

EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    CHECK("cuStreamSynchronize");
    return cu(emu_stream_synchronize(stream_of(h)));
}

EXPORT CUresult cuStreamQuery(CUstream h)
{
    CHECK("cuStreamQuery");
    return cu(emu_stream_query(stream_of(h)));
}

EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags)
{
    CHECK("cuStreamWaitEvent");
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return cu(emu_stream_wait_event(stream_of(h), (emu_event *)e));
}

/* cuStreamAddCallback: run even after a context error, with the error. */
struct callback {
    CUstream stream;
    CUstreamCallback fn;
    void *arg;
};

static void run_callback(void *arg, int status)
{
    struct callback cb = *(struct callback *)arg;
    free(arg);
    in_callback = true;
    cb.fn(cb.stream, cu(status), cb.arg);
    in_callback = false;
}

EXPORT CUresult cuStreamAddCallback(CUstream h, CUstreamCallback fn, void *userData, unsigned int flags)
{
    CHECK("cuStreamAddCallback");
    if (!fn || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct callback *cb = malloc(sizeof *cb);
    if (!cb)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *cb = (struct callback){ h, fn, userData };
    int st = emu_enqueue_host_fn(stream_of(h), run_callback, cb, true);
    if (st)
        free(cb);
    return cu(st);
}

/* cuLaunchHostFunc: like the real driver, never called once the context
 * has failed. */
struct hostfunc {
    CUhostFn fn;
    void *arg;
};

static void run_hostfunc(void *arg, int status)
{
    struct hostfunc hf = *(struct hostfunc *)arg;
    free(arg);
    if (status == 0) {
        in_callback = true;
        hf.fn(hf.arg);
        in_callback = false;
    }
}

EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *userData)
{
    CHECK("cuLaunchHostFunc");
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct hostfunc *hf = malloc(sizeof *hf);
    if (!hf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *hf = (struct hostfunc){ fn, userData };
    /* run_on_error so the record is freed; run_hostfunc skips fn. */
    int st = emu_enqueue_host_fn(stream_of(h), run_hostfunc, hf, true);
    if (st)
        free(hf);
    return cu(st);
}

/* ---- events ---- */

EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
    CHECK("cuEventCreate");
    if (!ph || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    emu_event *e;
    int st = emu_event_create(current, !(flags & CU_EVENT_DISABLE_TIMING), &e);
    if (st)
        return cu(st);
    *ph = (CUevent)e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy(CUevent e)
{
    CHECK_CALL();
    return cu(emu_event_destroy((emu_event *)e));
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream h)
{
    CHECK("cuEventRecord");
    return cu(emu_event_record((emu_event *)e, stream_of(h)));
}

EXPORT CUresult cuEventQuery(CUevent e)
{
    CHECK("cuEventQuery");
    return cu(emu_event_query((emu_event *)e));
}

EXPORT CUresult cuEventSynchronize(CUevent e)
{
    CHECK("cuEventSynchronize");
    return cu(emu_event_synchronize((emu_event *)e));
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    CHECK("cuEventElapsedTime");
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    return cu(emu_event_elapsed_ms((emu_event *)start, (emu_event *)end, ms));
}

/* ---- memory ---- */

EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CHECK("cuMemAlloc");
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    void *p;
    int st = emu_mem_alloc(current, bytesize, &p);
    if (st)
        return cu(st);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
    CHECK("cuMemFree");
    return cu(emu_mem_free((void *)(uintptr_t)dptr));
}

static bool pools_supported(void)
{
    const struct emu_device_attrs *a = emu_device_attrs(emu_ctx_ordinal(current));
    return a && a->memory_pools;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream h)
{
    CHECK("cuMemAllocAsync");
    if (!pools_supported())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!dptr || !emu_stream_valid(stream_of(h)))
        return CUDA_ERROR_INVALID_VALUE;
    /* The pool hands out memory at once; the stream orders its first use. */
    void *p;
    int st = emu_mem_alloc(current, bytesize, &p);
    if (st)
        return cu(st);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream h)
{
    CHECK("cuMemFreeAsync");
    if (!pools_supported())
        return CUDA_ERROR_NOT_SUPPORTED;
    return cu(emu_enqueue_free(stream_of(h), (void *)(uintptr_t)dptr));
}

#define ASYNC_INJECT(func, later)                 \
    CHECK(NULL);                                  \
    struct emu_fail later;                        \
    do {                                          \
        CUresult r_ = inject_async(func, &later); \
        if (r_)                                   \
            return r_;                            \
    } while (0)

EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{
    ASYNC_INJECT("cuMemcpyHtoDAsync", later);
    return cu(emu_enqueue_copy(stream_of(h), (void *)(uintptr_t)dst, src, n, later));
}

EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
    ASYNC_INJECT("cuMemcpyDtoHAsync", later);
    return cu(emu_enqueue_copy(stream_of(h), dst, (const void *)(uintptr_t)src, n, later));
}

EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
    ASYNC_INJECT("cuMemcpyDtoDAsync", later);
    return cu(emu_enqueue_copy(stream_of(h), (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, later));
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream h)
{
    ASYNC_INJECT("cuMemsetD8Async", later);
    return cu(emu_enqueue_fill(stream_of(h), (void *)(uintptr_t)dst, uc, n, later));
}

EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int flags)
{
    CHECK("cuMemHostRegister");
    if (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP))
        return CUDA_ERROR_INVALID_VALUE;
    return cu(emu_host_register(p, bytesize));
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    CHECK("cuMemHostUnregister");
    return cu(emu_host_unregister(p));
}

EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    CHECK("cuMemHostGetDevicePointer");
    if (!pdptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *d;
    int st = emu_host_device_pointer(p, &d);
    if (st)
        return cu(st);
    *pdptr = (CUdeviceptr)(uintptr_t)d;
    return CUDA_SUCCESS;
}

static bool memops_supported(void)
{
    const struct emu_device_attrs *a = emu_device_attrs(emu_ctx_ordinal(current));
    return a && a->stream_memops;
}

EXPORT CUresult cuStreamWaitValue64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    CHECK("cuStreamWaitValue64");
    if (!memops_supported())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (flags != CU_STREAM_WAIT_VALUE_GEQ)
        return CUDA_ERROR_NOT_SUPPORTED; /* the only condition devq uses */
    return cu(emu_enqueue_wait_value(stream_of(h), (uint64_t *)(uintptr_t)addr, value));
}

EXPORT CUresult cuStreamWriteValue64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
{
    CHECK("cuStreamWriteValue64");
    if (!memops_supported())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (flags != CU_STREAM_WRITE_VALUE_DEFAULT)
        return CUDA_ERROR_NOT_SUPPORTED;
    return cu(emu_enqueue_write_value(stream_of(h), (uint64_t *)(uintptr_t)addr, value));
}

/* ---- modules: "devq-emu-module" text images (emu_module.c) ----
 *
 * A kernel is a function of this process, found with dlsym:
 *   int name(void **kernelParams, const devq_cpu_group *g)
 * run once per block; nonzero is a launch failure.  Parameters are CUDA
 * style: kernelParams[i] points at the value (at the CUdeviceptr for a
 * pointer), unless the module asks for devq's cpu-kernel convention
 * ("devq-emu-module cpu-args"). */

_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "emu_module.c sizes a ptr parameter as a host pointer");

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CHECK("cuModuleLoadData");
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    emu_kmodule *m;
    int st = emu_module_parse(image, &m);
    if (st)
        return cu(st);
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule module)
{
    CHECK_CALL();
    return cu(emu_module_unload((emu_kmodule *)module));
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule module, const char *name)
{
    CHECK("cuModuleGetFunction");
    struct emu_kfunc *f;
    /* a bad module is reported before a missing hfunc, as the driver does */
    int st = emu_module_function((emu_kmodule *)module, name, hfunc ? &f : NULL);
    if (st)
        return cu(st);
    *hfunc = (CUfunction)f;
    return CUDA_SUCCESS;
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

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int sharedMemBytes,
                               CUstream h, void **kernelParams, void **extra)
{
    ASYNC_INJECT("cuLaunchKernel", later);
    struct emu_kfunc *fn = (struct emu_kfunc *)f;
    if (!fn || !fn->fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (extra)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((uint64_t)bx * by * bz > 1024 || sharedMemBytes > 48 * 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (fn->nparams && !kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    const uint32_t grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    return cu(emu_enqueue_kernel(stream_of(h), fn->fn, grid, block, kernelParams, fn->sizes, fn->deref,
                                 fn->nparams, later));
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
    int dv = driver_version();
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
