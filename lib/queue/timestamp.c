/* SPDX-License-Identifier: MIT */
/* Device timestamps: a timing event recorded in stream order.  The event
 * comes from the device's pool and goes back when the last reference (the
 * user's, or the batch's) is dropped.  Recording one on a queue:
 * timestamp_record.c. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "error.h"
#include "event_pool.h"
#include "notifier.h"
#include "timestamp.h"

/* The last reference: returning the event may destroy it in the backend,
 * so a batch's release hands this to the notifier (object.h). */
static void timestamp_destroy(struct devq_object *o)
{
    struct devq_timestamp *ts = (struct devq_timestamp *)o;
    struct devq_device *dev = ts->dev;
    devq__event_put(dev, ts->ev, DEVQ_EVENT_TIMING);
    ts->obj.magic = DEVQ_MAGIC_DEAD;
    free(ts);
    devq_device_close(dev);
}

/* A new timestamp of dev with its event and two references: the user's
 * and the batch's that will record it. */
int devq__timestamp_new(struct devq_device *dev, const char *fn, struct devq_timestamp **out)
{
    int r;
    struct devq_timestamp *ts = calloc(1, sizeof *ts);
    if (!ts)
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    if ((r = devq__event_get(dev, DEVQ_EVENT_TIMING, &ts->ev)) < 0) {
        free(ts);
        return r;
    }
    devq__object_init(&ts->obj, DEVQ_MAGIC_TIMESTAMP, timestamp_destroy);
    devq__object_retain(&ts->obj); /* the user's and the batch's */
    ts->dev = dev;
    devq__device_retain(dev);
    *out = ts;
    return 0;
}

void devq__timestamp_discard(struct devq_timestamp *ts)
{
    atomic_store(&ts->obj.refs, 1);
    devq__object_release_here(&ts->obj);
}

static int ts_check(const devq_timestamp *ts, const char *fn)
{
    if (!ts || ts->obj.magic != DEVQ_MAGIC_TIMESTAMP)
        return devq__err(-EINVAL, "%s: %p is not a live timestamp", fn, (const void *)ts);
    return 0;
}

DEVQ_API int devq_timestamp_elapsed(const devq_timestamp *a, const devq_timestamp *b, uint64_t *ns)
{
    const char *fn = "devq_timestamp_elapsed";
    int r;
    if ((r = ts_check(a, fn)) < 0 || (r = ts_check(b, fn)) < 0)
        return r;
    if (!ns)
        return devq__err(-EINVAL, "%s: ns is NULL", fn);
    if (a->dev != b->dev)
        return devq__err(-EINVAL, "%s: the timestamps come from different devices", fn);
    struct devq_device *dev = a->dev;
    if (!atomic_load(&a->recorded) || !atomic_load(&b->recorded))
        return devq__err(-EAGAIN, "%s: a timestamp was not submitted yet", fn);
    if ((r = dev->ops->event_query(a->ev)) != 0 || (r = dev->ops->event_query(b->ev)) != 0)
        return r == -EAGAIN
                   ? devq__err(-EAGAIN, "%s: not reached yet; finish the queue or wait on a signal first", fn)
                   : r;
    return dev->ops->event_elapsed(a->ev, b->ev, ns);
}

DEVQ_API void devq_timestamp_destroy(devq_timestamp *ts)
{
    if (ts_check(ts, "devq_timestamp_destroy") < 0)
        return;
    /* Dead to the user now (a second destroy is refused); a batch that
     * still records it keeps its own reference. */
    ts->obj.magic = DEVQ_MAGIC_DEAD;
    devq__object_release_here(&ts->obj);
}
