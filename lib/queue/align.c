/* SPDX-License-Identifier: MIT */
/* The tracker's one way to touch streams (tracker.h, align): make one
 * stream wait for another's work, at a checkpoint when one covers what
 * is needed, else at the tail; with DEVQ_TRACE, the two ends of a flow
 * arrow.  Installed by the composition root; device lock held. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "align.h"
#include "error.h"
#include "event_pool.h"
#include "grow.h"
#include "hazard.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "trace.h"
#include "value_wait.h"

/* DEVQ_TRACE: the two ends of a flow arrow, stamped by host callbacks
 * where the source stream reaches the event and where the waiting stream
 * passes the wait.  They hand the stream's latched error straight on. */
struct flow {
    struct devq_device *dev;
    uint32_t track;
    int start;
    uint64_t id;
};

static int flow_cb(void *arg, int status)
{
    struct flow *f = arg;
    devq__trace_flow(f->dev, f->track, f->id, f->start, devq__trace_now());
    free(f);
    return status;
}

/* Every stream is a queue's (queue.c). */
static const struct devq_queue *queue_of(const struct devq_stream *st)
{
    return (const struct devq_queue *)((const char *)st - offsetof(struct devq_queue, stream));
}

/* DEVQ_LOG=basic: one line per wait the tracker inserted, naming both
 * queues and what the wait is for (a buffer with its tag, a signal). */
static void log_wait(struct devq_device *dev, const struct devq_stream *d, const struct devq_stream *s,
                     uint64_t at, const char *how, const char *why)
{
    devq__log(DEVQ_LOG_BASIC, "%s:%d: %s waits on %s @%llu%s for %s (stream %u on stream %u)",
              dev->info.backend, dev->info.ordinal, devq__queue_label(queue_of(d)).s,
              devq__queue_label(queue_of(s)).s, (unsigned long long)at, how, why ? why : "a barrier", d->id,
              s->id);
}

static struct flow *flow_new(struct devq_device *dev, struct devq_stream *st)
{
    struct flow *f = malloc(sizeof *f);
    if (!f)
        return NULL;
    const struct devq_queue *q = queue_of(st);
    *f = (struct flow){ .dev = dev, .track = q->name.number, .start = 1, .id = devq__trace_flow_id() };
    return f;
}

/* The tracker's way to order streams: an event at src's tail, waited on
 * by dst.  The event goes back to the pool at once: stream_wait_event
 * captures its position at call time. */
int devq__align_streams(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                        const char *why)
{
    struct devq_device *dev = ctx;
    struct devq_stream *d = dev->streams[dst], *s = dev->streams[src];
    /* src may be held up by a device-side wait for the host (its own or
     * one it is ordered behind), and after this dst is too: remember
     * where dst was, so that streams needing only dst's earlier work do
     * not wait for src as well (a false dependency that deadlocks valid
     * programs: tests/test_held_alignment.c). */
    if (devq__value_wait_any(dev))
        devq__checkpoint(dev, d);
    /* Work before a held-up point on src: wait for the checkpoint, not
     * for the tail behind it (which may wait for the host). */
    for (uint32_t i = 0; i < s->ncp; i++)
        if (s->cp[i].cursor >= need) {
            int r = dev->ops->stream_wait_event(d->pl, s->cp[i].ev);
            if (r == 0) {
                *synced = s->cp[i].cursor;
                if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
                    log_wait(dev, d, s, s->cp[i].cursor, " (checkpoint)", why);
            }
            return r;
        }
    devq_pl_event *e;
    int r = devq__event_get(dev, 0, &e);
    if (r < 0)
        return r;
    struct flow *fs = devq__trace_on() ? flow_new(dev, s) : NULL, *fe = fs ? flow_new(dev, d) : NULL;
    if (fs && !fe) { /* out of memory for the second end: no arrow */
        free(fs);
        fs = NULL;
    }
    if (fs && fe) {
        fe->id = fs->id;
        fe->start = 0;
        if (dev->ops->host_fn(s->pl, flow_cb, fs) < 0)
            free(fs);
    }
    if ((r = dev->ops->event_record(e, s->pl)) == 0)
        r = dev->ops->stream_wait_event(d->pl, e);
    if (fe && (r < 0 || dev->ops->host_fn(d->pl, flow_cb, fe) < 0))
        free(fe);
    devq__event_put(dev, e, 0);
    if (r == 0 && DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        log_wait(dev, d, s, devq__tracker_cursor(dev->tracker, src), "", why);
    return r;
}
