/* SPDX-License-Identifier: MIT */
/* The cuda plugin's table of driver calls (gpu_common/driver.h): each
 * entry one CUDA driver call, with CUDA's handle and pointer types. */
#define _GNU_SOURCE
#include <stdio.h>
#include "cuda_plugin.h"

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

static const char *desc(int r, char *buf, size_t n)
{
    return cu_err_desc((CUresult)r, buf, n);
}

static const char *work_desc(int r, char *buf, size_t n)
{
    snprintf(buf, n, "%s (%s, CUresult %d)", cu_err_name((CUresult)r), cu_err_text((CUresult)r), r);
    return buf;
}

static int to_errno(int r)
{
    return cu_errno((CUresult)r);
}
static bool sticky(int r)
{
    return cu_sticky((CUresult)r);
}

/* CUDA: lower number runs first, from prio_least (normal) down to
 * prio_greatest. */
static long priority(const struct devq_pl_device *dev, int p)
{
    return (long)dev->prio_least - p;
}

static int device_name(char *buf, int n, int dev)
{
    return cu_drv.DeviceGetName(buf, n, dev);
}
static int total_mem(size_t *bytes, int dev)
{
    return cu_drv.DeviceTotalMem(bytes, dev);
}

static int priority_range(int *least, int *greatest)
{
    return cu_drv.CtxGetStreamPriorityRange(least, greatest);
}

static int make_current(struct devq_pl_device *dev)
{
    return cu_drv.CtxSetCurrent(dev->ctx);
}

static int stream_create(void **stream, int prio)
{
    CUstream s = NULL;
    CUresult r = cu_drv.StreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, prio);
    *stream = s;
    return r;
}

static int stream_destroy(void *stream)
{
    return cu_drv.StreamDestroy(stream);
}

static void CUDA_CB trampoline(CUstream hs, CUresult status, void *cb)
{
    (void)hs;
    ((struct gpu_cb *)cb)->run(cb, (int)status);
}

static int add_callback(void *stream, struct gpu_cb *cb)
{
    return cu_drv.StreamAddCallback(stream, trampoline, cb, 0);
}

static int wait_event(void *stream, void *event)
{
    return cu_drv.StreamWaitEvent(stream, event, 0);
}

static int event_create(void **event, bool timing)
{
    CUevent e = NULL;
    CUresult r = cu_drv.EventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    *event = e;
    return r;
}

static int event_destroy(void *event)
{
    return cu_drv.EventDestroy(event);
}
static int event_record(void *event, void *stream)
{
    return cu_drv.EventRecord(event, stream);
}
static int event_query(void *event)
{
    return cu_drv.EventQuery(event);
}
static int event_elapsed(float *ms, void *a, void *b)
{
    return cu_drv.EventElapsedTime(ms, a, b);
}

static int mem_alloc(void **ptr, size_t bytes)
{
    CUdeviceptr d = 0;
    CUresult r = cu_drv.MemAlloc(&d, bytes);
    *ptr = (void *)(uintptr_t)d;
    return r;
}

static int mem_free(void *ptr)
{
    return cu_drv.MemFree(dptr(ptr));
}

static int mem_alloc_async(void **ptr, size_t bytes, void *stream)
{
    CUdeviceptr d = 0;
    CUresult r = cu_drv.MemAllocAsync(&d, bytes, stream);
    *ptr = (void *)(uintptr_t)d;
    return r;
}

static int mem_free_async(void *ptr, void *stream)
{
    return cu_drv.MemFreeAsync(dptr(ptr), stream);
}

static int copy_h2d(void *dst, const void *src, size_t n, void *stream)
{
    return cu_drv.MemcpyHtoDAsync(dptr(dst), src, n, stream);
}

static int copy_d2h(void *dst, const void *src, size_t n, void *stream)
{
    return cu_drv.MemcpyDtoHAsync(dst, dptr(src), n, stream);
}

static int copy_d2d(void *dst, const void *src, size_t n, void *stream)
{
    return cu_drv.MemcpyDtoDAsync(dptr(dst), dptr(src), n, stream);
}

