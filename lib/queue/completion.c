/* SPDX-License-Identifier: MIT */
/* Host callbacks, run by the backend in stream order on one of its
 * threads.  They never take the device lock and never call the backend
 * (plugins may run them where driver calls are banned): they only move
 * signals, counters and references. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "batch_life.h"
#include "batch_walk.h"
#include "buffer_fail.h"
#include "completion.h"
#include "error.h"
#include "issue.h"
#include "kernel.h"
#include "log.h"
#include "mem.h"
#include "queue.h"
#include "signal_int.h"
#include "tail_orphan.h"
#include "trace.h"
#include "value_wait.h"

/* A wait of b for s >= v, checked where the batch reaches it: 0, or the
 * batch fails with a cause that keeps the signal's own. */
static int wait_check(struct batch *b, devq_signal *s, uint64_t v)
{
    char why[DEVQ_CAUSE_MAX], cause[DEVQ_CAUSE_MAX + 2 * DEVQ_LABEL_MAX + 96];
    int st = devq__signal_wait_verdict(s, v, why, sizeof why);
    if (!st)
        return 0;
    /* "on cpu:0": in a chain across devices, which device waited. */
    snprintf(cause, sizeof cause, "%s batch %llu on %s:%d waits for %s >= %llu, which failed: %s",
             devq__queue_label(b->q).s, (unsigned long long)b->seq, b->q->dev->info.backend,
             b->q->dev->info.ordinal, devq__signal_label(s).s, (unsigned long long)v, why);
    char compact[DEVQ_CAUSE_MAX];
    devq__cause_compact(compact, sizeof compact, cause);
    devq__batch_walk_fail_cause(b, st, compact);
    return st;
}

static int gate_check(struct gate_rec *g, int status)
{
    struct batch *b = g->b;
    if (devq__batch_walk(b, g->from, status, 0))
        return b->walk.err;
    /* Its device-side waits may have been released by a queue destroy. */
    for (uint32_t i = 0; i < g->nslot; i++) {
        int cancelled = devq__value_wait_slot_cancelled(g->slot[i]);
        if (cancelled && !wait_check(b, devq__value_wait_slot_signal(g->slot[i]),
                                     devq__value_wait_slot_value(g->slot[i]))) {
            char cause[DEVQ_CAUSE_MAX];
            snprintf(cause, sizeof cause, "%s destroyed while batch %llu waited on the device",
                     devq__queue_label(b->q).s, (unsigned long long)b->seq);
            devq__batch_walk_fail_cause(b, cancelled, cause);
        }
        if (b->walk.err)
            return b->walk.err;
    }
    /* Work this batch was aligned after may have failed: then the batch
     * must not run, and fails with the same root cause. */
    for (uint32_t i = 0; i < g->nsig; i++)
        if (wait_check(b, g->sig[i].s, g->sig[i].v))
            return b->walk.err;
    return 0;
}

/* A callback returns r to the plugin's latch: remember why (queue.h). */
static int latch(struct batch *b, int r)
{
    if (r < 0) {
        b->q->cb_err = r;
        snprintf(b->q->cb_cause, sizeof b->q->cb_cause, "%s", b->walk.cause);
    }
    return r;
}

int devq__gate_cb(void *arg, int status)
{
    struct gate_rec *g = arg;
    struct batch *b = g->b;
    int r = latch(b, gate_check(g, status));
    free(g);
    devq__batch_unref(b);
    return r;
}

/* The end of an issued portion of a batch that goes on later (split at a
 * device-side wait, or deferred): its ops' buffer effects are published
 * here, before the stream point other streams may be ordered after. */
int devq__portion_cb(void *arg, int status)
{
    struct portion *p = arg;
    struct batch *b = p->b;
    if (p->forced) {
        devq__batch_walk(b, p->fail_from < p->upto ? p->fail_from : p->upto, status, 0);
        devq__batch_walk_fail_cause(b, p->forced, b->fail.cause); /* written before p was queued */
    }
    devq__batch_walk(b, p->upto, status, 0);
    free(p);
    devq__batch_unref(b);
    return 0; /* the batch's verdict travels in b, not in the latch */
}

