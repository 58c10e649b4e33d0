/* SPDX-License-Identifier: MIT */
/* Device memory, copies and fills.  Device memory is never host-visible
 * here (host_ptr NULL): lib copies through the stream. */
#define _GNU_SOURCE
#include <errno.h>
#include "driver.h"

int gpu_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr)
{
    void *d = NULL;
    int err = gpu_enter(dev);
    if (err || (err = gpu_drv_check(dev, gpu_drv.call.mem_alloc, gpu_drv.mem_alloc(&d, bytes))))
        return err;
    *device_ptr = d;
    if (host_ptr)
        *host_ptr = NULL;
    return 0;
}

void gpu_mem_free(devq_pl_device *dev, void *device_ptr)
{
    if (!device_ptr)
        return;
    /* Also after a loss: the driver still takes the memory back. */
    gpu_drv.make_current(dev);
    int r = gpu_drv.mem_free(device_ptr);
    if (r && !gpu_lost(&dev->loss)) {
        char d[256];
        gpu_host->log(DEVQ_LOG_BASIC, "%s:%u: %s(%p): %s", gpu_backend, dev->ordinal, gpu_drv.call.mem_free,
                      device_ptr, gpu_drv.desc(r, d, sizeof d));
    }
}

static int no_async(devq_pl_stream *s, const char *call)
{
    if (*gpu_missing.async)
        return gpu_host->error(-ENOTSUP, "%s: %s: %s", gpu_backend, call, gpu_missing.async);
    return gpu_host->error(-ENOTSUP, "%s: %s: device %u has no memory pools (%s is 0)", gpu_backend, call,
                           s->dev->ordinal, gpu_drv.pools_attr);
}

int gpu_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, gpu_drv.call.mem_alloc_async);
    void *d = NULL;
    int err = gpu_enter(s->dev);
    if (err || (err = gpu_drv_check(s->dev, gpu_drv.call.mem_alloc_async,
                                    gpu_drv.mem_alloc_async(&d, bytes, s->stream))))
        return err;
    *device_ptr = d;
    return 0;
}

int gpu_mem_free_async(devq_pl_stream *s, void *device_ptr)
{
    if (!(s->dev->caps & DEVQ_CAP_ASYNC_ALLOC))
        return no_async(s, gpu_drv.call.mem_free_async);
    int err = gpu_enter(s->dev);
    return err ? err
               : gpu_drv_check(s->dev, gpu_drv.call.mem_free_async,
                               gpu_drv.mem_free_async(device_ptr, s->stream));
}

int gpu_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    int err = gpu_enter(s->dev);
    if (err || n == 0)
        return err;
    int r;
    const char *call;
    /* The direction-specific calls: no kind to infer, no unified-address
     * lookup of the pointers. */
    switch (dir) {
    case DEVQ_COPY_D2D:
        call = gpu_drv.call.copy_d2d;
        r = gpu_drv.copy_d2d(dst, src, n, s->stream);
        break;
    case DEVQ_COPY_H2D:
    case DEVQ_COPY_D2H:
        /* Through pinned memory: a copy to or from pageable memory
         * would block here until the stream reached it (stage.c).  A
         * driver without host registration has no value waits either:
         * lib then holds deferred work on the host, and no copy is
         * queued behind a wait the host has yet to satisfy. */
        if (!*gpu_missing.memops)
            return gpu_stage_copy(s, dst, src, n, dir);
        call = dir == DEVQ_COPY_H2D ? gpu_drv.call.copy_h2d : gpu_drv.call.copy_d2h;
        r = dir == DEVQ_COPY_H2D ? gpu_drv.copy_h2d(dst, src, n, s->stream)
                                 : gpu_drv.copy_d2h(dst, src, n, s->stream);
        break;
    default:
        return gpu_host->error(-EINVAL, "%s: copy: unknown direction %d", gpu_backend, (int)dir);
    }
    return gpu_drv_check(s->dev, call, r);
}

int gpu_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    int err = gpu_enter(s->dev);
    if (err || n == 0)
        return err;
    return gpu_drv_check(s->dev, gpu_drv.call.fill, gpu_drv.fill(dst, byte, n, s->stream));
}
