/* SPDX-License-Identifier: MIT */
/* The one-shot batch issued in a straight line (device lock held).
 *
 * The common batch -- stream work (fills, copies, transfers, launches)
 * followed by signals, on a queue with nothing deferred, its buffers
 * last used on this queue's stream or not at all -- needs none of
 * devq__issue's resolvers, portions, gates or marks: no wait to resolve,
 * no hazard to park on, no tracker wait to insert.  Here it goes out as
 * devq__issue would send it, in one pass, with the stream ops published
 * back to back so the stream can start on the first while the rest of
 * the bookkeeping runs:
 *  - the unit is begun and every use bound and numbered before the op
 *    that makes it is published (the same rule as devq__issue: a use is
 *    bound before its op goes out; no wait can be inserted, so binding
 *    them all first is the same as binding each just before its op),
 *    except in a batch that can end in tails: its uses are writes local
 *    to the stream, whose binds cannot fail and only its end callback
 *    reads, so its work goes out first and the binds follow;
 *  - the signals are marked as delivered by the end callback and their
 *    producers recorded, and the uses settled as issued, between the
 *    last stream op and the end callback: the stream is busy with the
 *    work then, and the end callback reads these only after it (with
 *    signal tails, the tails follow the work and the producers go on
 *    record after them, into room reserved before the tails went out);
 *  - the end callback goes out last; after it the batch is the
 *    callback's and nothing here touches it.
 * Taken only when devq__issue would do exactly the same (straight_ok):
 * the batch's shape (work, then only signals; not a graph replay, whose
 * ops come planned), nothing deferred on the queue, no parked batch on
 * the device (hazard.h), no device-side value wait pending (the cycle
 * check), tracing and logging off (they mark ops and name binds), and
 * every buffer use local to this stream (tracker.h's bind_local test
 * without recording): the tracker then inserts no wait and counts
 * nothing, whichever path binds.  Anything else takes devq__issue.
 * Failure: a backend that refuses an op fails the batch from that op
 * with the backend's message, as devq__issue does; the end callback
 * then walks it and fails its signals and what it writes (DESIGN §5a).
 * Signal tails: on a backend with signal_tail, a batch that reads no
 * buffer and issued with no error has its signals set on the stream
 * (tail_ok), right after its last op and before its end callback, which
 * then does the rest (the walk's clean test, references, the queue's
 * timeline); a failure on the stream is latched, the tail skips, and
 * the end callback fails the signals with its cause.  A backend that
 * then refuses the end callback (out of memory) ends the batch at once;
 * its tails may still run, so their signals stay held until the stream
 * is past them (tail_orphan.h). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include "batch.h"
#include "batch_life.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "completion.h"
#include "error.h"
#include "hazard.h"
#include "issue.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "straight.h"
#include "tail_orphan.h"
#include "trace.h"
#include "value_wait.h"

/* What the checks learned on the way, so the issue walks the ops and
 * uses no second time: where the signals start, whether a use reads. */
struct straight_plan {
    uint32_t first_sig;
    int reads;
};

/* Work first (at least one op), then only signals: every signal is at
 * the end, and no op waits, aligns or calls back into the host.  The
 * index of the first signal (nops when none), or 0 (not this shape:
 * work comes first, so a first signal is never op 0). */
static uint32_t straight_shape(const struct batch *b)
{
    uint32_t n = b->rec.nops, i = 0;
    if (b->replay || !n || !devq__op_stream_work(b->rec.ops[0].kind))
        return 0;
    while (i < n && devq__op_stream_work(b->rec.ops[i].kind))
        i++;
    uint32_t first_sig = i;
    while (i < n && b->rec.ops[i].kind == OP_SIGNAL)
        i++;
    return i == n ? first_sig : 0;
}

/* Every use binds on stream sid without a wait: its buffer's last write
 * is sid's or none, and for a write so are the reads since.  *reads: a
 * use reads (tail_ok). */
static int uses_local(const struct batch *b, uint32_t sid, int *reads)
{
    int rd = 0;
    for (uint32_t k = 0; k < b->rec.nuses; k++) {
        const struct devq_buffer_track *t = &b->rec.uses[k].buf->track;
        if (t->write.cursor && t->write.stream != sid)
            return 0;
        if (b->rec.uses[k].access & DEVQ_WRITE)
            for (uint32_t i = 0; i < t->nreads; i++)
                if (t->reads[i].cursor && t->reads[i].stream != sid)
                    return 0;
        rd |= b->rec.uses[k].access & DEVQ_READ;
    }
    *reads = rd;
    return 1;
}