int devq__signal_cb(void *arg, int status)
{
    struct op *o = arg;
    struct batch *b = o->u.sig.owner;
    int r = devq__batch_walk(b, (uint32_t)(o - b->rec.ops), status, 0);
    if (r)
        devq__signal_fail_cause(o->u.sig.s, r, b->walk.cause); /* and keep the rest from running */
    else
        devq__signal_advance_held(o->u.sig.s, o->u.sig.v); /* b holds it until the unref */
    latch(b, r);
    devq__batch_unref(b);
    return r;
}

int devq__user_fn_cb(void *arg, int status)
{
    struct op *o = arg;
    struct batch *b = o->u.host.owner;
    int r = devq__batch_walk(b, (uint32_t)(o - b->rec.ops), status, 0);
    if (!r) {
        devq__set_in_host_fn(1);
        o->u.host.fn(o->u.host.arg);
        devq__set_in_host_fn(0);
    }
    latch(b, r);
    devq__batch_unref(b);
    return r;
}

int devq__work_cb(void *arg, int status)
{
    struct op *o = arg;
    struct batch *b = o->u.work.owner;
    uint32_t at = (uint32_t)(o - b->rec.ops);
    const struct op *head;
    unsigned group = devq__work_group(b, o, &head);
    if (o->u.work.issue) {
        /* The group ran on the stream before this callback: the upper
         * layer's verdict (the engine's error, its own timeout) is the
         * cause, read before the walk takes the stream's status.  A
         * stream failure may be an op before the group: the walk fails
         * from the first op not yet walked; a verdict of the group alone
         * fails from the group's first op. */
        int rr = o->u.work.run(b->rec.bytes + o->u.work.off, status, group, head);
        int r;
        if (status)
            r = devq__batch_walk(b, at + 1, rr < 0 ? rr : status, 0);
        else if ((r = devq__batch_walk(b, (uint32_t)(head - b->rec.ops), 0, 0)) == 0 && rr < 0)
            devq__batch_walk_fail(b, rr);
        if (!status)
            r = devq__batch_walk(b, at + 1, 0, 0);
        latch(b, r);
        devq__batch_unref(b);
        return r;
    }
    return devq__work_run_here(b, o, status, group, head);
}

int devq__work_run_here(struct batch *b, struct op *o, int status, unsigned group, const struct op *head)
{
    uint32_t at = (uint32_t)(o - b->rec.ops);
    int r = devq__batch_walk(b, at, status, 0);
    /* Unlike a kernel, this op runs here: a failed input must stop it
     * before it runs (the walk of its own reads fails it, and what it
     * writes with it). */
    const struct buffer_use *u = devq__op_uses(b, o);
    for (uint32_t k = 0; !r && k < o->nuses; k++)
        if ((u[k].access & DEVQ_READ) && devq__buffer_failed_at(u[k].buf, u[k].gen, NULL, 0))
            r = devq__batch_walk(b, at + 1, 0, 0);
    if (r)
        devq__err_str(r, b->walk.cause); /* what run may tell others (batch.h) */
    int rr = o->u.work.run(b->rec.bytes + o->u.work.off, r, group, head);
    if (rr == DEVQ_WORK_PENDING && (group & DEVQ_WORK_INLINE))
        return rr; /* nothing consumed: the submitter hands the rest to the stream */
    if (rr < 0 && !r) {
        devq__batch_walk_fail(b, rr); /* at this op: what it writes fails */
        r = rr;
    }
    latch(b, r);
    devq__batch_unref(b);
    return r;
}

int devq__trace_mark_cb(void *arg, int status)
{
    *(uint64_t *)arg = devq__trace_now();
    return status; /* transparent: the latch passes through */
}

/* Slices for the ops of a traced batch: op i runs from its mark to the
 * next op's mark (or the batch end). */
