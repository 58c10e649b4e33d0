/* SPDX-License-Identifier: MIT */
/* devq_barrier: every queue waits for every other queue's tail.
 *
 * Each queue's open batch gets, for every other queue, a dependency on
 * that queue's submitted work: on the same device and with nothing
 * deferred, a tracker alignment with the other stream's current point
 * (no host round trip); otherwise a wait on the other queue's completion
 * timeline, which the tracker bridges like any signal wait. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "error.h"
#include "queue.h"
#include "record.h"
#include "signal_int.h"

/* qi's dependency on qj's submitted work; qi's recorder role is held. */
static int push_dep(struct devq_queue *qi, struct devq_queue *qj)
{
    struct devq_device *dev = qi->dev;
    pthread_mutex_lock(&dev->lock);
    int aligned = qj->dev == dev && !qj->deferred;
    struct devq_use here = aligned ? devq__tracker_here(dev->tracker, qj->stream.id) : (struct devq_use){ 0 };
    pthread_mutex_unlock(&dev->lock);
    if (!aligned)
        return devq__record_signal(qi, qj->timeline, atomic_load(&qj->submitted), OP_WAIT, "devq_barrier");
    if (!here.cursor)
        return 0; /* nothing submitted there yet */
    struct op *o;
    int r = devq__record_append(qi, 0, "devq_barrier", &o);
    if (r == 0) {
        o->kind = OP_ALIGN;
        o->u.align = here;
    }
    return r;
}

/* All of queue i's dependencies, recorded in one hold of its recorder
 * role: each op is complete before a submit in another thread can take
 * the batch, and a racing thread gets -EBUSY for the whole step. */
static int push_deps(struct devq_queue *const *queues, size_t n, size_t i)
{
    int r = devq__record_begin(queues[i], "devq_barrier");
    if (r < 0)
        return r;
    for (size_t j = 0; j < n && r == 0; j++)
        if (j != i)
            r = push_dep(queues[i], queues[j]);
    return devq__record_commit(queues[i], r);
}

DEVQ_API int devq_barrier(devq_queue *const *queues, size_t n)
{
    if (!queues && n)
        return devq__err(-EINVAL, "devq_barrier: queues is NULL with n %zu", n);
    for (size_t i = 0; i < n; i++) {
        int r = devq__queue_check(queues[i], "devq_barrier");
        if (r < 0)
            return r;
        for (size_t j = 0; j < i; j++)
            if (queues[j] == queues[i])
                return devq__err(-EINVAL, "devq_barrier: %s is listed twice", devq__queue_label(queues[i]).s);
    }
    for (size_t i = 0; n > 1 && i < n; i++) {
        int r = push_deps(queues, n, i);
        if (r < 0)
            return r;
    }
    return 0;
}
