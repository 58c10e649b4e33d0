/* SPDX-License-Identifier: MIT */
/* The hip plugin's table of runtime calls (gpu_common/driver.h): each
 * entry one HIP runtime call, with HIP's handle types. */
#define _GNU_SOURCE
#include "hip_plugin.h"

static const char *desc(int r, char *buf, size_t n)
{
    return hip_err_desc((hipError_t)r, buf, n);
}
static int to_errno(int r)
{
    return hip_errno((hipError_t)r);
}
static bool sticky(int r)
{
    return hip_sticky((hipError_t)r);
}

/* HIP: lower number runs first, 0 normal; ROCm's range is 1 (low) to -1 (high). */
static long priority(const struct devq_pl_device *dev, int p)
{
    (void)dev;
    return -(long)p;
}

static int device_name(char *buf, int n, int dev)
{
    return hip_rt.DeviceGetName(buf, n, dev);
}
static int total_mem(size_t *bytes, int dev)
{
    return hip_rt.DeviceTotalMem(bytes, dev);
}

static int priority_range(int *least, int *greatest)
{
    return hip_rt.DeviceGetStreamPriorityRange(least, greatest);
}

/* The current device is per thread and the application may switch it
 * behind our back; hipSetDevice is a thread-local store. */
static int make_current(struct devq_pl_device *dev)
{
    return hip_rt.SetDevice((int)dev->ordinal);
}

static int stream_create(void **stream, int prio)
{
    hipStream_t s = NULL;
    hipError_t r = hip_rt.StreamCreateWithPriority(&s, hipStreamNonBlocking, prio);
    *stream = s;
    return r;
}

static int stream_destroy(void *stream)
{
    return hip_rt.StreamDestroy(stream);
}

static void trampoline(hipStream_t hs, hipError_t status, void *cb)
{
    (void)hs;
    ((struct gpu_cb *)cb)->run(cb, (int)status);
}

static int add_callback(void *stream, struct gpu_cb *cb)
{
    return hip_rt.StreamAddCallback(stream, trampoline, cb, 0);
}

static int wait_event(void *stream, void *event)
{
    return hip_rt.StreamWaitEvent(stream, event, 0);
}

static int event_create(void **event, bool timing)
{
    hipEvent_t e = NULL;
    hipError_t r = hip_rt.EventCreateWithFlags(&e, timing ? hipEventDefault : hipEventDisableTiming);
    *event = e;
    return r;
}

static int event_destroy(void *event)
{
    return hip_rt.EventDestroy(event);
}
static int event_record(void *event, void *stream)
{
    return hip_rt.EventRecord(event, stream);
}
static int event_query(void *event)
{
    return hip_rt.EventQuery(event);
}
static int event_elapsed(float *ms, void *a, void *b)
{
    return hip_rt.EventElapsedTime(ms, a, b);
}
static int mem_alloc(void **ptr, size_t bytes)
{
    return hip_rt.Malloc(ptr, bytes);
}
static int mem_free(void *ptr)
{
    return hip_rt.Free(ptr);
}

static int mem_alloc_async(void **ptr, size_t bytes, void *stream)
{
    return hip_rt.MallocAsync(ptr, bytes, stream);
}

static int mem_free_async(void *ptr, void *stream)
{
    return hip_rt.FreeAsync(ptr, stream);
}

/* HtoD and DtoD take a non-const source in the 5.2 headers; they only read it. */
static int copy_h2d(void *dst, const void *src, size_t n, void *stream)
{
    return hip_rt.MemcpyHtoDAsync(dst, (void *)src, n, stream);
}

static int copy_d2h(void *dst, const void *src, size_t n, void *stream)
{
    return hip_rt.MemcpyDtoHAsync(dst, (void *)src, n, stream);
}

static int copy_d2d(void *dst, const void *src, size_t n, void *stream)
{
    return hip_rt.MemcpyDtoDAsync(dst, (void *)src, n, stream);
}

