/* SPDX-License-Identifier: MIT */
/* Device memory, copies and fills.  Device memory is never host-visible
 * here (host_ptr NULL): lib copies through the stream. */
#define _GNU_SOURCE
#include <errno.h>
#include "cuda_plugin.h"

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

int cu_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr)
{
    int err = cu_enter(dev);
    if (err)
        return err;
    CUdeviceptr d = 0;
    CUresult r = cu_drv.MemAlloc(&d, bytes);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, "cuMemAlloc", r);
    *device_ptr = (void *)(uintptr_t)d;
    if (host_ptr)
        *host_ptr = NULL;
    return 0;
}

void cu_mem_free(devq_pl_device *dev, void *device_ptr)
{
    if (!device_ptr)
        return;
    /* Also after a loss: the driver still takes the memory back. */
    cu_drv.CtxSetCurrent(dev->ctx);
    CUresult r = cu_drv.MemFree(dptr(device_ptr));
    if (r != CUDA_SUCCESS && !gpu_lost(&dev->loss))
        cu_host->log(DEVQ_LOG_BASIC, "cuda:%u: cuMemFree(%p): %s (%s)", dev->ordinal, device_ptr,
                     cu_err_name(r), cu_err_text(r));
}

static int no_async(devq_pl_stream *s, const char *call)
{
    if (*cu_drv.missing_async)
        return cu_host->error(-ENOTSUP, "cuda: %s: %s", call, cu_drv.missing_async);
    return cu_host->error(-ENOTSUP, "cuda: %s: device %u has no memory pools "
                          "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)", call, s->dev->ordinal);
}

int cu_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, "cuMemAllocAsync");
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUdeviceptr d = 0;
    CUresult r = cu_drv.MemAllocAsync(&d, bytes, s->stream);
    if (r != CUDA_SUCCESS)
        return cu_fail(s->dev, "cuMemAllocAsync", r);
    *device_ptr = (void *)(uintptr_t)d;
    return 0;
}

int cu_mem_free_async(devq_pl_stream *s, void *device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, "cuMemFreeAsync");
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = cu_drv.MemFreeAsync(dptr(device_ptr), s->stream);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuMemFreeAsync", r);
}

int cu_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    if (n == 0)
        return 0;
    CUresult r;
    const char *call;
    switch (dir) {
    case DEVQ_COPY_D2D:
        call = "cuMemcpyDtoDAsync";
        r = cu_drv.MemcpyDtoDAsync(dptr(dst), dptr(src), n, s->stream);
        break;
    case DEVQ_COPY_H2D:
        call = "cuMemcpyHtoDAsync";
        r = cu_drv.MemcpyHtoDAsync(dptr(dst), src, n, s->stream);
        break;
    case DEVQ_COPY_D2H:
        call = "cuMemcpyDtoHAsync";
        r = cu_drv.MemcpyDtoHAsync(dst, dptr(src), n, s->stream);
        break;
    default:
        return cu_host->error(-EINVAL, "cuda: copy: unknown direction %d", (int)dir);
    }
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, call, r);
}

int cu_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    if (n == 0)
        return 0;
    CUresult r = cu_drv.MemsetD8Async(dptr(dst), byte, n, s->stream);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuMemsetD8Async", r);
}
