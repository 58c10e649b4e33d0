/* SPDX-License-Identifier: MIT */
/* The batch walk: a batch's verdict, op by op, in stream order.
 *
 * Every completion callback of a batch (gate, mid-batch signal, host fn,
 * the end of an issued portion, the batch end) first walks the ops
 * before it.  For each op the walk checks the buffers it reads (one that
 * a failed writer left failed fails this op, with a chained cause) and
 * then sets the failure state of the buffers it writes: failed when the
 * op failed or was skipped, cleared when it ran and declared the whole
 * buffer new without reading the old contents (a fill, write or copy
 * destination covering the buffer, exec WRITE).  Once the walk has failed, every later op of the batch is
 * failed too: its results are spoiled even on a backend that ran it.
 *
 * The walk runs only in the batch's callbacks, which run one at a time
 * in stream order, so its state needs no lock; the buffer states it sets
 * are published before the unit's tail, which every other user of those
 * buffers is ordered after by the tracker. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "batch.h"
#include "batch_walk.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "error.h"
#include "queue.h"
#include "signal_int.h"

static void walk_fail(struct batch *b, uint32_t at, int err, const char *cause)
{
    if (b->walk.err)
        return;
    b->walk.err = err < 0 ? err : -EIO;
    b->walk.at = at;
    snprintf(b->walk.cause, sizeof b->walk.cause, "%s", cause);
}

void devq__batch_walk_fail(struct batch *b, int status)
{
    if (b->walk.err)
        return;
    struct devq_queue *q = b->q;
    const char *detail = devq__errmsg_peek();
    char cause[DEVQ_CAUSE_MAX];
    snprintf(cause, sizeof cause, "%s batch %llu on %s:%d failed: %s", devq__queue_label(q).s,
             (unsigned long long)b->seq, q->dev->info.backend, q->dev->info.ordinal,
             detail && *detail ? detail : strerror(-status));
    walk_fail(b, b->walk.walked, status, cause);
}

void devq__batch_walk_fail_cause(struct batch *b, int err, const char *cause)
{
    walk_fail(b, b->walk.walked, err, cause);
}

/* An op that reads a failed buffer fails, with a chained cause. */
static void check_read(struct batch *b, uint32_t at, devq_buffer *buf, unsigned acc, uint32_t gen)
{
    if (!(acc & DEVQ_READ) || b->walk.err)
        return;
    char cause[DEVQ_CAUSE_MAX];
    int err = devq__buffer_failed_at(buf, gen, cause, sizeof cause);
    if (!err)
        return;
    char chained[DEVQ_CAUSE_MAX + 2 * DEVQ_LABEL_MAX + 64];
    snprintf(chained, sizeof chained, "%s batch %llu reads %s, which failed: %s", devq__queue_label(b->q).s,
             (unsigned long long)b->seq, devq__buffer_label(buf).s, cause);
    char compact[DEVQ_CAUSE_MAX];
    devq__cause_compact(compact, sizeof compact, chained);
    walk_fail(b, at, err, compact);
}

/* Whether an op that ran declared the whole of buf new.  A fill, write
 * or copy of part of a buffer leaves the rest as the failed writer left
 * it, so clearing the failure there would hand stale bytes to the next
 * reader as good data: only a range that covers the buffer clears.  An
 * exec argument has no range: DEVQ_WRITE declares the whole buffer. */
static int writes_whole(const struct op *o, const devq_buffer *buf)
{
    switch (o->kind) {
    case OP_EXEC:
        return 1;
    case OP_COPY:
        return o->u.copy.dst == buf && o->u.copy.dst_off == 0 && o->u.copy.n >= buf->size;
    case OP_FILL:
        return o->u.fill.off == 0 && o->u.fill.n >= buf->size;
    case OP_WRITE:
        return o->u.xfer.off == 0 && o->u.xfer.n >= buf->size;
    case OP_WORK:
        return o->u.work.whole; /* the upper layer says (one WRITE use at most) */
    default:
        return 0; /* an op kind that does not say: keep the failure */
    }
}

/* What an op wrote is failed if the walk failed, else cleared when the
 * op declared all of it new without reading the old. */
static void apply_write(struct batch *b, const struct op *o, devq_buffer *buf, unsigned acc, uint32_t gen)
{
    if (!(acc & DEVQ_WRITE))
        return;
    if (b->walk.err)
        devq__buffer_fail(buf, b->walk.err, b->walk.cause, gen + 1);
    else if (acc == DEVQ_WRITE && !atomic_load_explicit(&b->walk.inline_done, memory_order_acquire) &&
             writes_whole(o, buf))
        devq__buffer_clear(buf, gen + 1); /* new contents, declared by a writer that ran */
}

/* The op whose launch failed in a launch list or a native run of this
 * batch (graph replays whose backend named it), or UINT32_MAX. */
static uint32_t failed_launch(const struct batch *b)
{
    if (!b->replay)
        return UINT32_MAX;
    if (b->lists.failed && b->lists.list)
        return (uint32_t)(b->lists.failed - b->lists.list);
    for (uint32_t k = 0; k < b->plan.nrun; k++)
        if (b->plan.run[k].failed_at != UINT32_MAX)
            return b->plan.run[k].from + b->plan.run[k].failed_at;
    return UINT32_MAX;
}

