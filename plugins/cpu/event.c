/* SPDX-License-Identifier: MIT */
/* cpu backend: events are (stream, sequence) pairs.
 *
 * Recording captures the stream's last enqueued sequence; the event is
 * reached once the stream's completed sequence gets there.  Only timing
 * events put an op in the ring (to take the timestamp in stream order).
 * An event keeps a reference on the stream it names, so it can still be
 * queried after lib destroyed that stream. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "cpu.h"

int cpu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    if (flags & ~DEVQ_EVENT_TIMING)
        return cpu_host->error(-EINVAL, "cpu: event_create: unknown flags 0x%x", flags);
    devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return cpu_host->error(-ENOMEM, "cpu: out of memory creating an event");
    e->dev = dev;
    e->flags = flags;
    pl_ref_init(&e->refs, 1);
    pthread_mutex_init(&e->lock, NULL);
    cpu_list_add(dev, &dev->events, &e->link);
    *out = e;
    return 0;
}

static void cpu_event_unref(devq_pl_event *e)
{
    if (!pl_ref_put(&e->refs))
        return;
    if (e->stream)
        cpu_stream_unref(e->stream);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

void cpu_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    cpu_list_del(e->dev, &e->link);
    /* A pending timestamp op holds its own reference. */
    cpu_event_unref(e);
}

void cpu_event_free(devq_pl_event *e)
{
    cpu_event_destroy(e);
}

/* Point e at (s, seq); called with e->lock held.  Returns the stream
 * whose reference the caller must drop after unlocking, or NULL. */
static devq_pl_stream *cpu_event_retarget(devq_pl_event *e, devq_pl_stream *s, uint64_t seq)
{
    devq_pl_stream *old = e->stream;
    if (old != s)
        cpu_stream_ref(s);
    e->stream = s;
    e->seq = seq;
    return old != s ? old : NULL;
}

int cpu_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    struct cpu_op *op = NULL;
    if (e->flags & DEVQ_EVENT_TIMING) {
        op = cpu_stream_reserve(s);
        if (!op)
            return cpu_host->error(-ENOMEM, "cpu: out of memory recording a timing event");
    }
    pthread_mutex_lock(&e->lock);
    uint64_t seq = s->enqueued_local + (op ? 1 : 0);
    devq_pl_stream *old = cpu_event_retarget(e, s, seq);
    pthread_mutex_unlock(&e->lock);
    if (old)
        cpu_stream_unref(old);
    if (op) {
        pl_ref_get(&e->refs);
        op->kind = CPU_OP_TIMESTAMP;
        op->u.stamp.e = e;
        op->u.stamp.seq = seq;
        cpu_stream_publish(s);
    }
    return 0;
}

/* Snapshot (stream, seq) with a reference on the stream; NULL stream:
 * never recorded. */
static devq_pl_stream *cpu_event_target(devq_pl_event *e, uint64_t *seq)
{
    pthread_mutex_lock(&e->lock);
    devq_pl_stream *s = e->stream;
    *seq = e->seq;
    if (s)
        cpu_stream_ref(s);
    pthread_mutex_unlock(&e->lock);
    return s;
}

int cpu_event_query(devq_pl_event *e)
{
    pthread_mutex_lock(&e->lock);
    int reached = !e->stream || cpu_stream_completed(e->stream) >= e->seq;
    pthread_mutex_unlock(&e->lock);
    return reached ? 0 : -EAGAIN;
}

int cpu_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    uint64_t seq;
    devq_pl_stream *s = cpu_event_target(e, &seq);
    if (!s)
        return 0;
    int err = cpu_stream_wait_seq(s, seq, timeout_ns == 0 ? 0 : cpu_deadline(timeout_ns));
    uint64_t done = cpu_stream_completed(s);
    unsigned index = s->index;
    cpu_stream_unref(s);
    if (err)
        return cpu_host->error(err,
                               "cpu: event wait timed out after %llu ns: stream %u "
                               "completed %llu of %llu ops",
                               (unsigned long long)timeout_ns, index, (unsigned long long)done,
                               (unsigned long long)seq);
    return 0;
}

int cpu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    uint64_t seq;
    devq_pl_stream *other = cpu_event_target(e, &seq);
    /* Already reached, or on this stream (in order anyway): nothing to do. */
    if (!other || other == s || cpu_stream_completed(other) >= seq) {
        if (other)
            cpu_stream_unref(other);
        return 0;
    }
    struct cpu_op *op = cpu_stream_queue(s, CPU_OP_WAIT, "a stream wait");
    if (!op) {
        cpu_stream_unref(other);
        return -ENOMEM;
    }
    op->u.wait.other = other; /* the op owns the reference */
    op->u.wait.seq = seq;
    cpu_stream_publish(s);
    return 0;
}

void cpu_event_run_wait(devq_pl_stream *s, struct cpu_op *op)
{
    (void)s;
    /* No deadline: like a device stream, this one waits as long as the
     * other does not get there.  lib owns deadlock detection. */
    cpu_stream_wait_seq(op->u.wait.other, op->u.wait.seq, CPU_NO_DEADLINE);
    cpu_stream_unref(op->u.wait.other);
}

void cpu_event_run_stamp(devq_pl_stream *s, struct cpu_op *op)
{
    devq_pl_event *e = op->u.stamp.e;
    uint64_t now = cpu_host->now_ns();
    pthread_mutex_lock(&e->lock);
    /* A re-record after this op was queued owns the event now. */
    if (e->stream == s && e->seq == op->u.stamp.seq) {
        e->stamp_ns = now;
        e->stamped_seq = op->u.stamp.seq;
    }
    pthread_mutex_unlock(&e->lock);
    cpu_event_unref(e);
}

/* The timestamp of a reached timing event, or an error naming `which`. */
static int cpu_event_stamp(devq_pl_event *e, const char *which, uint64_t *ns)
{
    if (!(e->flags & DEVQ_EVENT_TIMING))
        return cpu_host->error(-EINVAL,
                               "cpu: event_elapsed: %s event was not created with "
                               "DEVQ_EVENT_TIMING",
                               which);
    int err = 0;
    pthread_mutex_lock(&e->lock);
    if (!e->stream)
        err = cpu_host->error(-EINVAL, "cpu: event_elapsed: %s event was never recorded", which);
    else if (cpu_stream_completed(e->stream) < e->seq || e->stamped_seq != e->seq)
        err = cpu_host->error(-EAGAIN, "cpu: event_elapsed: %s event not reached yet", which);
    else
        *ns = e->stamp_ns;
    pthread_mutex_unlock(&e->lock);
    return err;
}

int cpu_event_elapsed(devq_pl_event *start, devq_pl_event *end, uint64_t *ns)
{
    uint64_t t0, t1;
    int err = cpu_event_stamp(start, "start", &t0);
    if (!err)
        err = cpu_event_stamp(end, "end", &t1);
    if (err)
        return err;
    if (t1 < t0)
        return cpu_host->error(-ERANGE,
                               "cpu: event_elapsed: end event was reached %llu ns "
                               "before start",
                               (unsigned long long)(t0 - t1));
    *ns = t1 - t0;
    return 0;
}
