/* SPDX-License-Identifier: MIT */
/* The HIP face of the emulator: the subset of the HIP runtime API that
 * devq-hip.so uses, over emu_engine.  Built as
 * tests/emu/libamdhip64-emu.so and loaded by the plugin through
 * DEVQ_HIP_LIBRARY.
 *
 * HIP has no cuGetProcAddress: the plugin finds every function with
 * dlsym, so DEVQ_EMU_MISSING cannot hide one.  Instead the build makes
 * variants of this library with some functions left out:
 * EMU_HIP_NO_OPTIONAL (no hipMallocAsync, hipFreeAsync,
 * hipStreamWaitValue64, hipStreamWriteValue64: an older runtime) and
 * EMU_HIP_NO_REQUIRED (no hipModuleLaunchKernel, hipStreamAddCallback).
 *
 * As in the runtime, each device has one primary context, made at
 * hipInit (or the first call) and selected per thread by hipSetDevice
 * (device 0 until then); hipDeviceReset destroys and remakes it.  With
 * DEVQ_EMU_DEVICES=0 the face answers as ROCm does on a machine without
 * an AMD GPU: hipInit gives hipErrorInvalidDevice and hipGetDeviceCount
 * hipErrorNoDevice.  Calls from a stream callback are refused with
 * hipErrorIllegalState (the runtime forbids them; it has no
 * "not permitted" code).
 *
 * DEVQ_EMU_DRIVER_VERSION (default: HIP_VERSION of the headers) is what
 * hipRuntimeGetVersion reports.  DEVQ_EMU_HIP_ROCM_CALLBACKS=1 makes
 * stream callbacks get hipSuccess whatever happened, as ROCm's do. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hip/hip_runtime_api.h>
#include "emu_engine.h"

#define EXPORT __attribute__((visibility("default")))
/* The runtime headers declare every function with default visibility,
 * so a variant leaves functions out by not defining them at all. */
#ifdef EMU_HIP_NO_OPTIONAL
#define HAVE_OPTIONAL 0
#else
#define HAVE_OPTIONAL 1
#endif
#ifdef EMU_HIP_NO_REQUIRED
#define HAVE_REQUIRED 0
#else
#define HAVE_REQUIRED 1
#endif

/* ---- errors ---- */

