/* SPDX-License-Identifier: MIT */
/* Events.  event_wait's timeout comes from the helper-stream pool in
 * gpu_common/evwait.c; the runtime calls it makes are here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "hip_plugin.h"

int hip_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    int err = hip_enter(dev);
    if (err)
        return err;
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return hip_host->error(-ENOMEM, "hip: out of memory for an event");
    e->dev = dev;
    e->timing = flags & DEVQ_EVENT_TIMING;
    hipError_t r = hip_rt.EventCreateWithFlags(&e->event, e->timing ? hipEventDefault : hipEventDisableTiming);
    if (r != hipSuccess) {
        free(e);
        return hip_fail(dev, "hipEventCreateWithFlags", r);
    }
    *out = e;
    return 0;
}

void hip_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    hip_rt.SetDevice((int)e->dev->ordinal);
    hip_rt.EventDestroy(e->event);
    free(e);
}

int hip_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.EventRecord(e->event, s->stream);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipEventRecord", r);
}

int hip_event_query(devq_pl_event *e)
{
    int err = hip_enter(e->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.EventQuery(e->event);
    if (r == hipSuccess)
        return 0;
    if (r == hipErrorNotReady)
        return -EAGAIN;
    return hip_fail(e->dev, "hipEventQuery", r);
}

int hip_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.StreamWaitEvent(s->stream, e->event, 0);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipStreamWaitEvent", r);
}

int hip_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns)
{
    int err = hip_enter(a->dev);
    if (err)
        return err;
    if (!a->timing || !b->timing)
        return hip_host->error(-EINVAL, "hip: event_elapsed: both events need DEVQ_EVENT_TIMING");
    float ms = 0;
    hipError_t r = hip_rt.EventElapsedTime(&ms, a->event, b->event);
    if (r == hipErrorNotReady)
        return hip_host->error(-EAGAIN, "hip: hipEventElapsedTime: an event is not reached yet");
    if (r != hipSuccess)
        return hip_fail(a->dev, "hipEventElapsedTime", r);
    /* The runtime reports ms as a float; a negative span is skew. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

/* ---- event_wait: the pool's runtime calls ---- */

static int helper_create(struct devq_pl_device *dev, void **stream)
{
    hipStream_t hs;
    hipError_t r = hip_rt.StreamCreateWithPriority(&hs, hipStreamNonBlocking, dev->prio_greatest);
    if (r != hipSuccess)
        return hip_fail(dev, "hipStreamCreateWithPriority", r);
    *stream = hs;
    return 0;
}

static void helper_destroy(struct devq_pl_device *dev, void *stream)
{
    hip_rt.SetDevice((int)dev->ordinal);
    hip_rt.StreamDestroy(stream);
}

static void helper_done(hipStream_t hs, hipError_t status, void *waiter)
{
    (void)hs;
    gpu_evwait_done(waiter, (int)status);
}

static int helper_arm(struct devq_pl_device *dev, void *stream, void *event, void *waiter)
{
    hipError_t r = hip_rt.StreamWaitEvent(stream, event, 0);
    if (r != hipSuccess)
        return hip_fail(dev, "hipStreamWaitEvent", r);
    r = hip_rt.StreamAddCallback(stream, helper_done, waiter, 0);
    return r == hipSuccess ? 0 : hip_fail(dev, "hipStreamAddCallback", r);
}

const struct gpu_evwait_driver hip_evwait_driver = {
    .stream_create = helper_create,
    .stream_destroy = helper_destroy,
    .arm = helper_arm,
};

int hip_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    int err = hip_event_query(e);
    if (err != -EAGAIN)
        return err;
    int status;
    if ((err = gpu_evwait(&e->dev->waits, e->event, timeout_ns, &status)))
        return err;
    if (status != hipSuccess)
        return hip_fail(e->dev, "event wait", (hipError_t)status);
    /* ROCm hands stream callbacks hipSuccess whatever happened before
     * them; the event itself carries a failure.  One query, not a poll. */
    hipError_t r = hip_rt.EventQuery(e->event);
    if (r != hipSuccess && r != hipErrorNotReady)
        return hip_fail(e->dev, "hipEventQuery", r);
    return 0;
}