void devq__trace_batch(struct batch *b)
{
    b->issue.marks[b->rec.nops] = devq__trace_now();
    for (uint32_t i = 0; i < b->rec.nops; i++) {
        if (!b->issue.marks[i])
            continue;
        uint64_t end = b->issue.marks[b->rec.nops];
        for (uint32_t j = i + 1; j < b->rec.nops; j++)
            if (b->issue.marks[j]) {
                end = b->issue.marks[j];
                break;
            }
        const struct op *o = &b->rec.ops[i];
        switch (o->kind) {
        case OP_EXEC: {
            char name[DEVQ_NAME_MAX + 1];
            devq__kernel_slice_name(o->u.exec.k, name, sizeof name);
            devq__trace_slice(b->q->dev, b->q->name.number, name, "batch", b->seq, b->issue.marks[i], end);
            break;
        }
        case OP_COPY:
            devq__trace_slice(b->q->dev, b->q->name.number, "copy", "bytes", o->u.copy.n, b->issue.marks[i],
                              end);
            break;
        case OP_FILL:
            devq__trace_slice(b->q->dev, b->q->name.number, "fill", "bytes", o->u.fill.n, b->issue.marks[i],
                              end);
            break;
        case OP_WRITE:
            devq__trace_slice(b->q->dev, b->q->name.number, "write (host to device)", "bytes", o->u.xfer.n,
                              b->issue.marks[i], end);
            break;
        case OP_READ:
            devq__trace_slice(b->q->dev, b->q->name.number, "read (device to host)", "bytes", o->u.xfer.n,
                              b->issue.marks[i], end);
            break;
        case OP_HOST_FN:
            devq__trace_slice(b->q->dev, b->q->name.number, "host fn", "batch", b->seq, b->issue.marks[i],
                              end);
            break;
        case OP_WORK:
            devq__trace_slice(b->q->dev, b->q->name.number, "channel op", "batch", b->seq, b->issue.marks[i],
                              end);
            break;
        default:
            break;
        }
    }
    devq__issue_trace_done(b);
}

/* Deliver a batch's verdict: its signals, the queue's first failure. */
static void batch_done(struct batch *b, int err, const char *cause)
{
    struct devq_queue *q = b->q;
    struct devq_device *dev = q->dev;
    if (err) {
        for (uint32_t i = 0; i < b->rec.nops; i++)
            if (b->rec.ops[i].kind == OP_SIGNAL && b->rec.ops[i].at_end)
                devq__signal_fail_cause(b->rec.ops[i].u.sig.s, err, cause);
        /* Signals delivered mid-batch already failed through the latch;
         * those never reached because a sync error stopped issuing: */
        for (uint32_t i = b->fail.error ? b->fail.from : b->rec.nops; i < b->rec.nops; i++)
            if (b->rec.ops[i].kind == OP_SIGNAL && !b->rec.ops[i].at_end)
                devq__signal_fail_cause(b->rec.ops[i].u.sig.s, err, cause);
        atomic_fetch_add(&dev->stats.batches_failed, 1);
        devq__queue_record_failure(q, err, cause);
        if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
            devq__log(DEVQ_LOG_BASIC, "%s", cause);
    } else {
        for (uint32_t i = 0; i < b->rec.nops; i++)
            if (b->rec.ops[i].kind == OP_SIGNAL && b->rec.ops[i].at_end) /* b holds it until the unref */
                devq__signal_advance_held(b->rec.ops[i].u.sig.s, b->rec.ops[i].u.sig.v);
    }
    devq__mem_reap_soon(dev); /* earlier stream-ordered frees may be done now */
    devq__batch_unref(b);
}

/* On the stream, before the end callback (straight.c queues it for a
 * batch that writes and reads no buffer, so its ops cannot fail but on
 * the stream, which then skips this).  A buffer failed anywhere means
 * the end callback walks, and its walk may clear what this batch wrote:
 * then the signal waits for it, so a waiter never sees the signal with
 * the buffer still failed. */
void devq__tail_set(void *arg, uint64_t value)
{
    if (__builtin_expect(!devq__buffer_any_failed(), 1))
        devq__signal_advance_held(arg, value); /* the batch holds it until its end callback */
}