struct hip_error {
    hipError_t code;
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
static const struct hip_error hip_errors[] = {
    E(hipSuccess, "no error"),
    E(hipErrorInvalidValue, "invalid argument"),
    E(hipErrorOutOfMemory, "out of memory"),
    E(hipErrorNotInitialized, "initialization error"),
    E(hipErrorDeinitialized, "driver shutting down"),
    E(hipErrorInvalidConfiguration, "invalid configuration argument"),
    E(hipErrorInvalidDevicePointer, "invalid device pointer"),
    E(hipErrorInsufficientDriver, "driver version is insufficient for runtime version"),
    E(hipErrorInvalidDeviceFunction, "invalid device function"),
    E(hipErrorNoDevice, "no ROCm-capable device is detected"),
    E(hipErrorInvalidDevice, "invalid device ordinal"),
    E(hipErrorInvalidImage, "device kernel image is invalid"),
    E(hipErrorInvalidContext, "invalid device context"),
    E(hipErrorNoBinaryForGpu, "no kernel image is available for execution on the device"),
    S(hipErrorECCNotCorrectable, "uncorrectable ECC error encountered"),
    E(hipErrorInvalidKernelFile, "invalid kernel file"),
    E(hipErrorInvalidHandle, "invalid resource handle"),
    E(hipErrorIllegalState, "the operation cannot be performed in the present state"),
    E(hipErrorNotFound, "named symbol not found"),
    E(hipErrorNotReady, "device not ready"),
    S(hipErrorIllegalAddress, "an illegal memory access was encountered"),
    E(hipErrorLaunchOutOfResources, "too many resources requested for launch"),
    S(hipErrorLaunchTimeOut, "the launch timed out and was terminated"),
    E(hipErrorContextIsDestroyed, "context is destroyed"),
    S(hipErrorAssert, "device-side assert triggered"),
    E(hipErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
    E(hipErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
    S(hipErrorLaunchFailure, "unspecified launch failure"),
    E(hipErrorNotSupported, "operation not supported"),
    E(hipErrorUnknown, "unknown error"),
};
#undef E
#undef S
#define NERRORS (sizeof hip_errors / sizeof hip_errors[0])

static const struct hip_error *find_error(hipError_t r)
{
    for (size_t i = 0; i < NERRORS; i++)
        if (hip_errors[i].code == r)
            return &hip_errors[i];
    return NULL;
}

static bool parse_error(const char *name, int *code, bool *sticky)
{
    for (size_t i = 1; i < NERRORS; i++)
        if (strcmp(hip_errors[i].name, name) == 0) {
            *code = (int)hip_errors[i].code;
            *sticky = hip_errors[i].sticky;
            return true;
        }
    return false;
}

static const struct emu_face hip_face = { .name = "hip", .parse_error = parse_error };

/* Engine status -> hipError_t. */
static hipError_t hip(int st)
{
    switch (st) {
    case EMU_OK:
        return hipSuccess;
    case EMU_E_INVALID_VALUE:
        return hipErrorInvalidValue;
    case EMU_E_INVALID_HANDLE:
        return hipErrorInvalidHandle;
    case EMU_E_OUT_OF_MEMORY:
        return hipErrorOutOfMemory;
    case EMU_E_NOT_READY:
        return hipErrorNotReady;
    case EMU_E_NOT_FOUND:
        return hipErrorNotFound;
    case EMU_E_INVALID_IMAGE:
        return hipErrorInvalidImage;
    case EMU_E_ILLEGAL_ADDRESS:
        return hipErrorIllegalAddress;
    case EMU_E_LAUNCH_FAILED:
        return hipErrorLaunchFailure;
    case EMU_E_NOT_INITIALIZED:
        return hipErrorNotInitialized;
    case EMU_E_INVALID_DEVICE:
        return hipErrorInvalidDevice;
    case EMU_E_INVALID_CONTEXT:
        return hipErrorInvalidContext;
    case EMU_E_ALREADY_REGISTERED:
        return hipErrorHostMemoryAlreadyRegistered;
    case EMU_E_NOT_REGISTERED:
        return hipErrorHostMemoryNotRegistered;
    case EMU_E_NOT_SUPPORTED:
        return hipErrorNotSupported;
    default:
        return st > 0 ? (hipError_t)st : hipErrorUnknown;
    }
}

/* Pure lookups: allowed anywhere, callbacks included. */
EXPORT const char *hipGetErrorName(hipError_t error)
{
    const struct hip_error *e = find_error(error);
    return e ? e->name : "hipErrorUnknown";
}

EXPORT const char *hipGetErrorString(hipError_t error)
{
    const struct hip_error *e = find_error(error);
    return e ? e->text : "unknown error";
}

/* ---- init, current device, fault injection ---- */

/* initial-exec: a dlopened library's dynamic TLS trips LeakSanitizer's
 * thread scan (it reads a bogus DTLS range and crashes at exit). */
static __thread int current_device __attribute__((tls_model("initial-exec")));
static __thread bool in_callback __attribute__((tls_model("initial-exec")));

static struct {
    pthread_once_t once;
    pthread_mutex_t reset_mu; /* hipDeviceReset against itself */
    emu_ctx *primary[64];
} face = { .once = PTHREAD_ONCE_INIT, .reset_mu = PTHREAD_MUTEX_INITIALIZER };

static void init_once(void)
{
    if (emu_init(&hip_face))
        return; /* a bad DEVQ_EMU_* value, told on stderr */
    int n = emu_device_count();
    for (int i = 0; i < n && i < 64; i++)
        emu_primary_retain(i, &face.primary[i]);
}

/* The runtime initialises itself at the first call of any function. */
static bool ready(void)
{
    pthread_once(&face.once, init_once);
    return emu_initialized();
}

static emu_ctx *current(void)
{
    int d = current_device;
    return d >= 0 && d < emu_device_count() && d < 64 ? face.primary[d] : NULL;
}

static int runtime_version(void)
{
    const char *v = getenv("DEVQ_EMU_DRIVER_VERSION");
    return v && *v ? atoi(v) : HIP_VERSION;
}

/* DEVQ_EMU_FAIL for calls that fail on the spot.  A sticky error also
 * poisons the current device's context, as a real one would be. */
static hipError_t inject(const char *func)
{
    struct emu_fail f;
    if (!emu_fault_take(func, &f))
        return hipSuccess;
    if (f.sticky && current())
        emu_ctx_poison(current(), f.code);
    return (hipError_t)f.code;
}

/* For work that runs on a stream: a sticky error happens when the work
 * runs (the call itself succeeds, as with a real faulting kernel); other
 * errors are returned by the call. */
static hipError_t inject_async(const char *func, struct emu_fail *later)
{
    struct emu_fail f;
    *later = (struct emu_fail){ 0 };
    if (!emu_fault_take(func, &f))
        return hipSuccess;
    if (f.sticky) {
        *later = f;
        return hipSuccess;
    }
    return (hipError_t)f.code;
}

/* The checks at the top of every device call; func NULL: the caller
 * does its own fault injection. */
/* What every call but the init and the queries checks first: the
 * library is initialised, and this is not a stream callback (which must
 * not call it). */
static hipError_t call_check(void)
{
    if (!ready())
        return hipErrorNotInitialized;
    if (in_callback)
        return hipErrorIllegalState;
    return hipSuccess;
}
#define CHECK_CALL()                  \
    do {                              \
        hipError_t r_ = call_check(); \
        if (r_)                       \
            return r_;                \
    } while (0)

static hipError_t dev_check(const char *func)
{
    hipError_t r0 = call_check();
    if (r0)
        return r0;
    if (emu_device_count() == 0)
        return hipErrorNoDevice;
    if (!current())
        return hipErrorInvalidDevice;
    hipError_t r = func ? inject(func) : hipSuccess;
    if (r)
        return r;
    return hip(emu_ctx_status(current()));
}

#define CHECK(func)                      \
    do {                                 \
        hipError_t r_ = dev_check(func); \
        if (r_)                          \
            return r_;                   \
    } while (0)

EXPORT hipError_t hipInit(unsigned int flags)
{
    if (flags != 0)
        return hipErrorInvalidValue;
    if (!ready())
        return hipErrorInvalidValue;
    if (emu_device_count() == 0)
        return hipErrorInvalidDevice; /* what ROCm 5.2 says without a GPU */
    return inject("hipInit");
}

EXPORT hipError_t hipRuntimeGetVersion(int *v)
{
    if (!v)
        return hipErrorInvalidValue;
    *v = runtime_version();
    return hipSuccess;
}

EXPORT hipError_t hipDriverGetVersion(int *v)
{
    return hipRuntimeGetVersion(v);
}

/* ---- devices ---- */

EXPORT hipError_t hipGetDeviceCount(int *count)
{
    if (!count)
        return hipErrorInvalidValue;
    *count = 0;
    if (!ready())
        return hipErrorNotInitialized;
    *count = emu_device_count();
    if (*count == 0)
        return hipErrorNoDevice;
    return inject("hipGetDeviceCount");
}

EXPORT hipError_t hipDeviceGet(hipDevice_t *dev, int ordinal)
{
    if (!ready())
        return hipErrorNotInitialized;
    if (!dev)
        return hipErrorInvalidValue;
    if (!emu_device_attrs(ordinal))
        return hipErrorInvalidDevice;
    *dev = ordinal;
    return inject("hipDeviceGet");
}

EXPORT hipError_t hipDeviceGetName(char *name, int len, hipDevice_t dev)
{
    if (!ready())
        return hipErrorNotInitialized;
    const struct emu_device_attrs *a = emu_device_attrs(dev);
    if (!a)
        return hipErrorInvalidDevice;
    if (!name || len <= 0)
        return hipErrorInvalidValue;
    snprintf(name, (size_t)len, "%s", a->name);
    return hipSuccess;
}

EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t dev)
{
    if (!ready())
        return hipErrorNotInitialized;
    const struct emu_device_attrs *a = emu_device_attrs(dev);
    if (!a)
        return hipErrorInvalidDevice;
    if (!bytes)
        return hipErrorInvalidValue;
    *bytes = a->total_memory;
    return hipSuccess;
}

EXPORT hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int deviceId)
{
    if (!ready())
        return hipErrorNotInitialized;
    const struct emu_device_attrs *a = emu_device_attrs(deviceId);
    if (!a)
        return hipErrorInvalidDevice;
    if (!pi)
        return hipErrorInvalidValue;
    switch (attr) {
    case hipDeviceAttributeMultiprocessorCount:
        *pi = a->multiprocessors;
        break;
    case hipDeviceAttributeAsyncEngineCount:
        *pi = a->async_engines;
        break;
    case hipDeviceAttributeMemoryPoolsSupported:
        *pi = a->memory_pools;
        break;
    case hipDeviceAttributeCanUseStreamWaitValue:
        *pi = a->stream_memops;
        break;
    case hipDeviceAttributeCanMapHostMemory:
    case hipDeviceAttributeUnifiedAddressing:
        *pi = 1;
        break;
    case hipDeviceAttributeMaxThreadsPerBlock:
        *pi = 1024;
        break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
        *pi = 64 * 1024;
        break;
    case hipDeviceAttributeWarpSize:
        *pi = 64;
        break;
    default:
        *pi = 0;
        break;
    }
    return inject("hipDeviceGetAttribute");
}

EXPORT hipError_t hipSetDevice(int deviceId)
{
    CHECK_CALL();
    if (emu_device_count() == 0)
        return hipErrorNoDevice;
    if (!emu_device_attrs(deviceId))
        return hipErrorInvalidDevice;
    current_device = deviceId;
    return hipSuccess;
}

EXPORT hipError_t hipGetDevice(int *deviceId)
{
    if (!ready())
        return hipErrorNotInitialized;
    if (!deviceId)
        return hipErrorInvalidValue;
    *deviceId = current_device;
    return hipSuccess;
}

/* Destroy and remake the current device's primary context: its streams,
 * events and memory go, and so does a sticky error. */
EXPORT hipError_t hipDeviceReset(void)
{
    CHECK_CALL();
    if (!current())
        return hipErrorInvalidDevice;
    hipError_t r = inject("hipDeviceReset");
    if (r)
        return r;
    pthread_mutex_lock(&face.reset_mu);
    int d = current_device, st = emu_primary_release(d);
    if (!st)
        st = emu_primary_retain(d, &face.primary[d]);
    pthread_mutex_unlock(&face.reset_mu);
    return hip(st);
}

EXPORT hipError_t hipDeviceSynchronize(void)
{
    CHECK("hipDeviceSynchronize");
    return hip(emu_ctx_synchronize(current()));
}

/* ROCm's range: 1 (low), 0 (normal), -1 (high). */
EXPORT hipError_t hipDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CHECK("hipDeviceGetStreamPriorityRange");
    if (leastPriority)
        *leastPriority = 1;
    if (greatestPriority)
        *greatestPriority = -1;
    return hipSuccess;
}

