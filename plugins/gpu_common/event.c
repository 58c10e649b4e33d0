/* SPDX-License-Identifier: MIT */
/* Events.  event_wait's timeout comes from the helper-stream pool in
 * evwait.c; the driver calls it makes are the table's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

int gpu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    int err = gpu_enter(dev);
    struct devq_pl_event *e = err ? NULL : gpu_zalloc(sizeof *e, "an event");
    if (!e)
        return err ? err : -ENOMEM;
    e->dev = dev;
    e->timing = flags & DEVQ_EVENT_TIMING;
    int r = gpu_drv.event_create(&e->event, e->timing);
    if ((err = gpu_drv_check(dev, gpu_drv.call.event_create, r)))
        free(e);
    else
        *out = e;
    return err;
}

void gpu_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    gpu_drv.make_current(e->dev);
    gpu_drv.event_destroy(e->event);
    free(e);
}

int gpu_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    int err = gpu_enter(s->dev);
    return err ? err
               : gpu_drv_check(s->dev, gpu_drv.call.event_record, gpu_drv.event_record(e->event, s->stream));
}

int gpu_event_query(devq_pl_event *e)
{
    int err = gpu_enter(e->dev);
    int r = err ? 0 : gpu_drv.event_query(e->event);
    if (err || r == 0)
        return err;
    return r == gpu_drv.not_ready ? -EAGAIN : gpu_drv_fail(e->dev, gpu_drv.call.event_query, r);
}

int gpu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    int err = gpu_enter(s->dev);
    return err ? err
               : gpu_drv_check(s->dev, gpu_drv.call.stream_wait_event,
                               gpu_drv.stream_wait_event(s->stream, e->event));
}

int gpu_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns)
{
    int err = gpu_enter(a->dev);
    if (err)
        return err;
    if (!a->timing || !b->timing)
        return gpu_host->error(-EINVAL, "%s: event_elapsed: both events need DEVQ_EVENT_TIMING", gpu_backend);
    float ms = 0;
    int r = gpu_drv.event_elapsed(&ms, a->event, b->event);
    if (r == gpu_drv.not_ready)
        return gpu_host->error(-EAGAIN, "%s: %s: an event is not reached yet", gpu_backend,
                               gpu_drv.call.event_elapsed);
    if (r)
        return gpu_drv_fail(a->dev, gpu_drv.call.event_elapsed, r);
    /* The drivers' resolution is about 0.5 us; a negative span is skew. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

/* ---- event_wait: the pool's driver calls ---- */

static int helper_create(struct devq_pl_device *dev, void **stream)
{
    return gpu_drv_check(dev, gpu_drv.call.stream_create, gpu_drv.stream_create(stream, dev->prio_greatest));
}

static void helper_destroy(struct devq_pl_device *dev, void *stream)
{
    gpu_drv.make_current(dev);
    gpu_drv.stream_destroy(stream);
}

static int helper_arm(struct devq_pl_device *dev, void *stream, void *event, struct gpu_cb *cb)
{
    int err = gpu_drv_check(dev, gpu_drv.call.stream_wait_event, gpu_drv.stream_wait_event(stream, event));
    return err ? err
               : gpu_drv_check(dev, gpu_drv.call.stream_add_callback,
                               gpu_drv.stream_add_callback(stream, cb));
}

const struct gpu_evwait_driver gpu_evwait_drv = {
    .stream_create = helper_create,
    .stream_destroy = helper_destroy,
    .arm = helper_arm,
};

int gpu_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    int err = gpu_event_query(e);
    if (err != -EAGAIN)
        return err;
    int status;
    if ((err = gpu_evwait(&e->dev->waits, e->event, timeout_ns, &status)))
        return err;
    if (status)
        return gpu_drv_fail(e->dev, "event wait", status);
    if (!gpu_drv.callback_status_unreliable)
        return 0;
    /* The callback's success says nothing: one query, not a poll. */
    int r = gpu_drv.event_query(e->event);
    return r == gpu_drv.not_ready ? 0 : gpu_drv_check(e->dev, gpu_drv.call.event_query, r);
}
