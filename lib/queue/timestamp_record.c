/* SPDX-License-Identifier: MIT */
/* devq_queue_timestamp: record a timestamp op on a queue.  Apart from
 * timestamp.c (the object) so that the object, which a batch releases,
 * does not depend on recording. */
#include "config.h"
#include <errno.h>
#include "batch.h"
#include "error.h"
#include "queue.h"
#include "record.h"
#include "timestamp.h"

DEVQ_API int devq_queue_timestamp(devq_queue *q, devq_timestamp **out)
{
    const char *fn = "devq_queue_timestamp";
    int r = devq__queue_check(q, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    struct devq_device *dev = q->dev;
    if (!(dev->info.caps & DEVQ_CAP_TIMING) || !dev->ops->event_elapsed)
        return devq__err(-ENOTSUP, "%s: the %s backend has no device timing (no DEVQ_CAP_TIMING)", fn,
                         dev->info.backend);
    struct devq_timestamp *ts;
    if ((r = devq__timestamp_new(dev, fn, &ts)) < 0)
        return r;
    /* The op is filled in before the recorder role is given up: a submit
     * in another thread may take the batch the moment it is. */
    struct op *o;
    if ((r = devq__record_begin(q, fn)) < 0)
        goto fail;
    if ((r = devq__record_append(q, 0, fn, &o)) < 0) {
        devq__record_commit(q, r);
        goto fail;
    }
    o->kind = OP_TIMESTAMP;
    o->u.ts = ts;
    *out = ts;
    return devq__record_commit(q, 0);
fail:
    devq__timestamp_discard(ts);
    return r;
}