/* ---- streams ---- */

static emu_stream *stream_of(hipStream_t s)
{
    return (emu_stream *)s;
}

EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t *ph, unsigned int flags, int priority)
{
    CHECK("hipStreamCreateWithPriority");
    if (!ph || (flags & ~(unsigned)hipStreamNonBlocking))
        return hipErrorInvalidValue;
    if (priority > 1)
        priority = 1;
    if (priority < -1)
        priority = -1;
    emu_stream *s;
    int st = emu_stream_create(current(), priority, &s);
    if (st)
        return hip(st);
    *ph = (hipStream_t)s;
    return hipSuccess;
}

EXPORT hipError_t hipStreamDestroy(hipStream_t h)
{
    CHECK_CALL();
    if (!emu_stream_valid(stream_of(h)))
        return hipErrorInvalidHandle;
    emu_ctx *c = emu_stream_ctx(stream_of(h));
    int poisoned = emu_ctx_status(c);
    emu_stream_destroy(stream_of(h)); /* resources go back even when poisoned */
    return hip(poisoned);
}

EXPORT hipError_t hipStreamSynchronize(hipStream_t h)
{
    CHECK("hipStreamSynchronize");
    return hip(emu_stream_synchronize(stream_of(h)));
}

EXPORT hipError_t hipStreamQuery(hipStream_t h)
{
    CHECK("hipStreamQuery");
    return hip(emu_stream_query(stream_of(h)));
}

