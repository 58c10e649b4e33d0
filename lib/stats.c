/* devq_stats_get and devq_device_synchronize. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "error.h"
#include "event_pool.h"
#include "futex.h"
#include "queue.h"

DEVQ_API int devq_stats_get(devq_device *dev, devq_stats *st)
{
    int r = devq__device_check(dev, "devq_stats_get");
    if (r < 0)
        return r;
    if (!st)
        return devq__err(-EINVAL, "devq_stats_get: st is NULL");
    struct devq_device_stats *s = &dev->stats;
    st->batches_submitted = atomic_load(&s->batches_submitted);
    st->batches_completed = atomic_load(&s->batches_completed);
    st->batches_deferred = atomic_load(&s->batches_deferred);
    st->batches_failed = atomic_load(&s->batches_failed);
    st->wait_cycles = atomic_load(&s->wait_cycles);
    st->signal_waits_aligned = atomic_load(&s->signal_waits_aligned);
    st->signal_waits_dropped = atomic_load(&s->signal_waits_dropped);
    st->signal_waits_native = atomic_load(&s->signal_waits_native);
    struct devq_tracker_counts c;
    pthread_mutex_lock(&dev->lock);
    devq__tracker_counts(dev->tracker, &c);
    pthread_mutex_unlock(&dev->lock);
    st->waits_inserted = c.waits_inserted;
    st->waits_elided = c.waits_elided;
    devq__event_pool_counts(dev, &st->events_in_use, &st->events_pooled);
    return 0;
}

DEVQ_API int devq_device_synchronize(devq_device *dev, uint64_t timeout_ns)
{
    int r = devq__device_check(dev, "devq_device_synchronize");
    if (r < 0)
        return r;
    uint64_t deadline = devq__deadline(timeout_ns);
    /* Snapshot the queues; queues destroyed meanwhile are the caller's race. */
    pthread_mutex_lock(&dev->lock);
    size_t n = 0;
    for (struct devq_queue *q = dev->queues; q; q = q->next)
        n++;
    struct devq_queue **qs = malloc((n ? n : 1) * sizeof *qs);
    if (!qs) {
        pthread_mutex_unlock(&dev->lock);
        return devq__err(-ENOMEM, "devq_device_synchronize: out of memory");
    }
    n = 0;
    for (struct devq_queue *q = dev->queues; q; q = q->next)
        qs[n++] = q;
    pthread_mutex_unlock(&dev->lock);
    int first = 0;
    size_t first_q = 0;
    char cause[DEVQ_ERRMSG_MAX] = "";
    for (size_t i = 0; i < n; i++) {
        r = devq__queue_finish_until(qs[i], deadline);
        if (r == -ETIMEDOUT) {
            char why[DEVQ_ERRMSG_MAX];
            snprintf(why, sizeof why, "%s", devq_errmsg());   /* devq__err writes the same buffer */
            /* A failure already collected stays reported for the next call. */
            if (first)
                devq__queue_record_failure(qs[first_q], first, cause);
            r = devq__err(-ETIMEDOUT, "devq_device_synchronize: %s", why);
            free(qs);
            return r;
        }
        if (r < 0 && !first) {
            first = r;
            first_q = i;
            snprintf(cause, sizeof cause, "%s", devq_errmsg());
        }
    }
    free(qs);
    return first ? devq__err_str(first, cause) : 0;
}