/* The common case in a straight line: the stream reports no error, the
 * batch is not traced and its final walk has nothing to do.  Its signals
 * are set first, so a host waiter sees them one hand-off after the
 * stream got here; the rest (references, the pool, the queue timeline)
 * follows in devq__batch_unref. */
static void end_clean(struct batch *b)
{
    /* by index: an empty batch has no op array (ops NULL), and NULL + 0
     * is undefined behaviour (UBSan); a replay lists its signal ops
     * (batch.h's plan.fix) */
    uint32_t n = b->replay ? b->plan.nfix : b->rec.nops;
    for (uint32_t j = 0; j < n; j++) {
        const struct op *o = &b->rec.ops[b->replay ? b->plan.fix[j] : j];
        if (o->kind != OP_SIGNAL || !o->at_end)
            continue;
        /* A tail set it already (a load, not a CAS on the line the
         * waiter reads), unless it found a buffer failed then. */
        if (o->at_end == OP_AT_END_TAIL && devq__signal_settled(o->u.sig.s, o->u.sig.v))
            continue;
        devq__signal_advance_held(o->u.sig.s, o->u.sig.v); /* b holds it until the unref */
    }
    devq__mem_reap_soon(b->q->dev);
    devq__batch_unref(b);
}

int devq__end_cb(void *arg, int status)
{
    struct batch *b = arg;
    if (__builtin_expect(devq__tail_orphans_any(b->q), 0))
        devq__tail_orphans_release(b->q, b->seq); /* their tails ran: they were queued before b */
    if (__builtin_expect(!status && !b->issue.traced, 1) && devq__batch_walk_clean_end(b)) {
        end_clean(b);
        return 0;
    }
    if (b->issue.traced)
        devq__trace_batch(b);
    int err = devq__batch_walk(b, b->rec.nops, status, 1);
    batch_done(b, err, b->walk.cause);
    return 0;
}

/* The queue's timeline says "every batch up to N is done", which finish
 * and destroy rely on.  Batches normally complete in order (their end
 * callbacks run in stream order), but one whose end callback could not
 * be queued completes at once, ahead of earlier ones still running: it
 * waits on q->ahead (sorted by seq, not recycled yet) until they are
 * done.  Returns how far the timeline may go. */
static uint64_t queue_done_upto(struct devq_queue *q, struct batch *b)
{
    pthread_mutex_lock(&q->done_lock);
    if (b->seq != q->done_upto + 1) {
        struct batch **pp = &q->ahead;
        while (*pp && (*pp)->seq < b->seq)
            pp = &(*pp)->next;
        b->next = *pp;
        *pp = b;
        pthread_mutex_unlock(&q->done_lock);
        return 0;
    }
    q->done_upto = b->seq;
    devq__batch_put(q, b);
    while (q->ahead && q->ahead->seq == q->done_upto + 1) {
        struct batch *x = q->ahead;
        q->ahead = x->next;
        q->done_upto = x->seq;
        devq__batch_put(q, x);
    }
    uint64_t upto = q->done_upto;
    pthread_mutex_unlock(&q->done_lock);
    return upto;
}

void devq__batch_unref(struct batch *b)
{
    if (atomic_fetch_sub_explicit(&b->cb_refs, 1, memory_order_acq_rel) != 1)
        return;
    struct devq_queue *q = b->q;
    struct devq_device *dev = q->dev;
    devq__value_wait_batch_done(b);
    devq__batch_release_refs(b, 0);
    devq_signal *timeline = q->timeline;
    atomic_fetch_add(&dev->stats.batches_completed, 1);
    uint64_t upto = queue_done_upto(q, b);
    /* Last: once the timeline moves, a finishing thread may destroy q. */
    if (upto)
        devq__signal_advance(timeline, upto);
}

/* The end callback could not be queued: the batch ends here, while
 * callbacks queued for its ops may still run (and walk) on the stream,
 * so this does not walk: it fails every buffer the batch writes. */
void devq__complete_inline(struct batch *b, int err)
{
    devq__batch_force_end(b, err);
    devq__batch_walk_inline(b, b->fail.error, b->fail.cause);
    batch_done(b, b->fail.error, b->fail.cause);
}
