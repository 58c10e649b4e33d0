/* SPDX-License-Identifier: MIT */
/* Completing a signal-only batch at submit, on the submitting thread.
 *
 * A batch whose ops are only signals (devq_queue_signal + submit, or an
 * empty submit) does nothing on the stream: the normal path queues its
 * end callback only to set those signals after all earlier work of the
 * queue.  When every batch submitted before it has completed (the
 * queue's timeline says so), that point is now: the stream has nothing
 * of this queue left to run, so the submitting thread sets the signals
 * itself and the batch never crosses to the stream thread.
 *
 * Taken only when the outcome is provably the one the end callback would
 * give (see eligible()):
 *  - order: the timeline reached the previous batch, so every earlier
 *    batch ran, delivered its verdict (a failed one failed its signals
 *    first) and published the queue's completion state updated here;
 *  - failure: the end callback's walk fails a signal-only batch only
 *    through the stream's error latch, a queue destroy (cancel_after) or
 *    a lost device.  The backend's stream_idle op says nothing queued on
 *    the stream is left to run and no error is latched (ops queued
 *    between batches, such as the guard's canary fills, can latch one);
 *    a backend without that op keeps the normal path;
 *  - logging and tracing: off here, so nothing they would show changes;
 *  - counters: submitted and completed, as the normal path counts them.
 * No tracker producer record is made: the value is set before submit
 * returns, and an issue that looks for the producer of a value sees the
 * value reached first (or, racing on another thread, parks and is
 * resumed by this set like by any host set).
 *
 * Host-run work at submit (a channel's collectives, then signals): see
 * the second half of this file. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include "batch.h"
#include "batch_life.h"
#include "batch_walk.h"
#include "buffer_fail.h"
#include "completion.h"
#include "defer.h"
#include "error.h"
#include "grow.h"
#include "hazard.h"
#include "inline.h"
#include "log.h"
#include "mem.h"
#include "queue.h"
#include "signal_int.h"
#include "trace.h"

/* What both paths need: the queue has nothing left on its stream, and
 * nothing (destroy, loss, logs, traces) would see a difference. */
