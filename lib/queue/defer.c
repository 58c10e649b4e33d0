/* SPDX-License-Identifier: MIT */
/* Deferral: batches parked on their queue's FIFO until the value they
 * wait for is reached (the notifier resumes them) or the earlier parked
 * batch they conflict with issues its use; submission, which issues or
 * parks; draining the FIFO.  Device lock held, but in resume_cb, which
 * takes it. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "batch.h"
#include "batch_life.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "cycle.h"
#include "defer.h"
#include "error.h"
#include "hazard.h"
#include "issue.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "straight.h"
#include "value_wait.h"

#define ISSUE_DEFERRED 1

static void resume_cb(void *arg, int status);

static int defer(struct devq_queue *q, struct batch *b, devq_signal *s, uint64_t v)
{
    b->defer.blocked_on = s;
    b->defer.blocked_value = v;
    atomic_fetch_add(&q->dev->stats.batches_deferred, 1);
    int r = devq_signal_notify(s, v, resume_cb, b, &b->defer.notify);
    if (r < 0)
        return r;
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        devq__log(DEVQ_LOG_BASIC, "%s:%d: %s batch %llu deferred: waits for %s >= %llu (value %llu)",
                  q->dev->info.backend, q->dev->info.ordinal, devq__queue_label(q).s,
                  (unsigned long long)b->seq, devq__signal_label(s).s, (unsigned long long)v,
                  (unsigned long long)devq_signal_value(s));
    return 0;
}

/* An op conflicts with a batch submitted earlier on another queue that
 * is still parked: park this one too until that use is issued (hazard.h). */
static int defer_hazard(struct devq_queue *q, struct batch *b)
{
    struct devq_hazard hz;
    b->defer.hazard_wait = 1;
    atomic_fetch_add(&q->dev->stats.batches_deferred, 1);
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC) && devq__hazard_blocker(b, &hz))
        devq__log(DEVQ_LOG_BASIC,
                  "%s:%d: %s batch %llu deferred: %s %s after %s batch %llu "
                  "(submitted earlier, deferred)",
                  q->dev->info.backend, q->dev->info.ordinal, devq__queue_label(q).s,
                  (unsigned long long)b->seq, hz.mine & DEVQ_WRITE ? "writes" : "reads",
                  devq__buffer_label(hz.buf).s, devq__queue_label(hz.owner->q).s,
                  (unsigned long long)hz.owner->seq);
    return 0;
}

/* Park b at the op issue stopped at: its unissued uses registered for
 * later batches first, then the wait handed to the notifier (or the
 * hazard noted).  0, or an error with b forced to fail. */
static int park(struct devq_queue *q, struct batch *b)
{
    const struct op *w = &b->rec.ops[b->issue.park_at];
    int r = devq__hazard_park(b);
    if (r < 0) {
        devq__batch_force(b, r, "%s batch %llu: cannot defer: %s", devq__queue_label(q).s,
                          (unsigned long long)b->seq, devq_errmsg());
        return r;
    }
    if (w->kind != OP_WAIT)
        return defer_hazard(q, b); /* the conflict was found at w */
    if ((r = defer(q, b, w->u.sig.s, w->u.sig.v)) == 0)
        return 0;
    devq__batch_force(b, r, "%s batch %llu: cannot wait for %s >= %llu: %s", devq__queue_label(q).s,
                      (unsigned long long)b->seq, devq__signal_label(w->u.sig.s).s,
                      (unsigned long long)w->u.sig.v, devq_errmsg());
    return r;
}

/* Issue b, parking it if it must wait: ISSUE_DEFERRED, or the error the
 * backend gave while issuing (0: none). */
static int issue_or_park(struct devq_queue *q, struct batch *b)
{
    int r = devq__issue(q, b);
    if (r != DEVQ_ISSUE_PARK)
        return r;
    int pr = park(q, b);
    if (pr == 0)
        return ISSUE_DEFERRED;
    /* It could not park (the notifier thread cannot start, no memory):
     * end it now, forced, its signals failed with that cause, and give
     * the submitter the error rather than a batch nothing will run. */
    char why[DEVQ_CAUSE_MAX];
    snprintf(why, sizeof why, "%s", devq_errmsg());
    b->defer.no_park = 1;
    unsigned long long seq = b->seq;
    devq__issue(q, b); /* a backend error now is the batch's, after this cause */
    return devq__err(pr, "devq_queue_submit: %s batch %llu failed: cannot defer it: %s",
                     devq__queue_label(q).s, seq, why);
}

/* Issue deferred batches from the head of the FIFO until one blocks;
 * 1 if any batch went out. */
static int drain_one(struct devq_queue *q)
{
    struct batch *b;
    int progress = 0;
    while ((b = q->deferred)) {
        struct devq_hazard hz;
        if (b->defer.hazard_wait && !q->destroying && devq__hazard_blocker(b, &hz))
            break; /* still behind an earlier parked batch */
        b->defer.hazard_wait = 0;
        q->deferred = b->next;
        if (!q->deferred)
            q->deferred_tail = NULL;
        b->next = NULL;
        /* A destroyed queue runs nothing that was still deferred. */
        if (q->destroying && !b->fail.error && b->issue.next_op == 0)
            devq__batch_force(b, -ECANCELED, "%s destroyed while batch %llu was deferred",
                              devq__queue_label(q).s, (unsigned long long)b->seq);
        if (issue_or_park(q, b) == ISSUE_DEFERRED) {
            b->next = q->deferred;
            q->deferred = b;
            if (!q->deferred_tail)
                q->deferred_tail = b;
            devq__note_cycle(q);
            break;
        }
        progress = 1;
    }
    return progress;
}