EXPORT hipError_t hipStreamWaitEvent(hipStream_t h, hipEvent_t e, unsigned int flags)
{
    CHECK("hipStreamWaitEvent");
    if (flags != 0)
        return hipErrorInvalidValue;
    return hip(emu_stream_wait_event(stream_of(h), (emu_event *)e));
}

#if HAVE_REQUIRED
/* hipStreamAddCallback: run even after a device error, with the error. */
struct callback {
    hipStream_t stream;
    hipStreamCallback_t fn;
    void *arg;
};

/* DEVQ_EMU_HIP_ROCM_CALLBACKS=1: hand every callback hipSuccess, as
 * ROCm's runtime does, to test what the plugin does without the status. */
static bool rocm_callbacks(void)
{
    const char *v = getenv("DEVQ_EMU_HIP_ROCM_CALLBACKS");
    return v && *v == '1';
}

static void run_callback(void *arg, int status)
{
    struct callback cb = *(struct callback *)arg;
    free(arg);
    in_callback = true;
    cb.fn(cb.stream, rocm_callbacks() ? hipSuccess : hip(status), cb.arg);
    in_callback = false;
}

EXPORT hipError_t hipStreamAddCallback(hipStream_t h, hipStreamCallback_t fn, void *userData,
                                       unsigned int flags)
{
    CHECK("hipStreamAddCallback");
    if (!fn || flags != 0)
        return hipErrorInvalidValue;
    struct callback *cb = malloc(sizeof *cb);
    if (!cb)
        return hipErrorOutOfMemory;
    *cb = (struct callback){ h, fn, userData };
    int st = emu_enqueue_host_fn(stream_of(h), run_callback, cb, true);
    if (st)
        free(cb);
    return hip(st);
}
#endif