static int fill(void *dst, uint8_t byte, size_t n, void *stream)
{
    return hip_rt.MemsetD8Async(dst, byte, n, stream);
}

static int host_register(void *p, size_t bytes)
{
    return hip_rt.HostRegister(p, bytes, hipHostRegisterPortable | hipHostRegisterMapped);
}

static int host_unregister(void *p)
{
    return hip_rt.HostUnregister(p);
}
static int host_device_pointer(void **dptr, void *p)
{
    return hip_rt.HostGetDevicePointer(dptr, p, 0);
}

/* HIP's >= compares (*word & mask): all bits. */
static int wait_value(void *stream, void *addr, uint64_t value)
{
    return hip_rt.StreamWaitValue64(stream, addr, value, hipStreamWaitValueGte, UINT64_MAX);
}

static int write_value(void *stream, void *addr, uint64_t value)
{
    return hip_rt.StreamWriteValue64(stream, addr, value, 0);
}

static int module_load(void **module, const void *image)
{
    hipModule_t m = NULL;
    hipError_t r = hip_rt.ModuleLoadData(&m, image);
    *module = m;
    return r;
}

static int module_get_function(void **function, void *module, const char *entry)
{
    hipFunction_t f = NULL;
    hipError_t r = hip_rt.ModuleGetFunction(&f, module, entry);
    *function = f;
    return r;
}

static int module_unload(void *module)
{
    return hip_rt.ModuleUnload(module);
}

static int launch(void *function, const struct gpu_launch *g, unsigned shared_bytes, void *stream)
{
    return hip_rt.ModuleLaunchKernel(function, g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
                                     g->block[2], shared_bytes, stream, g->params, NULL);
}

const struct gpu_driver gpu_drv = {
    .not_ready = hipErrorNotReady,
    .already_registered = hipErrorHostMemoryAlreadyRegistered,
    /* ROCm hands stream callbacks hipSuccess whatever happened before them. */
    .callback_status_unreliable = true,
    .pools_attr = "hipDeviceAttributeMemoryPoolsSupported",
    .memops_attr = "hipDeviceAttributeCanUseStreamWaitValue",
    .driver_word = "runtime", .units = "CUs", .value_ops_word = "stream wait value",
    .text_image = "image",
    .call = {
        .make_current = "hipSetDevice", .stream_create = "hipStreamCreateWithPriority",
        .stream_add_callback = "hipStreamAddCallback", .stream_wait_event = "hipStreamWaitEvent",
        .event_create = "hipEventCreateWithFlags", .event_record = "hipEventRecord",
        .event_query = "hipEventQuery", .event_elapsed = "hipEventElapsedTime",
        .mem_alloc = "hipMalloc", .mem_free = "hipFree", .mem_alloc_async = "hipMallocAsync",
        .mem_free_async = "hipFreeAsync", .copy_h2d = "hipMemcpyHtoDAsync",
        .copy_d2h = "hipMemcpyDtoHAsync", .copy_d2d = "hipMemcpyDtoDAsync",
        .fill = "hipMemsetD8Async", .host_register = "hipHostRegister",
        .host_device_pointer = "hipHostGetDevicePointer",
        .wait_value = "hipStreamWaitValue64", .write_value = "hipStreamWriteValue64",
        .module_load = "hipModuleLoadData", .module_get_function = "hipModuleGetFunction",
        .launch = "hipModuleLaunchKernel", .device_name = "hipDeviceGetName",
        .total_mem = "hipDeviceTotalMem", .priority_range = "hipDeviceGetStreamPriorityRange",
    },
    .nccl = { .name = "RCCL", .soname = "librccl.so.1", .env = "DEVQ_RCCL_LIBRARY",
              .install = "install RCCL (ROCm's rccl package)" },
    .work_desc = desc,
    .load = hip_runtime_load, .device_handle = hip_device_handle,
    .first_open = hip_first_open, .last_close = hip_last_close, .attrs = hip_attrs,
    .is_binary = hip_kernel_is_binary,
    GPU_DRIVER_ADAPTERS,
};
