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
 * stream callbacks get hipSuccess whatever happened, as ROCm's do.
 *
 * What both drivers have is in the shared front (emu_face.h,
 * emu_front_*.c, built here with EMU_FACE_HIP and the variant's macro);
 * this file holds what only HIP has: its error lookups, the per-thread
 * device and its primary contexts, hipDeviceReset, the ROCm callbacks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include "emu_face.h"

/* ---- errors: pure lookups, allowed anywhere, callbacks included ---- */

EXPORT const char *hipGetErrorName(hipError_t error)
{
    const char *name = emu_front_error_name(error);
    return name ? name : "hipErrorUnknown";
}

EXPORT const char *hipGetErrorString(hipError_t error)
{
    const char *text = emu_front_error_text(error);
    return text ? text : "unknown error";
}

/* ---- init, the current device: the front's hooks ---- */

/* initial-exec: see emu_front_in_callback. */
static __thread int current_device __attribute__((tls_model("initial-exec")));

static struct {
    pthread_once_t once;
    pthread_mutex_t reset_mu; /* hipDeviceReset against itself */
    emu_ctx *primary[64];
} face = { .once = PTHREAD_ONCE_INIT, .reset_mu = PTHREAD_MUTEX_INITIALIZER };

static void init_once(void)
{
    if (emu_init(&emu_front_face))
        return; /* a bad DEVQ_EMU_* value, told on stderr */
    int n = emu_device_count();
    for (int i = 0; i < n && i < 64; i++)
        emu_primary_retain(i, &face.primary[i]);
}

/* The runtime initialises itself at the first call of any function. */
bool face_ready(void)
{
    pthread_once(&face.once, init_once);
    return emu_initialized();
}

emu_ctx *face_current(void)
{
    int d = current_device;
    return d >= 0 && d < emu_device_count() && d < 64 ? face.primary[d] : NULL;
}

face_result face_no_context(void)
{
    if (emu_device_count() == 0)
        return hipErrorNoDevice;
    return face_current() ? hipSuccess : hipErrorInvalidDevice;
}

/* DEVQ_EMU_HIP_ROCM_CALLBACKS=1: hand every callback hipSuccess, as
 * ROCm's runtime does, to test what the plugin does without the status. */
face_result face_callback_status(int st)
{
    const char *v = getenv("DEVQ_EMU_HIP_ROCM_CALLBACKS");
    return v && *v == '1' ? hipSuccess : emu_front_status(st);
}

EXPORT hipError_t hipInit(unsigned int flags)
{
    if (flags != 0)
        return hipErrorInvalidValue;
    if (!face_ready())
        return hipErrorInvalidValue;
    if (emu_device_count() == 0)
        return hipErrorInvalidDevice; /* what ROCm 5.2 says without a GPU */
    return emu_front_inject("hipInit");
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
    if (!face_ready())
        return hipErrorNotInitialized;
    *count = emu_device_count();
    if (*count == 0)
        return hipErrorNoDevice;
    return emu_front_inject("hipGetDeviceCount");
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
    hipError_t r = emu_front_out_check(deviceId);
    if (!r)
        *deviceId = current_device;
    return r;
}

/* Destroy and remake the current device's primary context: its streams,
 * events and memory go, and so does a sticky error. */
EXPORT hipError_t hipDeviceReset(void)
{
    CHECK_CALL();
    if (!face_current())
        return hipErrorInvalidDevice;
    hipError_t r = emu_front_inject("hipDeviceReset");
    if (r)
        return r;
    pthread_mutex_lock(&face.reset_mu);
    int d = current_device, st = emu_primary_release(d);
    if (!st)
        st = emu_primary_retain(d, &face.primary[d]);
    pthread_mutex_unlock(&face.reset_mu);
    return emu_front_status(st);
}

EXPORT hipError_t hipDeviceSynchronize(void)
{
    CHECK("hipDeviceSynchronize");
    return emu_front_status(emu_ctx_synchronize(face_current()));
}

#if FACE_HAS_OPTIONAL
/* Only what devq uses: >= on the whole word. */
EXPORT hipError_t hipStreamWaitValue64(hipStream_t h, void *ptr, uint64_t value, unsigned int flags,
                                       uint64_t mask)
{
    bool supported = flags == hipStreamWaitValueGte && mask == UINT64_MAX;
    return emu_front_wait_value("hipStreamWaitValue64", h, ptr, value, supported);
}
#endif
