/* SPDX-License-Identifier: MIT */
/* Batches: the per-queue pool, the references a batch holds, what its
 * ops use and when they count as issued, and a batch dropped before it
 * ran.  Used by every other file of the queue layer; it calls none of
 * the issue or lifecycle code above it. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "batch_life.h"
#include "batch_walk.h"
#include "buffer.h"
#include "defer.h"
#include "error.h"
#include "hazard.h"
#include "issue.h"
#include "queue.h"
#include "signal_int.h"
#include "timestamp.h"
#include "value_wait.h"

/* What every batch starts with, but its queue and its references: each
 * part reset by the file that writes it (batch.h).  Run when a batch
 * goes back to the pool -- on the completing thread, after its signals
 * were set -- rather than when the recorder takes it: a recording's
 * first op then writes none of these lines. */
static void batch_reset(struct batch *b)
{
    b->replay = 0;
    b->fail.error = 0;
    b->fail.cause[0] = 0;
    devq__issue_reset(b);
    devq__value_wait_batch_reset(b);
    devq__defer_reset(b);
    devq__hazard_batch_reset(b);
    devq__batch_walk_reset(b);
}

struct batch *devq__batch_get(struct devq_queue *q)
{
    if (!q->free_private)
        q->free_private = atomic_exchange_explicit(&q->free_shared, NULL, memory_order_acquire);
    struct batch *b = q->free_private;
    if (b) {
        q->free_private = b->next;
        /* The next batch's lines were last written on the completing
         * thread's core: start fetching the ones a get writes now, so the
         * next get does not wait for them. */
        if (b->next) {
            __builtin_prefetch(b->next, 1);
            __builtin_prefetch((char *)b->next + 64, 1);
            __builtin_prefetch((char *)b->next + 128, 1);
        }
    }
    if (!b) {
        /* On a cache line: see struct batch.  A multiple of 64 bytes for
         * aligned_alloc. */
        size_t size = (sizeof *b + 63) & ~(size_t)63;
        b = aligned_alloc(64, size);
        if (!b)
            return NULL;
        memset(b, 0, sizeof *b);
        batch_reset(b);
    }
    /* A pooled batch was reset when it was put back (devq__batch_put;
     * inline.c hands back a batch it changed none of these in). */
    b->q = q;
    atomic_store_explicit(&b->cb_refs, 1, memory_order_relaxed);
    b->next = NULL;
    return b;
}

/* In a ping-pong (submit, wait, record the next batch) the batch the
 * recorder takes next is the one completion put back during this round,
 * every line of it last written on the stream's core: fetched here, while
 * the submitter goes on to wait, the next recording finds them local. */
void devq__batch_pool_warm(struct devq_queue *q)
{
    if (!q->free_private)
        q->free_private = atomic_exchange_explicit(&q->free_shared, NULL, memory_order_acquire);
    struct batch *b = q->free_private;
    if (!b)
        return;
    for (size_t off = 0; off < offsetof(struct batch, walk); off += 64)
        __builtin_prefetch((char *)b + off, 1);
    if (b->rec.ops)
        __builtin_prefetch(b->rec.ops, 1);
    if (b->rec.uses)
        __builtin_prefetch(b->rec.uses, 1);
}

void devq__batch_put(struct devq_queue *q, struct batch *b)
{
    batch_reset(b);
    struct batch *head = atomic_load_explicit(&q->free_shared, memory_order_relaxed);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak_explicit(&q->free_shared, &head, b, memory_order_release,
                                                  memory_order_relaxed));
}

void devq__batch_put_private(struct devq_queue *q, struct batch *b)
{
    /* Handed out reset and, completed at submit, only recorded into:
     * of the parts batch_reset clears, only a replay's mark can be set
     * (graph_submit.c), and this path is taken by every empty batch. */
    b->replay = 0;
    b->next = q->free_private;
    q->free_private = b;
}

