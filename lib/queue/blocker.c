/* SPDX-License-Identifier: MIT */
/* See blocker.h. */
#include "config.h"
#include <stdio.h>
#include "batch.h"
#include "blocker.h"
#include "buffer_fail.h"
#include "hazard.h"
#include "queue.h"
#include "signal_int.h"
#include "tracker.h"
#include "value_wait.h"

static int own(struct devq_queue *q, struct devq_blocker *out)
{
    struct batch *h = q->deferred;
    if (h && h->defer.blocked_on) {
        *out = (struct devq_blocker){ .s = h->defer.blocked_on, .v = h->defer.blocked_value, .seq = h->seq };
        return 1;
    }
    struct devq_hazard hz;
    if (h && h->defer.hazard_wait && devq__hazard_blocker(h, &hz)) {
        *out = (struct devq_blocker){ .seq = h->seq, .behind = hz.owner->q, .hz = hz };
        return 1;
    }
    devq_signal *s;
    uint64_t v, seq, cursor;
    if (devq__value_wait_blocker(q, &s, &v, &seq, &cursor)) {
        *out = (struct devq_blocker){ .s = s, .v = v, .seq = seq, .cursor = cursor, .on_device = 1 };
        return 1;
    }
    return 0;
}

/* Blocked by its own wait, or because the tracker ordered its stream
 * after a unit of another stream that waits on the device. */
int devq__queue_blocker(struct devq_queue *q, struct devq_blocker *out)
{
    if (own(q, out))
        return 1;
    struct devq_tracker *t = q->dev->tracker;
    for (struct devq_queue *y = q->dev->qs->queues; y; y = y->next) {
        struct devq_blocker yb;
        if (y != q && own(y, &yb) && yb.on_device &&
            devq__tracker_last_synced(t, q->stream.id, y->stream.id) >= yb.cursor) {
            *out = (struct devq_blocker){ .behind = y };
            return 1;
        }
    }
    return 0;
}

void devq__blocker_describe(const struct devq_blocker *b, char *buf, size_t cap)
{
    if (b->hz.owner)
        snprintf(buf, cap, "batch %llu %s %s after %s batch %llu, which is deferred",
                 (unsigned long long)b->seq, b->hz.mine & DEVQ_WRITE ? "writes" : "reads",
                 devq__buffer_label(b->hz.buf).s, devq__queue_label(b->hz.owner->q).s,
                 (unsigned long long)b->hz.owner->seq);
    else if (b->behind)
        snprintf(buf, cap, "it is ordered after %s, which waits on the device",
                 devq__queue_label(b->behind).s);
    else
        snprintf(buf, cap, "batch %llu waits for %s >= %llu%s (value %llu)", (unsigned long long)b->seq,
                 devq__signal_label(b->s).s, (unsigned long long)b->v, b->on_device ? " on the device" : "",
                 (unsigned long long)devq_signal_value(b->s));
}
