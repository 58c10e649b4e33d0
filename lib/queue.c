/* Queue life cycle: create, finish, destroy, and the batch free list. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "event_pool.h"
#include "futex.h"
#include "hazard.h"
#include "log.h"
#include "mem.h"
#include "queue.h"
#include "signal_int.h"
#include "trace.h"
#include "value_wait.h"

int devq__queue_check(const devq_queue *q, const char *fn)
{
    if (!q)
        return devq__err(-EINVAL, "%s: queue is NULL", fn);
    if (q->magic != DEVQ_MAGIC_QUEUE)
        return devq__err(-EINVAL, "%s: %p is not a live queue (destroyed?)", fn, (const void *)q);
    return 0;
}

struct batch *devq__batch_get(struct devq_queue *q)
{
    if (!q->free_private)
        q->free_private = atomic_exchange_explicit(&q->free_shared, NULL, memory_order_acquire);
    struct batch *b = q->free_private;
    if (b)
        q->free_private = b->next;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
    }
    b->q = q;
    b->nops = b->nargs = b->ngate = b->nslots = b->nheld = 0;
    memset(b->held_memo, 0, sizeof b->held_memo);
    b->nbytes = 0;
    b->next_op = 0;
    b->forced_error = 0;
    b->cause[0] = 0;
    b->blocked_on = NULL;
    b->hazard_wait = 0;
    b->parked_uses = 0;
    b->notify = NULL;
    b->traced = 0;
    atomic_store_explicit(&b->cb_refs, 1, memory_order_relaxed);
    b->next = NULL;
    return b;
}

void devq__batch_put(struct devq_queue *q, struct batch *b)
{
    struct batch *head = atomic_load_explicit(&q->free_shared, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(&q->free_shared, &head, b, memory_order_release,
                                                  memory_order_relaxed));
}

static void batch_free(struct batch *b)
{
    free(b->ops);
    free(b->args);
    free(b->bytes);
    free(b->gate);
    free(b->slots);
    free(b->held);
    free(b->marks);
    free(b);
}

/* Drop the references a batch holds: its signals and timestamps (per
 * op, from `from_op` on) and its buffers and kernels (held once each). */
void devq__batch_release_refs(struct batch *b, uint32_t from_op)
{
    for (uint32_t i = from_op; i < b->nops; i++) {
        struct op *o = &b->ops[i];
        switch (o->kind) {
        case OP_WAIT:
        case OP_SIGNAL:
            devq__signal_release(o->u.sig.s);
            break;
        case OP_TIMESTAMP:
            devq__timestamp_release(o->u.ts);
            break;
        default:
            break;
        }
    }
    for (uint32_t i = 0; i < b->nheld; i++) {
        uintptr_t h = b->held[i];
        if (h & DEVQ_HELD_KERNEL)
            devq__kernel_release((devq_kernel *)(h & ~(uintptr_t)DEVQ_HELD_KERNEL));
        else
            devq__buffer_release((devq_buffer *)h);
    }
    b->nheld = 0;
}

void devq__batch_unissue(struct batch *b, uint32_t from)
{
    for (uint32_t i = from; i < b->nops; i++)
        devq__op_issued(b, &b->ops[i]);
}

int devq__op_each_buffer(const struct batch *b, const struct op *o,
                         int (*fn)(void *ctx, devq_buffer *buf, enum devq_access acc), void *ctx)
{
    int r = 0;
    switch (o->kind) {
    case OP_EXEC:
        for (uint32_t a = 0; a < o->u.exec.nargs && !r; a++) {
            const struct batch_arg *ba = &b->args[o->u.exec.first_arg + a];
            if (ba->buf)
                r = fn(ctx, ba->buf, ba->access);
        }
        return r;
    case OP_COPY:
        if ((r = fn(ctx, o->u.copy.src, DEVQ_READ)) == 0)
            r = fn(ctx, o->u.copy.dst, DEVQ_WRITE);
        return r;
    case OP_FILL:
        return fn(ctx, o->u.fill.dst, DEVQ_WRITE);
    case OP_WRITE:
        return fn(ctx, o->u.xfer.buf, DEVQ_WRITE);
    case OP_READ:
        return fn(ctx, o->u.xfer.buf, DEVQ_READ);
    default:
        return 0;
    }
}

