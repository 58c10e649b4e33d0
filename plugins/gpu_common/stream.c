/* SPDX-License-Identifier: MIT */
/* Streams and host callbacks.
 *
 * Host callbacks go through the drivers' stream callbacks
 * (cuStreamAddCallback, hipStreamAddCallback), not cuLaunchHostFunc or
 * hipLaunchHostFunc: CUDA never calls a host function once the context
 * has failed, so lib's signals behind it would wait forever, ROCm 5.2
 * has none at all, and neither gives its function a status.  A stream
 * callback runs after a failure too, with the error as status: that is
 * what lets every pending callback see -EIO after a device loss without
 * the plugin polling for it.
 *
 * Caveat: ROCm's runtime (5.2 and the versions after it we know of)
 * passes hipSuccess as that status whatever happened.  There the plugin
 * learns of a failure from the next runtime call or event wait instead
 * (event.c queries the event once after its callback), and a memory
 * fault aborts the process in the HSA runtime before any of that; see
 * devq-hip(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

int gpu_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out)
{
    int err = gpu_enter(dev);
    struct devq_pl_stream *s = err ? NULL : gpu_zalloc(sizeof *s, "a stream");
    if (!s)
        return err ? err : -ENOMEM;
    int p = desc ? desc->priority : 0;
    int prio = gpu_clamp_priority(gpu_drv.priority(dev, p), dev->prio_least, dev->prio_greatest);
    s->dev = dev;
    gpu_callbacks_init(&s->cbs);
    /* Every queue, COPY ones included, gets a stream of its own: the
     * driver puts copies on a copy engine when it has one.  Non-blocking:
     * never serialised behind the application's null stream. */
    int r = gpu_drv.stream_create(&s->stream, prio);
    if (r) {
        free(s);
        return gpu_drv_fail(dev, gpu_drv.call.stream_create, r);
    }
    *out = s;
    return 0;
}

void gpu_stream_destroy(devq_pl_stream *s)
{
    if (!s)
        return;
    /* Also after a loss: the driver still frees the handle. */
    gpu_drv.make_current(s->dev);
    gpu_drv.stream_destroy(s->stream);
    if (gpu_callbacks_unref(&s->cbs))
        free(s);
}

/* In the driver's stream callback. */
static void host_call_run(struct gpu_cb *cb, int status)
{
    struct gpu_host_call *c = (struct gpu_host_call *)cb;
    struct devq_pl_stream *s = c->stream;
    struct devq_pl_device *dev = s->dev;
    int st = gpu_host_call_latched(c);
    if (status) {
        if (gpu_drv.sticky(status))
            gpu_drv_mark_lost(dev, "stream work", status);
        /* The cause travels as this thread's devq_errmsg(). */
        if (gpu_lost(&dev->loss)) {
            st = gpu_loss_error(&dev->loss, dev->ordinal, -EIO);
        } else if (!st) {
            char d[256];
            st = gpu_host->error(gpu_drv.to_errno(status), "%s: stream work failed: %s", gpu_backend,
                                 gpu_drv.work_desc(status, d, sizeof d));
        }
    }
    if (gpu_host_call_finish(c, st))
        free(s);
}

int gpu_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    int err = gpu_enter(s->dev);
    struct gpu_host_call *c = err ? NULL : gpu_host_call_new(&s->cbs, s, fn, arg);
    if (!c)
        return err ? err : -ENOMEM;
    c->cb.run = host_call_run;
    int r = gpu_drv.stream_add_callback(s->stream, &c->cb);
    if ((err = gpu_drv_check(s->dev, gpu_drv.call.stream_add_callback, r)))
        gpu_host_call_cancel(c);
    return err;
}
