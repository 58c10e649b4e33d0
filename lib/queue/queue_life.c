/* SPDX-License-Identifier: MIT */
/* Queue life cycle: create, finish, destroy.  The top of the queue layer:
 * it calls the issue, cycle, hazard and buffer code; nothing below calls it. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "batch_life.h"
#include "blocker.h"
#include "buffer.h"
#include "cycle.h"
#include "defer.h"
#include "error.h"
#include "event_pool.h"
#include "futex.h"
#include "hazard.h"
#include "log.h"
#include "mem.h"
#include "queue.h"
#include "queue_life.h"
#include "signal_int.h"
#include "tail_orphan.h"
#include "trace.h"
#include "value_wait.h"

int devq__queue_state_create(struct devq_device *dev)
{
    if (!(dev->qs = calloc(1, sizeof *dev->qs)))
        return devq__err(-ENOMEM, "out of memory for a device's queue state");
    return 0;
}

void devq__queue_state_destroy(struct devq_device *dev)
{
    devq__value_wait_fini(dev);
    devq__buffer_idle_drop(dev);
    free(dev->qs);
    dev->qs = NULL;
}

DEVQ_API int devq_queue_create(devq_device *dev, const devq_queue_desc *desc, devq_queue **out)
{
    int r = devq__device_check(dev, "devq_queue_create");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_queue_create: out is NULL");
    if ((r = devq__device_lost_check(dev)) < 0)
        return r;
    devq_queue_desc d = desc ? *desc : (devq_queue_desc){ DEVQ_QUEUE_COMPUTE, 0 };
    if (d.kind != DEVQ_QUEUE_COMPUTE && d.kind != DEVQ_QUEUE_COPY)
        return devq__err(
            -EINVAL, "devq_queue_create: unknown queue kind %d; use DEVQ_QUEUE_COMPUTE or DEVQ_QUEUE_COPY",
            (int)d.kind);
    /* On a cache line: struct devq_queue keeps each side's fields on lines
     * of their own.  aligned_alloc wants a multiple of the alignment. */
    struct devq_queue *q =
        aligned_alloc(_Alignof(struct devq_queue),
                      (sizeof *q + _Alignof(struct devq_queue) - 1) & ~(_Alignof(struct devq_queue) - 1));
    if (!q)
        return devq__err(-ENOMEM, "devq_queue_create: out of memory");
    memset(q, 0, sizeof *q);
    q->magic = DEVQ_MAGIC_QUEUE;
    q->fork_gen = dev->fork_gen; /* == devq__fork_gen(): the device check passed */
    q->dev = dev;
    atomic_init(&q->cancel_after, UINT64_MAX);
    q->desc = d;
    pthread_mutex_init(&q->done_lock, NULL);
    pthread_mutex_init(&q->first_lock, NULL);
    if ((r = devq__signal_create_internal(0, &q->timeline)) < 0)
        goto fail_sig;
    pthread_mutex_lock(&dev->lock);
    r = dev->ops->stream_create(dev->pl, &d, &q->stream.pl);
    if (r < 0) {
        pthread_mutex_unlock(&dev->lock);
        goto fail_stream;
    }
    if ((r = devq__tracker_stream_add(dev->tracker, &q->stream.id)) < 0 ||
        (r = devq__device_stream_register(dev, &q->stream)) < 0) {
        dev->ops->stream_destroy(q->stream.pl);
        pthread_mutex_unlock(&dev->lock);
        goto fail_stream;
    }
    q->stream.dev = dev;
    q->name.number = devq__name_number(DEVQ_NAME_QUEUE); /* per process, not per device */
    q->next = dev->qs->queues;
    dev->qs->queues = q;
    pthread_mutex_unlock(&dev->lock);
    devq__device_retain(dev);
    devq__queue_trace_track(q);
    devq__log(DEVQ_LOG_FULL, "%s:%d: %s created (%s, priority %d, stream %u)", dev->info.backend,
              dev->info.ordinal, devq__queue_label(q).s, d.kind == DEVQ_QUEUE_COPY ? "copy" : "compute",
              d.priority, q->stream.id);
    *out = q;
    return 0;