/* ---- events ---- */

EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t *ph, unsigned flags)
{
    CHECK("hipEventCreateWithFlags");
    if (!ph || (flags & ~(unsigned)(hipEventBlockingSync | hipEventDisableTiming)))
        return hipErrorInvalidValue;
    emu_event *e;
    int st = emu_event_create(current(), !(flags & hipEventDisableTiming), &e);
    if (st)
        return hip(st);
    *ph = (hipEvent_t)e;
    return hipSuccess;
}

EXPORT hipError_t hipEventDestroy(hipEvent_t e)
{
    CHECK_CALL();
    return hip(emu_event_destroy((emu_event *)e));
}

EXPORT hipError_t hipEventRecord(hipEvent_t e, hipStream_t h)
{
    CHECK("hipEventRecord");
    return hip(emu_event_record((emu_event *)e, stream_of(h)));
}

EXPORT hipError_t hipEventQuery(hipEvent_t e)
{
    CHECK("hipEventQuery");
    return hip(emu_event_query((emu_event *)e));
}

EXPORT hipError_t hipEventSynchronize(hipEvent_t e)
{
    CHECK("hipEventSynchronize");
    return hip(emu_event_synchronize((emu_event *)e));
}

EXPORT hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop)
{
    CHECK("hipEventElapsedTime");
    if (!ms)
        return hipErrorInvalidValue;
    return hip(emu_event_elapsed_ms((emu_event *)start, (emu_event *)stop, ms));
}

/* ---- memory ---- */

EXPORT hipError_t hipMalloc(void **ptr, size_t size)
{
    CHECK("hipMalloc");
    if (!ptr)
        return hipErrorInvalidValue;
    return hip(emu_mem_alloc(current(), size, ptr));
}

EXPORT hipError_t hipFree(void *ptr)
{
    CHECK("hipFree");
    if (!ptr)
        return hipSuccess;
    return hip(emu_mem_free(ptr));
}

#if HAVE_OPTIONAL
static bool pools_supported(void)
{
    const struct emu_device_attrs *a = emu_device_attrs(current_device);
    return a && a->memory_pools;
}

EXPORT hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t h)
{
    CHECK("hipMallocAsync");
    if (!pools_supported())
        return hipErrorNotSupported;
    if (!dev_ptr || !emu_stream_valid(stream_of(h)))
        return hipErrorInvalidValue;
    /* The pool hands out memory at once; the stream orders its first use. */
    return hip(emu_mem_alloc(current(), size, dev_ptr));
}

EXPORT hipError_t hipFreeAsync(void *dev_ptr, hipStream_t h)
{
    CHECK("hipFreeAsync");
    if (!pools_supported())
        return hipErrorNotSupported;
    return hip(emu_enqueue_free(stream_of(h), dev_ptr));
}
#endif

#define ASYNC_INJECT(func, later)                   \
    CHECK(NULL);                                    \
    struct emu_fail later;                          \
    do {                                            \
        hipError_t r_ = inject_async(func, &later); \
        if (r_)                                     \
            return r_;                              \
    } while (0)

EXPORT hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void *src, size_t n, hipStream_t h)
{
    ASYNC_INJECT("hipMemcpyHtoDAsync", later);
    return hip(emu_enqueue_copy(stream_of(h), dst, src, n, later));
}

