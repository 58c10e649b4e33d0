/* SPDX-License-Identifier: MIT */
/* The shared front of the emulated drivers (emu_face.h), part one: the
 * error table of both faces, engine status -> face code, fault injection,
 * the checks at the top of every call, and the device queries. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu_face.h"

/* ---- errors ---- */

struct face_error {
    face_result code;
    const char *name;
    int status; /* the engine status it stands for, or NO_STATUS */
    const char *text;
    bool sticky; /* poisons the context: DEVQ_EMU_FAIL of it is sticky */
};

/* One row per error both drivers have (CUDA's name, HIP's, the engine
 * status it stands for, the text); then those only one has. */
#define NO_STATUS 1 /* engine statuses are <= 0 */
#define ERR(cuda, hip, status, text, sticky)                       \
    {                                                              \
        FACE(cuda, hip), FACE_STR(cuda, hip), status, text, sticky \
    }
#define E(cuda, hip, status, text) ERR(cuda, hip, status, text, false)
#define S(cuda, hip, status, text) ERR(cuda, hip, status, text, true)
static const struct face_error errors[] = {
    E(CUDA_SUCCESS, hipSuccess, EMU_OK, "no error"), /* first: not a DEVQ_EMU_FAIL name */
    E(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue, EMU_E_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory, EMU_E_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized, EMU_E_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, hipErrorDeinitialized, NO_STATUS, "driver shutting down"),
    E(CUDA_ERROR_NO_DEVICE, hipErrorNoDevice, NO_STATUS,
      FACE("no CUDA-capable device is detected", "no ROCm-capable device is detected")),
    E(CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice, EMU_E_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, hipErrorInvalidImage, EMU_E_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, hipErrorInvalidContext, EMU_E_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, hipErrorNoBinaryForGpu, NO_STATUS,
      "no kernel image is available for execution on the device"),
    S(CUDA_ERROR_ECC_UNCORRECTABLE, hipErrorECCNotCorrectable, NO_STATUS,
      "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle, EMU_E_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, hipErrorIllegalState, NO_STATUS,
      "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, hipErrorNotFound, EMU_E_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, hipErrorNotReady, EMU_E_NOT_READY, "device not ready"),
    S(CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress, EMU_E_ILLEGAL_ADDRESS,
      "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, hipErrorLaunchOutOfResources, NO_STATUS,
      "too many resources requested for launch"),
    S(CUDA_ERROR_LAUNCH_TIMEOUT, hipErrorLaunchTimeOut, NO_STATUS, "the launch timed out and was terminated"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, hipErrorContextIsDestroyed, NO_STATUS, "context is destroyed"),
    S(CUDA_ERROR_ASSERT, hipErrorAssert, NO_STATUS, "device-side assert triggered"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, hipErrorHostMemoryAlreadyRegistered,
      EMU_E_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, hipErrorHostMemoryNotRegistered, EMU_E_NOT_REGISTERED,
      "pointer does not correspond to a registered memory region"),
    S(CUDA_ERROR_LAUNCH_FAILED, hipErrorLaunchFailure, EMU_E_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported, EMU_E_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_UNKNOWN, hipErrorUnknown, NO_STATUS, "unknown error"),
#if defined(EMU_FACE_CUDA)
    E(CUDA_ERROR_STUB_LIBRARY, -, NO_STATUS, "CUDA driver is a stub library"),
    E(CUDA_ERROR_INVALID_PTX, -, NO_STATUS, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, -, NO_STATUS,
      "the provided PTX was compiled with an unsupported toolchain."),
    E(CUDA_ERROR_OPERATING_SYSTEM, -, NO_STATUS, "OS call failed or operation not supported on this OS"),
    S(CUDA_ERROR_HARDWARE_STACK_ERROR, -, NO_STATUS, "hardware stack error"),
    S(CUDA_ERROR_ILLEGAL_INSTRUCTION, -, NO_STATUS, "an illegal instruction was encountered"),
    S(CUDA_ERROR_MISALIGNED_ADDRESS, -, NO_STATUS, "misaligned address"),
    S(CUDA_ERROR_INVALID_ADDRESS_SPACE, -, NO_STATUS,
      "operation not supported on global/shared address space"),
    S(CUDA_ERROR_INVALID_PC, -, NO_STATUS, "invalid program counter"),
    E(CUDA_ERROR_NOT_PERMITTED, -, NO_STATUS, "operation not permitted"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, -, NO_STATUS,
      "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_TIMEOUT, -, NO_STATUS, "wait operation timed out"),
#else
    E(-, hipErrorInvalidConfiguration, NO_STATUS, "invalid configuration argument"),
    E(-, hipErrorInvalidDevicePointer, NO_STATUS, "invalid device pointer"),
    E(-, hipErrorInsufficientDriver, NO_STATUS, "driver version is insufficient for runtime version"),
    E(-, hipErrorInvalidDeviceFunction, NO_STATUS, "invalid device function"),
    E(-, hipErrorInvalidKernelFile, NO_STATUS, "invalid kernel file"),
#endif
};
#undef E
#undef S
#undef ERR
#undef NO_STATUS
#define NERRORS (sizeof errors / sizeof errors[0])

static const struct face_error *find_error(face_result code)
{
    for (size_t i = 0; i < NERRORS; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

const char *emu_front_error_name(face_result code)
{
    const struct face_error *e = find_error(code);
    return e ? e->name : NULL;
}

const char *emu_front_error_text(face_result code)
{
    const struct face_error *e = find_error(code);
    return e ? e->text : NULL;
}

static bool parse_error(const char *name, int *code, bool *sticky)
{
    for (size_t i = 1; i < NERRORS; i++)
        if (strcmp(errors[i].name, name) == 0) {
            *code = (int)errors[i].code;
            *sticky = errors[i].sticky;
            return true;
        }
    return false;
}

const struct emu_face emu_front_face = { .name = FACE("cuda", "hip"), .parse_error = parse_error };

face_result emu_front_status(int st)
{
    if (st > 0)
        return (face_result)st; /* a face code injected by DEVQ_EMU_FAIL */
    for (size_t i = 0; i < NERRORS; i++)
        if (errors[i].status == st)
            return errors[i].code;
    return FACE(CUDA_ERROR_UNKNOWN, hipErrorUnknown);
}

int emu_front_version(void)
{
    const char *v = getenv("DEVQ_EMU_DRIVER_VERSION");
    return v && *v ? atoi(v) : FACE_DEFAULT_VERSION;
}

EXPORT face_result FACE(cuDriverGetVersion, hipRuntimeGetVersion)(int *v)
{
    if (!v)
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    *v = emu_front_version();
    return 0;
}

/* ---- fault injection and the checks of every call ---- */

__thread bool emu_front_in_callback __attribute__((tls_model("initial-exec")));

face_result emu_front_inject(const char *func)
{
    struct emu_fail f;
    if (!emu_fault_take(func, &f))
        return 0;
    emu_ctx *c = f.sticky ? face_current() : NULL;
    if (c)
        emu_ctx_poison(c, f.code);
    return (face_result)f.code;
}

face_result emu_front_inject_async(const char *func, struct emu_fail *later)
{
    struct emu_fail f;
    *later = (struct emu_fail){ 0 };
    if (!emu_fault_take(func, &f))
        return 0;
    if (f.sticky) {
        *later = f;
        return 0;
    }
    return (face_result)f.code;
}

face_result emu_front_call_check(void)
{
    if (!face_ready())
        return FACE(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized);
    /* HIP has no "not permitted": the runtime forbids it as a state */
    if (emu_front_in_callback)
        return FACE(CUDA_ERROR_NOT_PERMITTED, hipErrorIllegalState);
    return 0;
}

face_result emu_front_ctx_check(const char *func)
{
    face_result r = emu_front_call_check();
    if (!r)
        r = face_no_context();
    if (!r && func)
        r = emu_front_inject(func);
    return r ? r : emu_front_status(emu_ctx_status(face_current()));
}

/* ---- devices ---- */

face_result emu_front_out_check(const void *out)
{
    if (!face_ready())
        return FACE(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized);
    return out ? 0 : FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
}

EXPORT face_result FACE(cuDeviceGet, hipDeviceGet)(FACE(CUdevice, hipDevice_t) * dev, int ordinal)
{
    face_result r = emu_front_out_check(dev);
    if (r)
        return r;
    if (!emu_device_attrs(ordinal))
        return FACE(CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice);
    *dev = ordinal;
    return emu_front_inject(FACE_STR(cuDeviceGet, hipDeviceGet));
}

/* The device's attributes, or why not: the checks of the queries. */
static face_result device_query(int dev, const void *out, const struct emu_device_attrs **a)
{
    if (!face_ready())
        return FACE(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized);
    *a = emu_device_attrs(dev);
    if (!*a)
        return FACE(CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice);
    return emu_front_out_check(out);
}

EXPORT face_result FACE(cuDeviceGetName, hipDeviceGetName)(char *name, int len,
                                                           FACE(CUdevice, hipDevice_t) dev)
{
    const struct emu_device_attrs *a;
    face_result r = device_query(dev, len > 0 ? name : NULL, &a);
    if (r)
        return r;
    snprintf(name, (size_t)len, "%s", a->name);
    return 0;
}

EXPORT face_result FACE(cuDeviceTotalMem, hipDeviceTotalMem)(size_t *bytes, FACE(CUdevice, hipDevice_t) dev)
{
    const struct emu_device_attrs *a;
    face_result r = device_query(dev, bytes, &a);
    if (r)
        return r;
    *bytes = a->total_memory;
    return 0;
}

static int attribute(FACE(CUdevice_attribute, hipDeviceAttribute_t) attr, const struct emu_device_attrs *a)
{
    switch (attr) {
    case FACE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, hipDeviceAttributeMultiprocessorCount):
        return a->multiprocessors;
    case FACE(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, hipDeviceAttributeAsyncEngineCount):
        return a->async_engines;
    case FACE(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, hipDeviceAttributeMemoryPoolsSupported):
        return a->memory_pools;
    case FACE(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, hipDeviceAttributeCanUseStreamWaitValue):
#if defined(EMU_FACE_CUDA)
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
#endif
        return a->stream_memops;
    case FACE(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, hipDeviceAttributeCanMapHostMemory):
    case FACE(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, hipDeviceAttributeUnifiedAddressing):
        return 1;
#if defined(EMU_FACE_CUDA)
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 8;
#endif
    case FACE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, hipDeviceAttributeMaxThreadsPerBlock):
        return FACE_MAX_THREADS;
    case FACE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, hipDeviceAttributeMaxSharedMemoryPerBlock):
        return FACE_MAX_SHARED;
    case FACE(CU_DEVICE_ATTRIBUTE_WARP_SIZE, hipDeviceAttributeWarpSize):
        return FACE(32, 64);
    default:
        return 0;
    }
}

EXPORT face_result FACE(cuDeviceGetAttribute,
                        hipDeviceGetAttribute)(int *pi, FACE(CUdevice_attribute, hipDeviceAttribute_t) attr,
                                               FACE(CUdevice, int) dev)
{
    const struct emu_device_attrs *a;
    face_result r = device_query(dev, pi, &a);
    if (r)
        return r;
    *pi = attribute(attr, a);
    return emu_front_inject(FACE_STR(cuDeviceGetAttribute, hipDeviceGetAttribute));
}

EXPORT face_result FACE(cuCtxGetStreamPriorityRange, hipDeviceGetStreamPriorityRange)(int *leastPriority,
                                                                                      int *greatestPriority)
{
    CHECK(FACE_STR(cuCtxGetStreamPriorityRange, hipDeviceGetStreamPriorityRange));
    if (leastPriority)
        *leastPriority = FACE_PRIO_LEAST;
    if (greatestPriority)
        *greatestPriority = FACE_PRIO_GREATEST;
    return 0;
}