static int fill(void *dst, uint8_t byte, size_t n, void *stream)
{
    return cu_drv.MemsetD8Async(dptr(dst), byte, n, stream);
}

static int host_register(void *p, size_t bytes)
{
    return cu_drv.MemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
}

static int host_unregister(void *p)
{
    return cu_drv.MemHostUnregister(p);
}

static int host_device_pointer(void **dev_ptr, void *p)
{
    CUdeviceptr d = 0;
    CUresult r = cu_drv.MemHostGetDevicePointer(&d, p, 0);
    *dev_ptr = (void *)(uintptr_t)d;
    return r;
}

static int wait_value(void *stream, void *addr, uint64_t value)
{
    return cu_drv.StreamWaitValue64(stream, dptr(addr), value, CU_STREAM_WAIT_VALUE_GEQ);
}

static int write_value(void *stream, void *addr, uint64_t value)
{
    return cu_drv.StreamWriteValue64(stream, dptr(addr), value, CU_STREAM_WRITE_VALUE_DEFAULT);
}

static int module_load(void **module, const void *image)
{
    CUmodule m = NULL;
    CUresult r = cu_drv.ModuleLoadData(&m, image);
    *module = m;
    return r;
}

static int module_get_function(void **function, void *module, const char *entry)
{
    CUfunction f = NULL;
    CUresult r = cu_drv.ModuleGetFunction(&f, module, entry);
    *function = f;
    return r;
}

static int module_unload(void *module)
{
    return cu_drv.ModuleUnload(module);
}

static int launch(void *function, const struct gpu_launch *g, unsigned shared_bytes, void *stream)
{
    return cu_drv.LaunchKernel(function, g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
                               g->block[2], shared_bytes, stream, g->params, NULL);
}

const struct gpu_driver gpu_drv = {
    .not_ready = CUDA_ERROR_NOT_READY,
    .already_registered = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    .pools_attr = "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED",
    .memops_attr = "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS",
    .driver_word = "driver", .units = "SMs", .value_ops_word = "memops",
    .text_image = "PTX image",
    .call = {
        .make_current = "cuCtxSetCurrent", .stream_create = "cuStreamCreateWithPriority",
        .stream_add_callback = "cuStreamAddCallback", .stream_wait_event = "cuStreamWaitEvent",
        .event_create = "cuEventCreate", .event_record = "cuEventRecord",
        .event_query = "cuEventQuery", .event_elapsed = "cuEventElapsedTime",
        .mem_alloc = "cuMemAlloc", .mem_free = "cuMemFree", .mem_alloc_async = "cuMemAllocAsync",
        .mem_free_async = "cuMemFreeAsync", .copy_h2d = "cuMemcpyHtoDAsync",
        .copy_d2h = "cuMemcpyDtoHAsync", .copy_d2d = "cuMemcpyDtoDAsync",
        .fill = "cuMemsetD8Async", .host_register = "cuMemHostRegister",
        .host_device_pointer = "cuMemHostGetDevicePointer",
        .wait_value = "cuStreamWaitValue64", .write_value = "cuStreamWriteValue64",
        .module_load = "cuModuleLoadData", .module_get_function = "cuModuleGetFunction",
        .launch = "cuLaunchKernel", .device_name = "cuDeviceGetName",
        .total_mem = "cuDeviceTotalMem", .priority_range = "cuCtxGetStreamPriorityRange",
    },
    .nccl = { .name = "NCCL", .soname = "libnccl.so.2", .env = "DEVQ_NCCL_LIBRARY",
              .install = "install NCCL 2 (libnccl2, from NVIDIA's repository)" },
    .work_desc = work_desc,
    .load = cu_driver_load, .device_handle = cu_device_handle,
    .first_open = cu_first_open, .undo_open = cu_undo_open, .last_close = cu_last_close,
    .attrs = cu_attrs, .is_binary = cu_kernel_is_binary, .read_params = cu_kernel_read_params,
    GPU_DRIVER_ADAPTERS,
};
