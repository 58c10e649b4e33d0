/* SPDX-License-Identifier: MIT */
/* Device memory, copies and fills.  Device memory is never host-visible
 * here (host_ptr NULL): lib copies through the stream. */
#define _GNU_SOURCE
#include <errno.h>
#include "hip_plugin.h"

int hip_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr)
{
    int err = hip_enter(dev);
    if (err)
        return err;
    void *d = NULL;
    hipError_t r = hip_rt.Malloc(&d, bytes);
    if (r != hipSuccess)
        return hip_fail(dev, "hipMalloc", r);
    *device_ptr = d;
    if (host_ptr)
        *host_ptr = NULL;
    return 0;
}

void hip_mem_free(devq_pl_device *dev, void *device_ptr)
{
    if (!device_ptr)
        return;
    /* Also after a loss: the runtime still takes the memory back. */
    hip_rt.SetDevice((int)dev->ordinal);
    hipError_t r = hip_rt.Free(device_ptr);
    if (r != hipSuccess && !gpu_lost(&dev->loss)) {
        char d[160];
        hip_host->log(DEVQ_LOG_BASIC, "hip:%u: hipFree(%p): %s", dev->ordinal, device_ptr,
                      hip_err_desc(r, d, sizeof d));
    }
}

static int no_async(devq_pl_stream *s, const char *call)
{
    if (*hip_rt.missing_async)
        return hip_host->error(-ENOTSUP, "hip: %s: %s", call, hip_rt.missing_async);
    return hip_host->error(-ENOTSUP, "hip: %s: device %u has no memory pools "
                           "(hipDeviceAttributeMemoryPoolsSupported is 0)", call, s->dev->ordinal);
}

int hip_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, "hipMallocAsync");
    int err = hip_enter(s->dev);
    if (err)
        return err;
    void *d = NULL;
    hipError_t r = hip_rt.MallocAsync(&d, bytes, s->stream);
    if (r != hipSuccess)
        return hip_fail(s->dev, "hipMallocAsync", r);
    *device_ptr = d;
    return 0;
}

int hip_mem_free_async(devq_pl_stream *s, void *device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, "hipFreeAsync");
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.FreeAsync(device_ptr, s->stream);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipFreeAsync", r);
}

int hip_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    if (n == 0)
        return 0;
    hipError_t r;
    const char *call;
    /* The direction-specific calls: no kind to infer, no unified-address
     * lookup of the pointers.  HtoD takes a non-const source in the 5.2
     * headers; it only reads it. */
    switch (dir) {
    case DEVQ_COPY_D2D:
        call = "hipMemcpyDtoDAsync";
        r = hip_rt.MemcpyDtoDAsync(dst, (void *)src, n, s->stream);
        break;
    case DEVQ_COPY_H2D:
        call = "hipMemcpyHtoDAsync";
        r = hip_rt.MemcpyHtoDAsync(dst, (void *)src, n, s->stream);
        break;
    case DEVQ_COPY_D2H:
        call = "hipMemcpyDtoHAsync";
        r = hip_rt.MemcpyDtoHAsync(dst, (void *)src, n, s->stream);
        break;
    default:
        return hip_host->error(-EINVAL, "hip: copy: unknown direction %d", (int)dir);
    }
    return r == hipSuccess ? 0 : hip_fail(s->dev, call, r);
}

int hip_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    if (n == 0)
        return 0;
    hipError_t r = hip_rt.MemsetD8Async(dst, byte, n, s->stream);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipMemsetD8Async", r);
}
