/* SPDX-License-Identifier: MIT */
/* Streams and host callbacks.
 *
 * Host callbacks go through hipStreamAddCallback.  ROCm 5.2 has no
 * hipLaunchHostFunc at all, and where it exists it is the wrong tool for
 * the reason cuLaunchHostFunc is in the cuda plugin: its function gets
 * no status.  A stream callback has a status parameter and runs after a
 * failure too, which lets every pending lib callback see -EIO after a
 * device loss without the plugin polling for it.
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
#include "hip_plugin.h"

int hip_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out)
{
    int err = hip_enter(dev);
    if (err)
        return err;
    /* devq: higher runs first, 0 normal.  HIP: lower number runs first,
     * 0 normal; ROCm's range is 1 (low) to -1 (high). */
    int p = desc ? desc->priority : 0;
    int prio = gpu_clamp_priority(-(long)p, dev->prio_least, dev->prio_greatest);
    struct devq_pl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return hip_host->error(-ENOMEM, "hip: out of memory for a stream");
    s->dev = dev;
    gpu_callbacks_init(&s->cbs);
    /* Every queue, COPY ones included, gets a stream of its own: the
     * runtime picks the engine.  Non-blocking: never serialised behind
     * the application's null stream. */
    hipError_t r = hip_rt.StreamCreateWithPriority(&s->stream, hipStreamNonBlocking, prio);
    if (r != hipSuccess) {
        free(s);
        return hip_fail(dev, "hipStreamCreateWithPriority", r);
    }
    *out = s;
    return 0;
}

static void stream_unref(struct devq_pl_stream *s)
{
    if (gpu_callbacks_unref(&s->cbs))
        free(s);
}

void hip_stream_destroy(devq_pl_stream *s)
{
    if (!s)
        return;
    /* Also after a loss: the runtime still frees the handle. */
    hip_rt.SetDevice((int)s->dev->ordinal);
    hip_rt.StreamDestroy(s->stream);
    stream_unref(s);
}

static void host_trampoline(hipStream_t hs, hipError_t status, void *userData)
{
    (void)hs;
    struct gpu_host_call *c = userData;
    struct devq_pl_stream *s = c->stream;
    struct devq_pl_device *dev = s->dev;
    int st = gpu_host_call_latched(c);
    if (status != hipSuccess) {
        if (hip_sticky(status))
            hip_mark_lost(dev, "stream work", status);
        /* The cause travels as this thread's devq_errmsg(). */
        if (gpu_lost(&dev->loss)) {
            st = gpu_loss_error(&dev->loss, dev->ordinal, -EIO);
        } else if (!st) {
            char d[160];
            st = hip_host->error(hip_errno(status), "hip: stream work failed: %s",
                                 hip_err_desc(status, d, sizeof d));
        }
    }
    if (gpu_host_call_finish(c, st))
        free(s);
}

int hip_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    struct gpu_host_call *c = gpu_host_call_new(&s->cbs, s, fn, arg);
    if (!c)
        return -ENOMEM;
    hipError_t r = hip_rt.StreamAddCallback(s->stream, host_trampoline, c, 0);
    if (r != hipSuccess) {
        gpu_host_call_cancel(c);
        return hip_fail(s->dev, "hipStreamAddCallback", r);
    }
    return 0;
}
