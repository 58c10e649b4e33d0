/* SPDX-License-Identifier: MIT */
/* Streams and host callbacks.
 *
 * Host callbacks go through cuStreamAddCallback, not cuLaunchHostFunc:
 * the driver never calls a cuLaunchHostFunc function once the context
 * has failed, so lib's signals behind it would wait forever, while
 * cuStreamAddCallback callbacks still run, with the error as status.
 * That is what lets every pending callback see -EIO after a device loss
 * without the plugin polling for it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "cuda_plugin.h"

int cu_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out)
{
    int err = cu_enter(dev);
    if (err)
        return err;
    /* devq: higher runs first, 0 normal.  CUDA: lower number runs first,
     * from prio_least (normal) down to prio_greatest. */
    int p = desc ? desc->priority : 0;
    int prio = gpu_clamp_priority((long)dev->prio_least - p, dev->prio_least, dev->prio_greatest);
    struct devq_pl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return cu_host->error(-ENOMEM, "cuda: out of memory for a stream");
    s->dev = dev;
    gpu_callbacks_init(&s->cbs);
    /* Every queue, COPY ones included, gets a stream of its own; the
     * driver puts copies on a copy engine when it has one. */
    CUresult r = cu_drv.StreamCreateWithPriority(&s->stream, CU_STREAM_NON_BLOCKING, prio);
    if (r != CUDA_SUCCESS) {
        free(s);
        return cu_fail(dev, "cuStreamCreateWithPriority", r);
    }
    *out = s;
    return 0;
}

static void stream_unref(struct devq_pl_stream *s)
{
    if (gpu_callbacks_unref(&s->cbs))
        free(s);
}

void cu_stream_destroy(devq_pl_stream *s)
{
    if (!s)
        return;
    /* Also after a loss: the driver still frees the handle. */
    cu_drv.CtxSetCurrent(s->dev->ctx);
    cu_drv.StreamDestroy(s->stream);
    stream_unref(s);
}

static void CUDA_CB host_trampoline(CUstream hs, CUresult status, void *userData)
{
    (void)hs;
    struct gpu_host_call *c = userData;
    struct devq_pl_stream *s = c->stream;
    struct devq_pl_device *dev = s->dev;
    int st = gpu_host_call_latched(c);
    if (status != CUDA_SUCCESS) {
        if (cu_sticky(status))
            cu_mark_lost(dev, "stream work", status);
        /* The cause travels as this thread's devq_errmsg(). */
        if (gpu_lost(&dev->loss)) {
            st = gpu_loss_error(&dev->loss, dev->ordinal, -EIO);
        } else if (!st) {
            st = cu_host->error(cu_errno(status), "cuda: stream work failed: %s (%s, CUresult %d)",
                                cu_err_name(status), cu_err_text(status), (int)status);
        }
    }
    if (gpu_host_call_finish(c, st))
        free(s);
}

int cu_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    struct gpu_host_call *c = gpu_host_call_new(&s->cbs, s, fn, arg);
    if (!c)
        return -ENOMEM;
    CUresult r = cu_drv.StreamAddCallback(s->stream, host_trampoline, c, 0);
    if (r != CUDA_SUCCESS) {
        gpu_host_call_cancel(c);
        return cu_fail(s->dev, "cuStreamAddCallback", r);
    }
    return 0;
}