fail_stream:
    devq_signal_destroy(q->timeline);
fail_sig:
    pthread_mutex_destroy(&q->done_lock);
    pthread_mutex_destroy(&q->first_lock);
    free(q);
    return r;
}

/* DEVQ_TRACE: the queue's track, named like the queue in messages. */
void devq__queue_trace_track(const struct devq_queue *q)
{
    if (!devq__trace_on())
        return;
    char detail[48];
    snprintf(detail, sizeof detail, "%s, stream %u", q->desc.kind == DEVQ_QUEUE_COPY ? "copy" : "compute",
             q->stream.id);
    devq__trace_track(q->dev, q->name.number, devq__name_label(&q->name, DEVQ_NAME_QUEUE, detail).s);
}

DEVQ_API int devq_queue_set_name(devq_queue *q, const char *name)
{
    int r = devq__queue_check(q, "devq_queue_set_name");
    if (r < 0)
        return r;
    if ((r = devq__name_set(&q->name, DEVQ_NAME_QUEUE, "devq_queue_set_name", name)) == 0)
        devq__queue_trace_track(q);
    return r;
}

/* Describe what a queue still has pending, for timeout messages. */
static void describe_pending(struct devq_queue *q, char *msg, size_t cap)
{
    struct devq_device *dev = q->dev;
    uint64_t done = devq_signal_value(q->timeline);
    uint64_t sub = atomic_load(&q->submitted);
    int n = snprintf(msg, cap, "%s on %s:%d: %llu batch(es) unfinished", devq__queue_label(q).s,
                     dev->info.backend, dev->info.ordinal, (unsigned long long)(sub - done));
    pthread_mutex_lock(&dev->lock);
    struct devq_blocker why;
    char what[DEVQ_CAUSE_MAX];
    if (n > 0 && (size_t)n < cap && devq__queue_blocker(q, &why)) {
        devq__blocker_describe(&why, what, sizeof what);
        n += snprintf(msg + n, cap - (size_t)n, "; %s", what);
    }
    if (n > 0 && (size_t)n < cap - 16) {
        char cyc[256];
        if (devq__cycle_check(q, cyc, sizeof cyc) > 0)
            snprintf(msg + n, cap - (size_t)n, "; %s", cyc);
    }
    pthread_mutex_unlock(&dev->lock);
}

static int wait_stream_tail(struct devq_queue *q, uint64_t deadline)
{
    struct devq_device *dev = q->dev;
    devq_pl_event *e;
    int r = devq__event_get(dev, 0, &e);
    if (r < 0)
        return r;
    pthread_mutex_lock(&dev->lock);
    r = dev->ops->event_record(e, q->stream.pl);
    pthread_mutex_unlock(&dev->lock);
    if (r == 0) {
        uint64_t now = devq__now_ns();
        uint64_t timeout = deadline == DEVQ_NO_DEADLINE ? DEVQ_TIMEOUT_INFINITE
                           : deadline > now             ? deadline - now
                                                        : 0;
        r = dev->ops->event_wait(e, timeout);
        if (r == -ETIMEDOUT)
            r = devq__err(-ETIMEDOUT, "timed out: %s: the stream did not reach its tail",
                          devq__queue_label(q).s);
    }
    devq__event_put(dev, e, 0);
    return r;
}

int devq__queue_finish_until(struct devq_queue *q, uint64_t deadline)
{
    uint64_t target = atomic_load(&q->submitted);
    uint64_t now = devq__now_ns();
    uint64_t timeout = deadline == DEVQ_NO_DEADLINE ? DEVQ_TIMEOUT_INFINITE
                       : deadline > now             ? deadline - now
                                                    : 0;
    int r = devq_signal_wait(q->timeline, target, timeout);
    if (r == -ETIMEDOUT) {
        char msg[DEVQ_ERRMSG_MAX - 16];
        describe_pending(q, msg, sizeof msg);
        return devq__err(-ETIMEDOUT, "timed out: %s", msg);
    }
    if (r < 0)
        return r;
    /* Stream-ordered work issued after the last batch (a free's fence)
     * completes after that batch's callback returned: wait for the tail. */
    if ((r = wait_stream_tail(q, deadline)) < 0)
        return r;
    /* A finished queue is a quiet moment: give back events a burst left
     * pooled beyond a small reserve. */
    devq__event_pool_trim(q->dev);
    devq__mem_reap_quiet(q->dev); /* frees whose fences the tail reached */
    if (!atomic_load(&q->first_error))
        return 0;
    char cause[DEVQ_CAUSE_MAX];
    pthread_mutex_lock(&q->first_lock);
    int err = atomic_exchange(&q->first_error, 0);
    memcpy(cause, q->first_cause, sizeof cause);
    pthread_mutex_unlock(&q->first_lock);
    return err ? devq__err(err, "%s", cause) : 0;
}