static int straight_ok(const struct devq_queue *q, const struct batch *b, struct straight_plan *p)
{
    const struct devq_device *dev = q->dev;
    if (!(p->first_sig = straight_shape(b)) || b->fail.error || q->deferred || devq__hazard_any(dev))
        return 0;
    if ((dev->info.caps & DEVQ_CAP_WAIT_VALUE) && devq__value_wait_any(q->dev))
        return 0;
    if (devq__trace_on() || DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        return 0;
    return uses_local(b, q->stream.id, &p->reads);
}

/* Begin the unit and bind every use in op order, each numbered (its
 * write generation, buffer_fail.c); 0 or the tracker's first error
 * (memory for a first read on this stream).  After an error the writes
 * still go on record, as a skipped op's do in devq__issue: a later
 * reader is ordered after the point where the failure is published. */
static int bind_all(struct devq_queue *q, struct batch *b)
{
    struct devq_device *dev = q->dev;
    uint32_t sid = q->stream.id;
    int err = 0;
    devq__tracker_begin(dev->tracker, sid);
    struct devq_use here = devq__tracker_here(dev->tracker, sid);
    for (uint32_t k = 0; k < b->rec.nuses; k++) {
        struct buffer_use *u = &b->rec.uses[k];
        if (err && !(u->access & DEVQ_WRITE))
            continue;
        u->gen = devq__buffer_bind_gen(u->buf, u->access);
        if (devq__tracker_bind_local(&u->buf->track, &here, (enum devq_access)u->access))
            continue;
        int r = devq__tracker_bind_why(dev->tracker, sid, &u->buf->track, (enum devq_access)u->access, NULL);
        if (r < 0 && !err)
            err = r;
    }
    return err;
}

/* The backend refused op `at` (ordering: the tracker could not bind
 * the batch, at op 0): the batch fails from there with the message
 * devq__issue gives; the ops after it are not sent.  Out of line: its
 * message buffer would give the straight line a large frame. */
static __attribute__((noinline, cold)) void refused(struct batch *b, uint32_t at, int r, int ordering)
{
    struct devq_device *dev = b->q->dev;
    if (r == -ENODEV)
        devq__device_set_lost(dev, devq_errmsg());
    char msg[256];
    snprintf(msg, sizeof msg, "%s", devq__errmsg_peek());
    b->issue.next_op = at; /* the forced failure starts there */
    if (ordering)
        devq__batch_force(b, r, "%s batch %llu: ordering failed: %s", devq__queue_label(b->q).s,
                          (unsigned long long)b->seq, msg);
    else
        devq__batch_force(b, r, "%s batch %llu on %s:%d: %s", devq__queue_label(b->q).s,
                          (unsigned long long)b->seq, dev->info.backend, dev->info.ordinal, msg);
}

/* The signals at the end, their producers recorded on this unit: 0, or
 * the tracker's error at signal *at (the rest are not recorded). */
static int producers(struct devq_device *dev, struct batch *b, uint32_t first_sig, uint32_t sid, uint32_t *at)
{
    for (uint32_t i = first_sig; i < b->rec.nops; i++) {
        struct op *o = &b->rec.ops[i];
        int r = devq__tracker_producer_add(dev->tracker, o->u.sig.s, o->u.sig.v, sid);
        if (r < 0) {
            *at = i;
            return r;
        }
    }
    return 0;
}

/* Every use settled as issued (frees waiting for it may run after the
 * lock). */
static void settle_uses(struct batch *b)
{
    for (uint32_t k = 0; k < b->rec.nuses; k++)
        if (b->rec.uses[k].counted) /* the batch's last use of the buffer (record.c) */
            devq__buffer_issued(b->rec.uses[k].buf);
}

/* The signals that end b can be set on the stream (the backend's
 * signal_tail) when nothing but the stream can fail b once its ops are
 * out: issued with no error, and no use reads a buffer (a read could
 * fail by its last writer's failure, which only the end callback's walk
 * finds).  What the stream itself fails it latches, and the tail then
 * leaves the signal to the end callback. */
static int tail_ok(const struct devq_device *dev, const struct batch *b, const struct straight_plan *p)
{
    return dev->ops->signal_tail && !b->fail.error && !p->reads;
}

/* Queue a tail for each signal from first_sig on (their producers are
 * recorded right after, into room reserved before the work went out:
 * under the device lock nobody sees the order); the number queued.  A
 * signal whose tail the backend refuses stays the end callback's. */
static uint32_t queue_tails(struct devq_device *dev, struct devq_stream *st, struct batch *b,
                            uint32_t first_sig)
{
    uint32_t n = 0;
    for (uint32_t i = first_sig; i < b->rec.nops; i++) {
        struct op *o = &b->rec.ops[i];
        if (dev->ops->signal_tail(st->pl, devq__tail_set, o->u.sig.s, o->u.sig.v) < 0)
            break; /* out of memory: this and the rest at the end callback */
        o->at_end = OP_AT_END_TAIL;
        n++;
    }
    return n;
}

/* The end callback could not be queued after tails were: a tail may
 * still run, so each of its signals keeps one reference the batch's end
 * does not drop until a later end callback or the queue's destroy
 * (tail_orphan.h), and the batch fails as it would have. */
static __attribute__((noinline, cold)) void tails_orphaned(struct batch *b, uint32_t first_sig)
{
    for (uint32_t i = first_sig; i < b->rec.nops; i++)
        if (b->rec.ops[i].at_end == OP_AT_END_TAIL)
            devq__tail_orphan_add(b->q, b->rec.ops[i].u.sig.s, b->seq);
}

/* The stream ops, back to back; 0 or the first refusal (the batch then
 * fails from that op, and the rest are not sent). */
static int issue_work(struct devq_device *dev, struct batch *b, uint32_t first_sig)
{
    int err = 0;
    for (uint32_t i = 0; i < first_sig; i++) {
        int r = b->fail.error ? 0 : devq__issue_one(dev, b, &b->rec.ops[i]);
        if (r < 0) {
            err = r;
            refused(b, i, r, 0);
        }
    }
    return err;
}

int devq__issue_straight(struct devq_queue *q, struct batch *b)
{
    struct straight_plan plan;
    if (!straight_ok(q, b, &plan))
        return DEVQ_ISSUE_NOT_STRAIGHT;
    struct devq_device *dev = q->dev;
    struct devq_stream *st = &q->stream;
    uint32_t first_sig = plan.first_sig, at = 0;
    /* A batch that can end in tails writes and reads no buffer but its
     * own stream's (straight_ok): binding its uses inserts no wait and
     * cannot fail (tracker.h's bind_local for writes), and nothing reads
     * what it records but this batch's end callback, queued last.  So
     * its work goes out first and the binds follow: the stream starts
     * while this thread numbers the writes.  Any other batch binds
     * first, as devq__issue does (a bind may fail it before any op). */
    int early = tail_ok(dev, b, &plan), sync_err = 0;
    if (!early && (sync_err = bind_all(q, b)) < 0)
        refused(b, 0, sync_err, 1);
    /* Marked before the work (they are read only by the end callback; a
     * refusal while issuing leaves them marked, and the end callback
     * fails them). */
    for (uint32_t i = first_sig; i < b->rec.nops; i++)
        b->rec.ops[i].at_end = 1;
    int r = issue_work(dev, b, first_sig), prod_err = 0;
    if (early && (sync_err = bind_all(q, b)) < 0)
        refused(b, 0, sync_err, 1); /* not reached: see above */
    /* With tails, the tails follow the work and the producers go on
     * record after them.  Their room is reserved first, so recording
     * them then cannot fail (a tail already out could set a signal the
     * batch then fails); without the room, the end callback's path.  The
     * order is unseen (the device lock is held; the batch holds the
     * signals until its end callback, queued after). */
    int tail =
        early && !b->fail.error && devq__tracker_producer_reserve(dev->tracker, b->rec.nops - first_sig) == 0;
    uint32_t tails = tail ? queue_tails(dev, st, b, first_sig) : 0;
    if (r < 0 && !sync_err)
        sync_err = r;
    if (!b->fail.error)
        prod_err = producers(dev, b, first_sig, st->id, &at); /* with tails: into the room reserved */
    if (prod_err) {
        refused(b, at, prod_err, 0);
        if (!sync_err)
            sync_err = prod_err;
    }
    settle_uses(b);
    b->issue.next_op = b->rec.nops;
    q->issued_seq = b->seq;
    /* After this call the batch belongs to the end callback. */
    if ((r = dev->ops->host_fn(st->pl, devq__end_cb, b)) < 0) {
        if (!sync_err)
            sync_err = r;
        if (tails)
            tails_orphaned(b, first_sig);
        devq__complete_inline(b, r);
    }
    dev->qs->straight++; /* after the hand-off: off the stream's path */
    dev->qs->tails += tails;
    if (sync_err == -ENODEV)
        devq__device_set_lost(dev, devq__errmsg_peek());
    return sync_err;
}
