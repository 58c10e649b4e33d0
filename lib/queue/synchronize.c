/* SPDX-License-Identifier: MIT */
/* devq_device_synchronize: finish every queue of a device.  A queue
 * operation, so it lives in the queue layer (the device layer below
 * knows no queues' finish path). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "batch.h"
#include "batch_life.h"
#include "error.h"
#include "futex.h"
#include "queue.h"
#include "queue_life.h"

DEVQ_API int devq_device_synchronize(devq_device *dev, uint64_t timeout_ns)
{
    int r = devq__device_check(dev, "devq_device_synchronize");
    if (r < 0)
        return r;
    uint64_t deadline = devq__deadline(timeout_ns);
    /* Snapshot the queues; queues destroyed meanwhile are the caller's race. */
    pthread_mutex_lock(&dev->lock);
    size_t n = 0;
    for (struct devq_queue *q = dev->qs->queues; q; q = q->next)
        n++;
    struct devq_queue **qs = malloc((n ? n : 1) * sizeof *qs);
    if (!qs) {
        pthread_mutex_unlock(&dev->lock);
        return devq__err(-ENOMEM, "devq_device_synchronize: out of memory");
    }
    n = 0;
    for (struct devq_queue *q = dev->qs->queues; q; q = q->next)
        qs[n++] = q;
    pthread_mutex_unlock(&dev->lock);
    int first = 0;
    size_t first_q = 0;
    char cause[DEVQ_ERRMSG_MAX] = "";
    for (size_t i = 0; i < n; i++) {
        r = devq__queue_finish_until(qs[i], deadline);
        if (r == -ETIMEDOUT) {
            char why[DEVQ_ERRMSG_MAX];
            snprintf(why, sizeof why, "%s", devq_errmsg()); /* devq__err writes the same buffer */
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