DEVQ_API int devq_queue_finish(devq_queue *q, uint64_t timeout_ns)
{
    int r = devq__queue_check(q, "devq_queue_finish");
    if (r < 0)
        return r;
    if (atomic_load_explicit(&q->capturing, memory_order_relaxed))
        return devq__err(-EBUSY,
                         "devq_queue_finish: %s is capturing a graph (nothing it records runs); "
                         "call devq_queue_end_capture first",
                         devq__queue_label(q).s);
    return devq__queue_finish_until(q, devq__deadline(timeout_ns));
}

DEVQ_API void devq_queue_destroy(devq_queue *q)
{
    if (!q)
        return;
    /* void: a bad handle, or a queue of the process this one was forked
     * from (left to it), is logged, as devq_device_close does */
    if (devq__queue_check(q, "devq_queue_destroy") < 0) {
        devq__log(DEVQ_LOG_BASIC, "%s", devq__errmsg_peek());
        return;
    }
    struct devq_device *dev = q->dev;
    /* An open batch was never submitted: nothing of it runs, and what it
     * would have signalled fails, so no waiter hangs on it. */
    if (q->open) {
        char cause[DEVQ_CAUSE_MAX];
        snprintf(cause, sizeof cause, "%s destroyed with a batch that was never submitted",
                 devq__queue_label(q).s);
        devq__batch_discard(q->open, -ECANCELED, cause);
        q->open = NULL;
    }
    pthread_mutex_lock(&dev->lock);
    q->destroying = 1;
    struct batch *head = q->deferred;
    devq_notify *h = head ? devq__defer_take_notify(head) : NULL; /* ours to give back, through cancel */
    /* A head waiting for another queue's parked batch may wait as long
     * as that one: cancel it (and what follows) the same way. */
    if (head && head->defer.hazard_wait)
        devq__drain_deferred(q);
    pthread_mutex_unlock(&dev->lock);
    /* Deferred batches would wait forever for values nobody may set:
     * cancel the head's wait; its callback fails the FIFO in order. */
    if (h)
        devq_notify_cancel(h);
    devq__value_wait_cancel_queue(q); /* and device-side waits */
    devq__queue_finish_until(q, DEVQ_NO_DEADLINE);

    pthread_mutex_lock(&dev->lock);
    for (struct devq_queue **pp = &dev->qs->queues; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    devq__buffer_cache_drop(dev, q);
    devq__buffer_queue_gone(dev, q);
    devq__mem_stream_gone(dev, &q->stream);
    devq__checkpoints_drop(dev, &q->stream);
    devq__tracker_stream_remove(dev->tracker, q->stream.id);
    dev->streams[q->stream.id] = NULL;
    dev->ops->stream_destroy(q->stream.pl);
    pthread_mutex_unlock(&dev->lock);
    devq__tail_orphans_release(q, UINT64_MAX); /* the stream ran everything */

    q->magic = DEVQ_MAGIC_DEAD;
    devq_signal_destroy(q->timeline);
    pthread_mutex_destroy(&q->done_lock);
    pthread_mutex_destroy(&q->first_lock);
    struct batch *lists[2] = { q->free_private, atomic_exchange(&q->free_shared, NULL) };
    for (int l = 0; l < 2; l++)
        for (struct batch *b = lists[l], *n; b; b = n) {
            n = b->next;
            devq__batch_free(b);
        }
    free(q);
    devq_device_close(dev);
}