static int buffer_issued(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    (void)ctx;
    (void)acc;
    devq__buffer_issued(buf);
    return 0;
}

void devq__op_issued(struct batch *b, struct op *o)
{
    devq__hazard_op_done(b, o);
    devq__op_each_buffer(b, o, buffer_issued, NULL);
}

void devq__batch_discard(struct batch *b, int err, const char *cause)
{
    struct devq_queue *q = b->q;
    pthread_mutex_lock(&q->dev->lock);
    devq__batch_unissue(b, 0);
    /* A free that waited for this batch's uses can go now. */
    devq__process_pending_frees(q->dev);
    pthread_mutex_unlock(&q->dev->lock);
    /* Waiters of what the batch would have signalled must not wait forever. */
    if (err)
        for (uint32_t i = 0; i < b->nops; i++)
            if (b->ops[i].kind == OP_SIGNAL)
                devq__signal_fail_cause(b->ops[i].u.sig.s, err, cause);
    devq__batch_release_refs(b, 0);
    devq__batch_put(q, b);
}

void devq__queue_record_failure(struct devq_queue *q, int err, const char *cause)
{
    int expected = 0;
    /* The cause is written before the error is published; finish reads
     * the error first, so it never sees a half-written cause. */
    if (atomic_load(&q->first_error) == 0) {
        snprintf(q->first_cause, sizeof q->first_cause, "%s", cause);
        atomic_compare_exchange_strong(&q->first_error, &expected, err);
    }
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
        return devq__err(-EINVAL, "devq_queue_create: unknown queue kind %d; use DEVQ_QUEUE_COMPUTE or DEVQ_QUEUE_COPY",
                         (int)d.kind);
    struct devq_queue *q = calloc(1, sizeof *q);
    if (!q)
        return devq__err(-ENOMEM, "devq_queue_create: out of memory");
    q->magic = DEVQ_MAGIC_QUEUE;
    q->dev = dev;
    q->desc = d;
    pthread_mutex_init(&q->done_lock, NULL);
    if ((r = devq_signal_create(0, &q->timeline)) < 0)
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
    q->number = ++dev->queue_numbers;
    q->next = dev->queues;
    dev->queues = q;
    pthread_mutex_unlock(&dev->lock);
    devq__device_retain(dev);
    devq__trace_queue(q);
    devq__log(DEVQ_LOG_FULL, "%s:%d: queue %u created (%s, priority %d, stream %u)",
              dev->info.backend, dev->info.ordinal, q->number,
              d.kind == DEVQ_QUEUE_COPY ? "copy" : "compute", d.priority, q->stream.id);
    *out = q;
    return 0;
fail_stream:
    devq_signal_destroy(q->timeline);
fail_sig:
    pthread_mutex_destroy(&q->done_lock);
    free(q);
    return r;
}

/* Describe what a queue still has pending, for timeout messages. */
static void describe_pending(struct devq_queue *q, char *msg, size_t cap)
{
    struct devq_device *dev = q->dev;
    uint64_t done = devq_signal_value(q->timeline);
    uint64_t sub = atomic_load(&q->submitted);
    int n = snprintf(msg, cap, "queue %u on %s:%d: %llu of %llu batch(es) unfinished",
                     q->number, dev->info.backend, dev->info.ordinal,
                     (unsigned long long)(sub - done), (unsigned long long)sub);
    pthread_mutex_lock(&dev->lock);
    struct batch *b = q->deferred;
    devq_signal *ws;
    uint64_t wv, wseq, wcur;
    struct devq_hazard hz;
    if (b && b->blocked_on && n > 0 && (size_t)n < cap)
        n += snprintf(msg + n, cap - (size_t)n, "; batch %llu waits s%llu>=%llu (value %llu)",
                      (unsigned long long)b->seq, (unsigned long long)devq__signal_id(b->blocked_on),
                      (unsigned long long)b->blocked_value,
                      (unsigned long long)devq_signal_value(b->blocked_on));
    else if (b && b->hazard_wait && n > 0 && (size_t)n < cap && devq__hazard_blocker(b, &hz))
        n += snprintf(msg + n, cap - (size_t)n, "; batch %llu %s buffer %p after queue %u batch %llu, "
                      "which is deferred", (unsigned long long)b->seq, hz.mine & DEVQ_WRITE ? "writes" : "reads",
                      hz.buf->dptr, hz.owner->q->number, (unsigned long long)hz.owner->seq);
    else if (n > 0 && (size_t)n < cap && devq__value_wait_blocker(q, &ws, &wv, &wseq, &wcur))
        n += snprintf(msg + n, cap - (size_t)n, "; batch %llu waits s%llu>=%llu on the device (value %llu)",
                      (unsigned long long)wseq, (unsigned long long)devq__signal_id(ws),
                      (unsigned long long)wv, (unsigned long long)devq_signal_value(ws));
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
                         : deadline > now ? deadline - now : 0;
        r = dev->ops->event_wait(e, timeout);
        if (r == -ETIMEDOUT)
            r = devq__err(-ETIMEDOUT, "timed out: queue %u: the stream did not reach its tail", q->number);
    }
    devq__event_put(dev, e, 0);
    return r;
}