static int queue_idle(const struct devq_queue *q, uint64_t seq)
{
    const struct devq_device *dev = q->dev;
    if (!dev->ops->stream_idle)
        return 0;
    if (atomic_load_explicit(&dev->lost, memory_order_relaxed) ||
        atomic_load_explicit(&q->cancel_after, memory_order_relaxed) != UINT64_MAX)
        return 0;
    if (devq__trace_on() || DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        return 0;
    /* Acquire: what the completing thread did before it advanced the
     * timeline (done_upto under done_lock, the verdicts, the work) is
     * visible from here on. */
    return devq_signal_value(q->timeline) == seq - 1 && dev->ops->stream_idle(q->stream.pl);
}

static int eligible(const struct devq_queue *q, const struct batch *b, uint64_t seq)
{
    for (uint32_t i = 0; i < b->rec.nops; i++)
        if (b->rec.ops[i].kind != OP_SIGNAL)
            return 0;
    return queue_idle(q, seq);
}

static int submit_work_inline(struct devq_queue *q, struct batch *b);

int devq__submit_inline(struct devq_queue *q, struct batch *b)
{
    /* The recorder role is held: nobody else numbers batches. */
    uint64_t seq = atomic_load_explicit(&q->submitted, memory_order_relaxed) + 1;
    if (!eligible(q, b, seq))
        return submit_work_inline(q, b);
    struct devq_device *dev = q->dev;
    b->seq = seq;
    atomic_store_explicit(&q->submitted, seq, memory_order_release);
    for (uint32_t i = 0; i < b->rec.nops; i++) /* b holds each until the release below */
        devq__signal_advance_held(b->rec.ops[i].u.sig.s, b->rec.ops[i].u.sig.v);
    devq__mem_reap_soon(dev);
    /* Signal ops hold their signal and nothing in b->held. */
    for (uint32_t i = 0; i < b->rec.nops; i++)
        devq__signal_release(b->rec.ops[i].u.sig.s);
    if (b->held.n)
        devq__ref_set_release(&b->held);
    /* Submitted and completed, in one count (devq_stats_get). */
    atomic_fetch_add_explicit(&dev->stats.batches_inline, 1, memory_order_relaxed);
    /* No batch of q is in flight, so no callback reads or writes these
     * until the next issue, which this store happens-before. */
    q->done_upto = seq;
    devq__batch_put_private(q, b);
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    /* Last, as in devq__batch_unref: once the timeline moves, a finishing
     * thread may destroy q (so no reference of ours is assumed held). */
    devq__signal_advance(q->timeline, seq);
    return 1;
}

/* ---- Host-run work at submit ----
 *
 * A batch of host-run work (OP_WORK without an issue function: a
 * channel's collectives on a host engine), optionally followed by
 * signals, on an idle queue: the normal path hands every op to the
 * stream thread and the verdict back, two thread hand-offs per op that
 * cost far more than a small collective.  Here the submitting thread
 * runs the ops itself, through the same steps as their callbacks
 * (devq__work_cb, devq__end_cb), in order, and the batch completes before
 * submit returns.
 *
 * Taken only when nothing could tell the difference (work_eligible()):
 *  - order: the queue is idle as for signals above (every earlier batch
 *    completed, the stream empty, no error latched), so nothing of this
 *    queue runs before or beside it;
 *  - other queues: no batch of the device is parked (no hazard to wait
 *    for), and every buffer the batch uses needs no tracker wait: its
 *    last write is this stream's or none, and for a write, so are the
 *    reads since.  A batch that would need a wait takes the normal path.
 *    The uses are bound in the tracker at submit, under the device lock,
 *    as issue binds them, so work submitted later on another queue is
 *    ordered after this batch.  The stream holds nothing of it, so while
 *    it runs the batch's uses are registered as parked (hazard.h): an op
 *    of another queue that conflicts parks until this batch's ops count
 *    as issued, which is when they have completed here (or gone to the
 *    stream, below);
 *  - failure: each op is walked and run as devq__work_cb does, the
 *    status of the one before passed on as the stream's latch would
 *    pass it; the end is devq__end_cb itself: a failed op fails what it
 *    writes and the batch's signals with its root cause;
 *  - never a hang: the work may decline or stop short (DEVQ_WORK_PENDING,
 *    batch.h) when it cannot finish within a short spin (the channel is
 *    busy, the peers are late); the rest of the batch then goes to the
 *    stream as one callback, which picks up the started op, so submit
 *    never waits for a peer for longer than that spin.
 * devq_stats counts a batch taken here in batches_run_at_submit,
 * whether it ended here or its rest went to the stream. */

/* A use bind makes without a wait or a failure (tracker.h): room for
 * this stream's first read is made here, before anything is bound. */
static int use_local(struct devq_buffer_track *t, uint32_t sid, unsigned access)
{
    if (t->write.cursor && t->write.stream != sid)
        return 0; /* RAW / WAW on another stream */
    if (access & DEVQ_WRITE) {
        for (uint32_t i = 0; i < t->nreads; i++)
            if (t->reads[i].cursor && t->reads[i].stream != sid)
                return 0; /* WAR */
        return 1;
    }
    for (uint32_t i = 0; i < t->nreads; i++)
        if (t->reads[i].stream == sid)
            return 1;
    return t->nreads < t->capreads || DEVQ_GROW(t->reads, t->capreads, 2) == 0;
}

/* Work ops first (host-run), then signals only.  Device lock held. */
static int work_eligible(const struct devq_queue *q, const struct batch *b)
{
    uint32_t i = 0;
    while (i < b->rec.nops && b->rec.ops[i].kind == OP_WORK && !b->rec.ops[i].u.work.issue)
        i++;
    if (i == 0)
        return 0;
    for (uint32_t k = i; k < b->rec.nops; k++)
        if (b->rec.ops[k].kind != OP_SIGNAL)
            return 0;
    if (q->deferred || devq__hazard_any(q->dev))
        return 0;
    for (uint32_t k = 0; k < b->rec.nuses; k++)
        if (!use_local(&b->rec.uses[k].buf->track, q->stream.id, b->rec.uses[k].access))
            return 0;
    return 1;
}

/* Number b, bind its uses, register them as parked.  Device lock held;
 * 0: not eligible after all, nothing changed. */
static int begin_at_submit(struct devq_queue *q, struct batch *b, uint64_t seq)
{
    struct devq_device *dev = q->dev;
    if (!queue_idle(q, seq) || !work_eligible(q, b))
        return 0;
    b->defer.serial = ++dev->qs->submit_serial;
    if (devq__hazard_park(b) < 0)
        return 0; /* out of memory: the normal path says so */
    b->seq = seq;
    atomic_store_explicit(&q->submitted, seq, memory_order_release);
    atomic_fetch_add_explicit(&dev->stats.batches_submitted, 1, memory_order_relaxed);
    devq__tracker_begin(dev->tracker, q->stream.id);
    for (uint32_t k = 0; k < b->rec.nuses; k++) {
        struct buffer_use *u = &b->rec.uses[k];
        u->gen = devq__buffer_bind_gen(u->buf, u->access);
        /* use_local: no wait, no allocation, so no failure */
        devq__tracker_bind(dev->tracker, q->stream.id, &u->buf->track, u->access);
    }
    for (uint32_t i = 0; i < b->rec.nops; i++) {
        struct op *o = &b->rec.ops[i];
        if (o->kind == OP_WORK)
            atomic_fetch_add_explicit(&b->cb_refs, 1, memory_order_relaxed); /* its step unrefs */
        else
            o->at_end = 1; /* every signal comes after the work */
    }
    q->issued_seq = seq;
    return 1;
}

/* The ops are out (done here, or queued on the stream): other queues may
 * order after them now.  Device lock held. */
static void end_at_submit(struct devq_queue *q, struct batch *b)
{
    for (uint32_t i = 0; i < b->rec.nops; i++)
        devq__op_issued(b, &b->rec.ops[i]); /* drops the parked uses */
    devq__drain_deferred(q);
}

/* Whether a member of o's group follows o (DEVQ_WORK_MORE). */
static int work_group_more(const struct batch *b, const struct op *o)
{
    const struct op *next = (uint32_t)(o - b->rec.ops) + 1 < b->rec.nops ? o + 1 : NULL;
    return next && next->kind == OP_WORK && next->u.work.run == o->u.work.run &&
           next->u.work.key == o->u.work.key;
}

/* Work op o of b as devq__work_cb runs it, with flags added to its group
 * (DEVQ_WORK_INLINE at submit); *head_io: the group's first op when the
 * op before o was run by the same run_ops, else NULL (set for the next).
 * Returns the op's verdict for the next (the latch), or
 * DEVQ_WORK_PENDING with nothing consumed. */
static int work_step(struct batch *b, struct op *o, int status, unsigned flags, const struct op **head_io)
{
    const struct op *head;
    unsigned group;
    if (*head_io && o[-1].u.work.run == o->u.work.run && o[-1].u.work.key == o->u.work.key) {
        /* o follows a member of the group in run_ops: the head is known
         * (devq__work_group walks back to it, which a long group would
         * pay per member) */
        head = *head_io;
        group = DEVQ_WORK_CONT | (work_group_more(b, o) ? DEVQ_WORK_MORE : 0);
    } else {
        group = devq__work_group(b, o, &head);
    }
    *head_io = head;
    return devq__work_run_here(b, o, status, group | flags, head);
}

/* Run b's ops from `from` (flags as work_step); *stop: the op that went
 * pending (or nops).  Returns the status after the last op run. */
static int run_ops(struct batch *b, uint32_t from, int status, unsigned flags, uint32_t *stop)
{
    uint32_t i = from;
    const struct op *head = NULL; /* the current group's first op */
    for (; i < b->rec.nops && b->rec.ops[i].kind == OP_WORK; i++) {
        int r = work_step(b, &b->rec.ops[i], status, flags, &head);
        if (r == DEVQ_WORK_PENDING && (flags & DEVQ_WORK_INLINE))
            break;
        status = r < 0 ? r : 0;
    }
    *stop = i;
    return status;
}

/* The end: signals and counters as the end callback, the timeline last. */
static void finish_at_submit(struct devq_queue *q, struct batch *b, int status)
{
    /* One more reference: b outlives the end callback's own, so the
     * recorder role goes back after the signals and before the timeline
     * moves (then a finishing thread may destroy q). */
    atomic_fetch_add_explicit(&b->cb_refs, 1, memory_order_relaxed);
    devq__end_cb(b, status);
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    devq__batch_unref(b);
}

/* The rest of a batch that went pending at submit, on the stream. */
struct rest {
    struct batch *b;
    uint32_t from;
    int status;
};

static int rest_cb(void *arg, int status)
{
    struct rest *x = arg;
    struct batch *b = x->b;
    uint32_t stop, from = x->from;
    if (!status)
        status = x->status;
    free(x);
    status = run_ops(b, from, status, 0, &stop);
    devq__end_cb(b, status);
    return 0;
}

/* Op `from` went pending: the rest goes to the stream as one callback
 * (rest_cb), which is now the stream's tail that other queues order
 * after.  Without it the rest runs here, waiting as the stream would. */
static void hand_rest(struct devq_queue *q, struct batch *b, uint32_t from, int status)
{
    struct devq_device *dev = q->dev;
    struct rest *x = malloc(sizeof *x);
    if (x) {
        *x = (struct rest){ .b = b, .from = from, .status = status };
        /* b must outlive rest_cb until its uses are dropped below. */
        atomic_fetch_add_explicit(&b->cb_refs, 1, memory_order_relaxed);
        pthread_mutex_lock(&dev->lock);
        if (dev->ops->host_fn(q->stream.pl, rest_cb, x) == 0) {
            end_at_submit(q, b);
            atomic_store_explicit(&q->recording, 0, memory_order_release);
            pthread_mutex_unlock(&dev->lock);
            devq__batch_unref(b);
            return;
        }
        pthread_mutex_unlock(&dev->lock);
        atomic_fetch_sub_explicit(&b->cb_refs, 1, memory_order_relaxed);
        free(x);
    }
    uint32_t stop;
    status = run_ops(b, from, status, 0, &stop);
    pthread_mutex_lock(&dev->lock);
    end_at_submit(q, b);
    pthread_mutex_unlock(&dev->lock);
    finish_at_submit(q, b, status);
}

static int submit_work_inline(struct devq_queue *q, struct batch *b)
{
    if (!b->rec.nops || b->rec.ops[0].kind != OP_WORK || b->rec.ops[0].u.work.issue)
        return 0;
    struct devq_device *dev = q->dev;
    uint64_t seq = atomic_load_explicit(&q->submitted, memory_order_relaxed) + 1;
    pthread_mutex_lock(&dev->lock);
    int go = begin_at_submit(q, b, seq);
    pthread_mutex_unlock(&dev->lock);
    if (!go)
        return 0;
    atomic_fetch_add_explicit(&dev->stats.batches_run_at_submit, 1, memory_order_relaxed);
    uint32_t stop;
    int status = run_ops(b, 0, 0, DEVQ_WORK_INLINE, &stop);
    if (stop < b->rec.nops && b->rec.ops[stop].kind == OP_WORK) {
        hand_rest(q, b, stop, status);
        return 1;
    }
    pthread_mutex_lock(&dev->lock);
    end_at_submit(q, b);
    pthread_mutex_unlock(&dev->lock);
    finish_at_submit(q, b, status);
    return 1;
}