int devq__batch_walk(struct batch *b, uint32_t upto, int status, int final)
{
    uint64_t head = atomic_load(&b->q->cancel_after);
    if (!b->walk.err && b->seq > head) {
        char cause[DEVQ_CAUSE_MAX];
        snprintf(cause, sizeof cause,
                 "%s destroyed while batch %llu waited behind batch %llu's wait "
                 "on the device",
                 devq__queue_label(b->q).s, (unsigned long long)b->seq, (unsigned long long)head);
        walk_fail(b, b->walk.walked, -ECANCELED, cause);
    }
    if (status) {
        struct devq_queue *q = b->q;
        if (status == q->cb_err && !b->walk.err) {
            /* The error an earlier callback of this stream returned: the
             * device skipped what came between (queue.h), so this batch
             * was skipped after that failure -- say which. */
            char chained[2 * DEVQ_CAUSE_MAX + DEVQ_LABEL_MAX + 96], cause[DEVQ_CAUSE_MAX];
            snprintf(chained, sizeof chained,
                     "%s batch %llu on %s:%d was skipped on the stream after a failure "
                     "before it: %s",
                     devq__queue_label(q).s, (unsigned long long)b->seq, q->dev->info.backend,
                     q->dev->info.ordinal, q->cb_cause);
            devq__cause_compact(cause, sizeof cause, chained);
            walk_fail(b, b->walk.walked, status, cause);
        } else {
            /* A launch list says which of its launches failed: those
             * before it ran (walked as such), the failure is its. */
            uint32_t k = failed_launch(b);
            if (k > b->walk.walked && k < upto && k < b->rec.nops)
                devq__batch_walk(b, k, 0, 0);
            devq__batch_walk_fail(b, status);
        }
    }
    /* Every callback takes the plugin's latch: an earlier callback's
     * error is no longer the reason for a later status. */
    if (__builtin_expect(b->q->cb_err != 0, 0))
        b->q->cb_err = 0;
    if (upto > b->rec.nops)
        upto = b->rec.nops;
    /* The success path: no failure here and none anywhere to read. */
    if (!b->walk.err && !(final && b->fail.error) && !devq__buffer_any_failed()) {
        if (upto > b->walk.walked)
            b->walk.walked = upto;
        return 0;
    }
    for (uint32_t i = b->walk.walked; i < upto; i++) {
        const struct op *o = &b->rec.ops[i];
        /* Forced errors are read only by the final walk: the issuing
         * thread may still be setting one while earlier callbacks run. */
        if (final && !b->walk.err && b->fail.error && i >= b->fail.from)
            walk_fail(b, i, b->fail.error, b->fail.cause);
        const struct buffer_use *u = devq__op_uses(b, o);
        for (uint32_t k = 0; k < o->nuses; k++)
            check_read(b, i, u[k].buf, u[k].access, devq__use_gen(b, &u[k]));
        for (uint32_t k = 0; k < o->nuses; k++)
            apply_write(b, o, u[k].buf, u[k].access, devq__use_gen(b, &u[k]));
    }
    if (upto > b->walk.walked)
        b->walk.walked = upto;
    if (final && !b->walk.err && b->fail.error)
        walk_fail(b, b->rec.nops, b->fail.error, b->fail.cause);
    return b->walk.err;
}

/* The end callback's common case, without the walk: the stream reported
 * no error (the caller checked), no earlier callback latched one, the
 * queue is not being destroyed under the batch, nothing failed it and no
 * buffer anywhere is failed, so the final walk would find nothing and
 * change nothing but `walked`.  1 when so (and walked), 0: walk. */
int devq__batch_walk_clean_end(struct batch *b)
{
    const struct devq_queue *q = b->q;
    if (b->walk.err || b->fail.error || q->cb_err || devq__buffer_any_failed() ||
        b->seq > atomic_load(&q->cancel_after))
        return 0;
    b->walk.walked = b->rec.nops;
    return 1;
}

/* A batch that completes inline (its end callback could not be queued)
 * may still have callbacks queued, which walk concurrently: this only
 * ever fails buffers, and stops the walk from clearing any. */
void devq__batch_walk_inline(struct batch *b, int err, const char *cause)
{
    atomic_store_explicit(&b->walk.inline_done, 1, memory_order_release);
    for (uint32_t k = 0; k < b->rec.nuses; k++)
        if (b->rec.uses[k].access & DEVQ_WRITE)
            devq__buffer_fail(b->rec.uses[k].buf, err, cause, devq__use_gen(b, &b->rec.uses[k]) + 1);
}

/* A batch handed out by the pool starts with nothing walked (batch_life.c
 * calls this; the walk's fields are written here only, batch.h). */
void devq__batch_walk_reset(struct batch *b)
{
    b->walk.walked = b->walk.at = 0;
    b->walk.err = 0;
    b->walk.cause[0] = 0;
    atomic_store_explicit(&b->walk.inline_done, 0, memory_order_relaxed);
}