EXPORT hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t n, hipStream_t h)
{
    ASYNC_INJECT("hipMemcpyDtoHAsync", later);
    return hip(emu_enqueue_copy(stream_of(h), dst, src, n, later));
}

EXPORT hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n, hipStream_t h)
{
    ASYNC_INJECT("hipMemcpyDtoDAsync", later);
    return hip(emu_enqueue_copy(stream_of(h), dst, src, n, later));
}

EXPORT hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t n, hipStream_t h)
{
    ASYNC_INJECT("hipMemsetD8Async", later);
    return hip(emu_enqueue_fill(stream_of(h), dst, value, n, later));
}

EXPORT hipError_t hipHostRegister(void *p, size_t bytes, unsigned int flags)
{
    CHECK("hipHostRegister");
    if (flags & ~(unsigned)(hipHostRegisterPortable | hipHostRegisterMapped))
        return hipErrorInvalidValue;
    return hip(emu_host_register(p, bytes));
}

EXPORT hipError_t hipHostUnregister(void *p)
{
    CHECK("hipHostUnregister");
    return hip(emu_host_unregister(p));
}

EXPORT hipError_t hipHostGetDevicePointer(void **devPtr, void *hstPtr, unsigned int flags)
{
    CHECK("hipHostGetDevicePointer");
    if (!devPtr || flags != 0)
        return hipErrorInvalidValue;
    return hip(emu_host_device_pointer(hstPtr, devPtr));
}

#if HAVE_OPTIONAL
static bool memops_supported(void)
{
    const struct emu_device_attrs *a = emu_device_attrs(current_device);
    return a && a->stream_memops;
}

/* Only what devq uses: >= on the whole word.  (HIP's >= is unsigned,
 * the engine's cyclic: the same for values that only grow.) */
EXPORT hipError_t hipStreamWaitValue64(hipStream_t h, void *ptr, uint64_t value, unsigned int flags,
                                       uint64_t mask)
{
    CHECK("hipStreamWaitValue64");
    if (!memops_supported())
        return hipErrorNotSupported;
    if (flags != hipStreamWaitValueGte || mask != UINT64_MAX)
        return hipErrorNotSupported;
    return hip(emu_enqueue_wait_value(stream_of(h), ptr, value));
}

EXPORT hipError_t hipStreamWriteValue64(hipStream_t h, void *ptr, uint64_t value, unsigned int flags)
{
    CHECK("hipStreamWriteValue64");
    if (!memops_supported())
        return hipErrorNotSupported;
    if (flags != 0)
        return hipErrorNotSupported;
    return hip(emu_enqueue_write_value(stream_of(h), ptr, value));
}
#endif

/* ---- modules: "devq-emu-module" text images (emu_module.c) ---- */

EXPORT hipError_t hipModuleLoadData(hipModule_t *module, const void *image)
{
    CHECK("hipModuleLoadData");
    if (!module || !image)
        return hipErrorInvalidValue;
    emu_kmodule *m;
    int st = emu_module_parse(image, &m);
    if (st)
        return hip(st);
    *module = (hipModule_t)m;
    return hipSuccess;
}

EXPORT hipError_t hipModuleUnload(hipModule_t module)
{
    CHECK_CALL();
    return hip(emu_module_unload((emu_kmodule *)module));
}

EXPORT hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *kname)
{
    CHECK("hipModuleGetFunction");
    if (!function)
        return hipErrorInvalidValue;
    struct emu_kfunc *f;
    int st = emu_module_function((emu_kmodule *)module, kname, &f);
    if (st)
        return hip(st);
    *function = (hipFunction_t)f;
    return hipSuccess;
}

#if HAVE_REQUIRED
EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz,
                                        unsigned int sharedMemBytes, hipStream_t h, void **kernelParams,
                                        void **extra)
{
    ASYNC_INJECT("hipModuleLaunchKernel", later);
    struct emu_kfunc *fn = (struct emu_kfunc *)f;
    if (!fn || !fn->fn)
        return hipErrorInvalidHandle;
    if (extra)
        return hipErrorNotSupported;
    if ((uint64_t)bx * by * bz > 1024 || sharedMemBytes > 64 * 1024)
        return hipErrorInvalidValue;
    if (fn->nparams && !kernelParams)
        return hipErrorInvalidValue;
    const uint32_t grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    return hip(emu_enqueue_kernel(stream_of(h), fn->fn, grid, block, kernelParams, fn->sizes, fn->deref,
                                  fn->nparams, later));
}
#endif