void devq__batch_free(struct batch *b)
{
    free(b->rec.ops);
    free(b->rec.args);
    free(b->rec.uses);
    free(b->rec.bytes);
    free(b->issue.gate);
    free(b->vw.slots);
    devq__ref_set_fini(&b->held);
    free(b->issue.marks);
    free(b->lists.list);
    free(b->plan.run);
    free(b->plan.buf);
    free(b->plan.fix);
    free(b);
}

/* Drop the references a batch holds: its signals and timestamps (per
 * op, from `from_op` on) and its buffers and kernels (held once each). */
void devq__batch_release_refs(struct batch *b, uint32_t from_op)
{
    /* A replay lists the ops that hold references (batch.h's plan.fix;
     * a graph has no timestamp op): not a visit of every op. */
    uint32_t n = b->replay ? b->plan.nfix : b->rec.nops;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = b->replay ? b->plan.fix[j] : j;
        if (i < from_op)
            continue;
        struct op *o = &b->rec.ops[i];
        switch (o->kind) {
        case OP_WAIT:
        case OP_SIGNAL:
            devq__signal_release(o->u.sig.s);
            break;
        case OP_TIMESTAMP:
            devq__object_release(&o->u.ts->obj);
            break;
        default:
            break;
        }
    }
    devq__ref_set_release(&b->held);
}

void devq__batch_unissue(struct batch *b, uint32_t from)
{
    for (uint32_t i = from; i < b->rec.nops; i++)
        devq__op_issued(b, &b->rec.ops[i]);
}

void devq__op_issued(struct batch *b, struct op *o)
{
    if (b->parked_uses)
        devq__hazard_op_done(b, o);
    const struct buffer_use *u = devq__op_uses(b, o);
    for (uint32_t k = 0; k < o->nuses; k++)
        if (u[k].counted) /* the batch's last use of the buffer (record.c) */
            devq__buffer_issued(u[k].buf);
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
        for (uint32_t i = 0; i < b->rec.nops; i++)
            if (b->rec.ops[i].kind == OP_SIGNAL)
                devq__signal_fail_cause(b->rec.ops[i].u.sig.s, err, cause);
    devq__batch_release_refs(b, 0);
    devq__batch_put(q, b);
}

/* Failures of batches ending on the stream's callback thread, of a
 * submit and of a synchronize may race: the first under the lock wins,
 * and finish takes error and cause together under it. */
void devq__queue_record_failure(struct devq_queue *q, int err, const char *cause)
{
    if (atomic_load(&q->first_error))
        return;
    pthread_mutex_lock(&q->first_lock);
    if (!atomic_load(&q->first_error)) {
        snprintf(q->first_cause, sizeof q->first_cause, "%s", cause);
        atomic_store(&q->first_error, err);
    }
    pthread_mutex_unlock(&q->first_lock);
}

/* Fail the rest of b without running it; the end callback reports it. */
void devq__batch_force(struct batch *b, int err, const char *fmt, ...)
{
    if (b->fail.error)
        return;
    b->fail.error = err;
    b->fail.from = b->issue.next_op;
    char chain[DEVQ_CAUSE_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(chain, sizeof chain, fmt, ap);
    va_end(ap);
    devq__cause_compact(b->fail.cause, sizeof b->fail.cause, chain); /* the root cause survives */
}

/* The batch ends inline (its end callback could not be queued): fail the
 * ops not yet run with err unless a failure was forced already; the
 * cause, when none was forced, is devq_errmsg() on this thread. */
void devq__batch_force_end(struct batch *b, int err)
{
    if (!b->fail.cause[0])
        snprintf(b->fail.cause, sizeof b->fail.cause, "%s batch %llu: %s", devq__queue_label(b->q).s,
                 (unsigned long long)b->seq, devq_errmsg());
    if (!b->fail.error) {
        b->fail.error = err;
        b->fail.from = b->rec.nops;
    }
}