int devq__queue_finish_until(struct devq_queue *q, uint64_t deadline)
{
    uint64_t target = atomic_load(&q->submitted);
    uint64_t now = devq__now_ns();
    uint64_t timeout = deadline == DEVQ_NO_DEADLINE ? DEVQ_TIMEOUT_INFINITE
                     : deadline > now ? deadline - now : 0;
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
    devq__mem_reap_quiet(q->dev);     /* frees whose fences the tail reached */
    int err = atomic_exchange(&q->first_error, 0);
    if (err)
        return devq__err(err, "%s", q->first_cause);
    return 0;
}

DEVQ_API int devq_queue_finish(devq_queue *q, uint64_t timeout_ns)
{
    int r = devq__queue_check(q, "devq_queue_finish");
    if (r < 0)
        return r;
    return devq__queue_finish_until(q, devq__deadline(timeout_ns));
}

DEVQ_API void devq_queue_destroy(devq_queue *q)
{
    if (devq__queue_check(q, "devq_queue_destroy") < 0)
        return;
    struct devq_device *dev = q->dev;
    /* An open batch was never submitted: nothing of it runs. */
    if (q->open) {
        devq__batch_discard(q->open, 0, NULL);    /* never submitted: nothing promised */
        q->open = NULL;
    }
    pthread_mutex_lock(&dev->lock);
    q->destroying = 1;
    struct batch *head = q->deferred;
    devq_notify *h = head ? head->notify : NULL;
    if (head)
        head->notify = NULL;          /* ours to give back, through cancel */
    /* A head waiting for another queue's parked batch may wait as long
     * as that one: cancel it (and what follows) the same way. */
    if (head && head->hazard_wait)
        devq__drain_deferred(q);
    pthread_mutex_unlock(&dev->lock);
    /* Deferred batches would wait forever for values nobody may set:
     * cancel the head's wait; its callback fails the FIFO in order. */
    if (h)
        devq_notify_cancel(h);
    devq__value_wait_cancel_queue(q);     /* and device-side waits */
    devq__queue_finish_until(q, DEVQ_NO_DEADLINE);

    pthread_mutex_lock(&dev->lock);
    for (struct devq_queue **pp = &dev->queues; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    devq__buffer_queue_gone(dev, q);
    devq__mem_stream_gone(dev, &q->stream);
    devq__checkpoints_drop(dev, &q->stream);
    devq__tracker_stream_remove(dev->tracker, q->stream.id);
    dev->streams[q->stream.id] = NULL;
    dev->ops->stream_destroy(q->stream.pl);
    pthread_mutex_unlock(&dev->lock);

    q->magic = DEVQ_MAGIC_DEAD;
    devq_signal_destroy(q->timeline);
    pthread_mutex_destroy(&q->done_lock);
    struct batch *lists[2] = { q->free_private, atomic_exchange(&q->free_shared, NULL) };
    for (int l = 0; l < 2; l++)
        for (struct batch *b = lists[l], *n; b; b = n) {
            n = b->next;
            batch_free(b);
        }
    free(q);
    devq_device_close(dev);
}
