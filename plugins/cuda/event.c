/* SPDX-License-Identifier: MIT */
/* Events.  event_wait's timeout comes from the helper-stream pool in
 * gpu_common/evwait.c; the driver calls it makes are here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "cuda_plugin.h"

int cu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    int err = cu_enter(dev);
    if (err)
        return err;
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return cu_host->error(-ENOMEM, "cuda: out of memory for an event");
    e->dev = dev;
    e->timing = flags & DEVQ_EVENT_TIMING;
    CUresult r = cu_drv.EventCreate(&e->event, e->timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cu_fail(dev, "cuEventCreate", r);
    }
    *out = e;
    return 0;
}

void cu_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    cu_drv.CtxSetCurrent(e->dev->ctx);
    cu_drv.EventDestroy(e->event);
    free(e);
}

int cu_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = cu_drv.EventRecord(e->event, s->stream);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuEventRecord", r);
}

int cu_event_query(devq_pl_event *e)
{
    int err = cu_enter(e->dev);
    if (err)
        return err;
    CUresult r = cu_drv.EventQuery(e->event);
    if (r == CUDA_SUCCESS)
        return 0;
    if (r == CUDA_ERROR_NOT_READY)
        return -EAGAIN;
    return cu_fail(e->dev, "cuEventQuery", r);
}

int cu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = cu_drv.StreamWaitEvent(s->stream, e->event, 0);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuStreamWaitEvent", r);
}

int cu_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns)
{
    int err = cu_enter(a->dev);
    if (err)
        return err;
    if (!a->timing || !b->timing)
        return cu_host->error(-EINVAL, "cuda: event_elapsed: both events need DEVQ_EVENT_TIMING");
    float ms = 0;
    CUresult r = cu_drv.EventElapsedTime(&ms, a->event, b->event);
    if (r == CUDA_ERROR_NOT_READY)
        return cu_host->error(-EAGAIN, "cuda: cuEventElapsedTime: an event is not reached yet");
    if (r != CUDA_SUCCESS)
        return cu_fail(a->dev, "cuEventElapsedTime", r);
    /* The driver's resolution is about 0.5 us; a negative span is skew. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

/* ---- event_wait: the pool's driver calls ---- */

static int helper_create(struct devq_pl_device *dev, void **stream)
{
    CUstream hs;
    CUresult r = cu_drv.StreamCreateWithPriority(&hs, CU_STREAM_NON_BLOCKING, dev->prio_greatest);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, "cuStreamCreateWithPriority", r);
    *stream = hs;
    return 0;
}

static void helper_destroy(struct devq_pl_device *dev, void *stream)
{
    cu_drv.CtxSetCurrent(dev->ctx);
    cu_drv.StreamDestroy(stream);
}

static void CUDA_CB helper_done(CUstream hs, CUresult status, void *waiter)
{
    (void)hs;
    gpu_evwait_done(waiter, (int)status);
}

static int helper_arm(struct devq_pl_device *dev, void *stream, void *event, void *waiter)
{
    CUresult r = cu_drv.StreamWaitEvent(stream, event, 0);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, "cuStreamWaitEvent", r);
    r = cu_drv.StreamAddCallback(stream, helper_done, waiter, 0);
    return r == CUDA_SUCCESS ? 0 : cu_fail(dev, "cuStreamAddCallback", r);
}

const struct gpu_evwait_driver cu_evwait_driver = {
    .stream_create = helper_create,
    .stream_destroy = helper_destroy,
    .arm = helper_arm,
};

int cu_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    int err = cu_event_query(e);
    if (err != -EAGAIN)
        return err;
    int status;
    if ((err = gpu_evwait(&e->dev->waits, e->event, timeout_ns, &status)))
        return err;
    return status == CUDA_SUCCESS ? 0 : cu_fail(e->dev, "event wait", (CUresult)status);
}