/* Parked uses were issued (or dropped): batches on other queues that
 * waited for them may go now, and theirs may free others in turn. */
static void retry_hazard_waits(struct devq_device *dev)
{
    while (dev->qs->parked_progress) {
        dev->qs->parked_progress = 0;
        for (struct devq_queue *x = dev->qs->queues; x; x = x->next)
            if (x->deferred && x->deferred->defer.hazard_wait)
                drain_one(x);
    }
}

void devq__drain_deferred(struct devq_queue *q)
{
    drain_one(q);
    retry_hazard_waits(q->dev);
    devq__process_pending_frees(q->dev);
}

/* A batch parked behind its queue's deferred head closes a wait cycle
 * only by signalling a value another queue's deferred head waits for.
 * Checked first so that long FIFOs do not pay a cycle search per batch. */
static int signals_awaited(struct devq_device *dev, const struct batch *b)
{
    for (uint32_t i = 0; i < b->rec.nops; i++) {
        if (b->rec.ops[i].kind != OP_SIGNAL)
            continue;
        for (struct devq_queue *x = dev->qs->queues; x; x = x->next)
            if (x != b->q && x->deferred && x->deferred->defer.blocked_on == b->rec.ops[i].u.sig.s &&
                b->rec.ops[i].u.sig.v >= x->deferred->defer.blocked_value)
                return 1;
    }
    return 0;
}

int devq__submit_locked(struct devq_queue *q, struct batch *b)
{
    b->defer.serial = ++q->dev->qs->submit_serial;
    if (q->deferred) {
        /* Order holds: wait behind the deferred head, uses known to
         * batches submitted after this one. */
        int r = devq__hazard_park(b);
        char why[DEVQ_CAUSE_MAX];
        if (r < 0) {
            devq__batch_force(b, r, "%s batch %llu: cannot defer: %s", devq__queue_label(q).s,
                              (unsigned long long)b->seq, devq_errmsg());
            snprintf(why, sizeof why, "%s", devq_errmsg());
        }
        q->deferred_tail->next = b;
        q->deferred_tail = b;
        if (signals_awaited(q->dev, b))
            devq__note_cycle(q);
        /* Forced, it still waits its turn (its failure is the data the
         * batches after it see); the submitter learns of it now. */
        return r < 0 ? devq__err(r, "devq_queue_submit: %s", why) : 0;
    }
    q->check_cycle = 0;
    int r = devq__issue_straight(q, b); /* the common one-shot batch (straight.c) */
    if (r == DEVQ_ISSUE_NOT_STRAIGHT)
        r = issue_or_park(q, b);
    if (r == ISSUE_DEFERRED) {
        q->deferred = q->deferred_tail = b;
        q->check_cycle = 1;
        r = 0;
    }
    /* With device-side waits pending, what this batch signals or was
     * ordered after (a stream held on the device) can close a cycle. */
    if (q->check_cycle || ((q->dev->info.caps & DEVQ_CAP_WAIT_VALUE) && devq__value_wait_any(q->dev)))
        devq__note_cycle(q);
    retry_hazard_waits(q->dev);
    devq__process_pending_frees(q->dev);
    return r;
}

/* The notifier thread: the value a deferred head waited for was reached
 * (or failed, or the wait was cancelled because its queue is going). */
static void resume_cb(void *arg, int status)
{
    struct batch *b = arg;
    struct devq_queue *q = b->q;
    struct devq_device *dev = q->dev;
    pthread_mutex_lock(&dev->lock);
    /* Give the handle back, unless queue destroy took it to cancel. */
    if (b->defer.notify)
        devq_notify_release(b->defer.notify);
    b->defer.notify = NULL;
    if (status < 0) {
        /* The signal's own verdict first: a failure (whatever its errno,
         * -ECANCELED included) or a destroy of the signal; only a wait
         * cancelled with neither is the queue's own destroy. */
        char why[DEVQ_CAUSE_MAX];
        int st = devq__signal_wait_verdict(b->defer.blocked_on, b->defer.blocked_value, why, sizeof why);
        if (st)
            devq__batch_force(b, st, "%s batch %llu on %s:%d waits for %s >= %llu, which failed: %s",
                              devq__queue_label(q).s, (unsigned long long)b->seq, q->dev->info.backend,
                              q->dev->info.ordinal, devq__signal_label(b->defer.blocked_on).s,
                              (unsigned long long)b->defer.blocked_value, why);
        else
            devq__batch_force(b, status, "%s destroyed while batch %llu waited for %s >= %llu",
                              devq__queue_label(q).s, (unsigned long long)b->seq,
                              devq__signal_label(b->defer.blocked_on).s,
                              (unsigned long long)b->defer.blocked_value);
    }
    b->defer.blocked_on = NULL;
    devq__drain_deferred(q);
    pthread_mutex_unlock(&dev->lock);
}

/* A batch the pool hands out: not deferred (batch_life.c calls this; the
 * deferral state is written here only). */
void devq__defer_reset(struct batch *b)
{
    b->defer.no_park = 0;
    b->defer.blocked_on = NULL;
    b->defer.hazard_wait = 0;
    b->defer.notify = NULL;
}

/* The resume notify of a parked batch, now the caller's to give back
 * (queue_life.c's destroy cancels it). */
devq_notify *devq__defer_take_notify(struct batch *b)
{
    devq_notify *h = b->defer.notify;
    b->defer.notify = NULL;
    return h;
}
