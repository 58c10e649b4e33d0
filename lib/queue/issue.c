/* SPDX-License-Identifier: MIT */
/* Issue: what of a submitted batch can go to the backend stream now.
 * Each wait is resolved by the resolver of its kind; the ops before the
 * first one that cannot be resolved on the device go out, each bound in
 * the tracker right before it (so an inserted wait holds only that op),
 * and the verdict says whether the batch is done (its end callback
 * queued) or must park (defer.c does that).  Device lock held. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "batch_life.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "completion.h"
#include "error.h"
#include "grow.h"
#include "hazard.h"
#include "issue.h"
#include "native_run.h"
#include "kernel.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "timestamp.h"
#include "trace.h"
#include "value_wait.h"

static const char *dev_name(const struct devq_device *dev, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%d", dev->info.backend, dev->info.ordinal);
    return buf;
}

static int gate_push(struct batch *b, devq_signal *s, uint64_t v)
{
    if (b->issue.ngate == b->issue.capgate && DEVQ_GROW(b->issue.gate, b->issue.capgate, 4) < 0)
        return devq__err(-ENOMEM, "out of memory");
    b->issue.gate[b->issue.ngate++] = (struct gate_wait){ s, v };
    return 0;
}

/* With DEVQ_LOG on: the bind names the buffer in the waits it inserts.
 * Out of line, so the common bind carries no label on its frame. */
static __attribute__((noinline, cold)) int bind_logged(struct devq_device *dev, uint32_t sid, devq_buffer *b,
                                                       enum devq_access acc, int level)
{
    struct devq_label why = devq__buffer_label(b);
    int r = devq__tracker_bind_why(dev->tracker, sid, &b->track, acc, why.s);
    if (r >= 0 && level >= DEVQ_LOG_FULL)
        devq__log(DEVQ_LOG_FULL, "%s:%d: stream %u binds %s %s: %d wait(s)", dev->info.backend,
                  dev->info.ordinal, sid, why.s,
                  acc == DEVQ_READ    ? "read"
                  : acc == DEVQ_WRITE ? "write"
                                      : "read-write",
                  r);
    return r;
}

static inline int bind(struct devq_device *dev, uint32_t sid, devq_buffer *b, enum devq_access acc)
{
    int level = devq__log_level();
    if (__builtin_expect(level >= DEVQ_LOG_BASIC, 0))
        return bind_logged(dev, sid, b, acc, level);
    return devq__tracker_bind_why(dev->tracker, sid, &b->track, acc, NULL);
}

/* Bind every buffer use of op o, in order; stops at the first error.
 * `here` is the unit being issued, `level` the log level read once per
 * issue: a use with nothing to order across streams is recorded inline
 * (tracker.h), the rest, and every use when logging, through bind. */
static int bind_op(struct batch *b, const struct op *o, const struct devq_use *here, int level)
{
    struct devq_device *dev = b->q->dev;
    uint32_t sid = b->q->stream.id;
    struct buffer_use *u = o->nuses ? &b->rec.uses[o->first_use] : NULL;
    for (uint32_t k = 0; k < o->nuses; k++) { /* numbered in the order they run (buffer.h) */
        u[k].gen = devq__buffer_bind_gen(u[k].buf, u[k].access);
        u[k].run_buf = 0;
    }
    for (uint32_t k = 0; k < o->nuses; k++) {
        if (__builtin_expect(level < DEVQ_LOG_BASIC, 1) &&
            devq__tracker_bind_local(&u[k].buf->track, here, u[k].access))
            continue;
        int r = level >= DEVQ_LOG_BASIC
                    ? bind_logged(dev, sid, u[k].buf, u[k].access, level)
                    : devq__tracker_bind_why(dev->tracker, sid, &u[k].buf->track, u[k].access, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Stream work is never run for a skipped op by a callback: its layer
 * learns here that the op will not run (a channel is then out of step). */
static void work_skipped(struct batch *b, const struct op *o)
{
    if (o->kind == OP_WORK && o->u.work.issue) {
        const struct op *head;
        unsigned group = devq__work_group(b, o, &head) | DEVQ_WORK_SKIPPED;
        o->u.work.run(b->rec.bytes + o->u.work.off, b->fail.error, group, head);
    }
}

/* A skipped op still "writes" its destinations: they become failed when
 * the batch ends (batch_walk.c), and later users must be ordered after
 * that point, exactly as after a write that ran. */
static void bind_skipped(struct batch *b, const struct op *o, int *began)
{
    if (!*began) {
        devq__tracker_begin(b->q->dev->tracker, b->q->stream.id);
        *began = 1;
    }
    struct buffer_use *u = o->nuses ? &b->rec.uses[o->first_use] : NULL;
    for (uint32_t k = 0; k < o->nuses; k++)
        if (u[k].access & DEVQ_WRITE) { /* best effort: the batch failed already */
            u[k].gen = devq__buffer_bind_gen(u[k].buf, DEVQ_WRITE);
            u[k].run_buf = 0;
            bind(b->q->dev, b->q->stream.id, u[k].buf, DEVQ_WRITE);
        }
    work_skipped(b, o);
}

/* The arguments were built at record time; only value arguments need
 * their address in b->bytes, fixed now on a copy. */
static int launch(struct devq_device *dev, struct devq_stream *st, struct batch *b, const struct op *o)
{
    uint32_t n = o->u.exec.nargs;
    const struct devq_pl_arg *args = n ? &b->rec.args[o->u.exec.first_arg] : NULL;
    if (!o->u.exec.values || !n) /* values <= n: the test tells the compiler pa is filled */
        return dev->ops->launch(st->pl, o->u.exec.k->pl, &o->u.exec.l, args, n);
    struct devq_pl_arg stack_args[16], *pa = stack_args;
    if (n > 16 && !(pa = malloc(n * sizeof *pa)))
        return devq__err(-ENOMEM, "devq_queue_submit: out of memory for %u kernel arguments", n);
    for (uint32_t a = 0; a < n; a++) {
        pa[a] = args[a];
        if (!pa[a].is_buffer)
            pa[a].value = b->rec.bytes + (uintptr_t)pa[a].value;
    }
    int r = dev->ops->launch(st->pl, o->u.exec.k->pl, &o->u.exec.l, pa, n);
    if (pa != stack_args)
        free(pa);
    return r;
}

/* Graph replays (b->replay) on a backend with launch_list: consecutive
 * launches go out as one stream op, built in b->lists.list, which the
 * batch keeps until it ends.  The batch's record is its own copy, so a
 * value argument is pointed at its bytes in place. */
struct pending_list {
    int on;           /* lists are used for this pass */
    uint32_t from, n; /* the launches pending */
    int settled;      /* bind_run settled the run's unissued counts */
};

static int list_ready(struct batch *b)
{
    if (b->issue.next_op == 0) { /* the batch's first pass: none went out yet */
        b->lists.listed = 0;
        b->lists.failed = NULL;
    }
    if (b->lists.caplist >= b->rec.nops)
        return 1;
    struct devq_pl_launch_entry *e = realloc(b->lists.list, b->rec.nops * sizeof *e);
    if (!e)
        return 0; /* one launch at a time, then */
    b->lists.list = e;
    b->lists.caplist = b->rec.nops;
    return 1;
}

static int list_joins(const struct op *o)
{
    return devq__op_list_joins(o);
}

static void list_add(struct batch *b, struct pending_list *pl, const struct op *o, uint32_t i)
{
    struct devq_pl_arg *args = &b->rec.args[o->u.exec.first_arg];
    for (uint32_t a = 0; o->u.exec.values && a < o->u.exec.nargs; a++)
        if (!args[a].is_buffer)
            args[a].value = b->rec.bytes + (uintptr_t)args[a].value;
    b->lists.list[i] = (struct devq_pl_launch_entry){ o->u.exec.k->pl, args, o->u.exec.nargs, o->u.exec.l };
    if (!pl->n)
        pl->from = i;
    pl->n++;
}

/* Send the pending launches as one op; 0 or the backend's error. */
static int list_flush(struct devq_device *dev, struct devq_stream *st, struct batch *b,
                      struct pending_list *pl)
{
    if (!pl->n)
        return 0;
    uint32_t n = pl->n;
    pl->n = 0;
    return dev->ops->launch_list(st->pl, &b->lists.list[pl->from], n, &b->lists.failed);
}

/* Queue a host callback that points into b, holding a reference for it. */
static int enqueue_cb(const struct devq_backend_ops *ops, struct devq_stream *st, devq_pl_host_fn fn,
                      void *arg, struct batch *b)
{
    atomic_fetch_add_explicit(&b->cb_refs, 1, memory_order_relaxed);
    int r = ops->host_fn(st->pl, fn, arg);
    if (r < 0)
        atomic_fetch_sub_explicit(&b->cb_refs, 1, memory_order_relaxed);
    return r;
}

/* OP_WORK on the device stream (batch.h): the upper layer enqueues it;
 * the group's last member gets the completion callback, after it. */
static int issue_stream_work(struct devq_stream *st, struct batch *b, struct op *o)
{
    const struct op *head;
    unsigned group = devq__work_group(b, o, &head);
    int r = o->u.work.issue(b->rec.bytes + o->u.work.off, st->pl, group, head);
    if (r < 0 || (group & DEVQ_WORK_MORE))
        return r;
    if ((r = enqueue_cb(b->q->dev->ops, st, devq__work_cb, o, b)) < 0) {
        /* The group is out but its completion cannot be queued (the
         * device failed under it, say): the upper layer's verdict now,
         * with its message, is the cause the batch fails with. */
        int rr = o->u.work.run(b->rec.bytes + o->u.work.off, r, group, head);
        return rr < 0 ? rr : r;
    }
    return 0;
}

/* Op o of b failed to go out with r after stream work w of the same
 * batch went out: when the work knows why (its engine failed and took
 * the device with it), that is the batch's cause, and the enqueue
 * failure follows it; else the enqueue failure stands. */
static void force_issue_failure(struct batch *b, const struct op *w, int r, const char *where)
{
    char issue_msg[256];
    snprintf(issue_msg, sizeof issue_msg, "%s", devq__errmsg_peek());
    if (w) {
        const struct op *head;
        unsigned group = devq__work_group(b, w, &head) | DEVQ_WORK_PROBE;
        int pr = w->u.work.run(b->rec.bytes + w->u.work.off, r, group, head);
        if (pr < 0) {
            devq__batch_force(b, pr, "%s batch %llu on %s: %s; then: %s", devq__queue_label(b->q).s,
                              (unsigned long long)b->seq, where, devq__errmsg_peek(), issue_msg);
            return;
        }
    }
    devq__batch_force(b, r, "%s batch %llu on %s: %s", devq__queue_label(b->q).s, (unsigned long long)b->seq,
                      where, issue_msg);
}

static int issue_op(struct devq_device *dev, struct devq_stream *st, struct batch *b, struct op *o)
{
    const struct devq_backend_ops *ops = dev->ops;
    switch (o->kind) {
    case OP_SIGNAL: {
        int r = devq__tracker_producer_add(dev->tracker, o->u.sig.s, o->u.sig.v, st->id);
        if (r < 0 || o->at_end)
            return r;
        return enqueue_cb(ops, st, devq__signal_cb, o, b);
    }
    case OP_EXEC:
        return launch(dev, st, b, o);
    case OP_COPY:
        return ops->copy(st->pl, (char *)o->u.copy.dst->dptr + o->u.copy.dst_off,
                         (const char *)o->u.copy.src->dptr + o->u.copy.src_off, o->u.copy.n, DEVQ_COPY_D2D);
    case OP_FILL:
        return ops->fill(st->pl, (char *)o->u.fill.dst->dptr + o->u.fill.off, o->u.fill.byte, o->u.fill.n);
    case OP_WRITE:
        return ops->copy(st->pl, (char *)o->u.xfer.buf->dptr + o->u.xfer.off, o->u.xfer.host, o->u.xfer.n,
                         DEVQ_COPY_H2D);
    case OP_READ:
        return ops->copy(st->pl, o->u.xfer.host, (const char *)o->u.xfer.buf->dptr + o->u.xfer.off,
                         o->u.xfer.n, DEVQ_COPY_D2H);
    case OP_HOST_FN:
        return enqueue_cb(ops, st, devq__user_fn_cb, o, b);
    case OP_WORK:
        return o->u.work.issue ? issue_stream_work(st, b, o) : enqueue_cb(ops, st, devq__work_cb, o, b);
    case OP_TIMESTAMP: {
        int r = ops->event_record(o->u.ts->ev, st->pl);
        if (r == 0)
            atomic_store(&o->u.ts->recorded, 1);
        return r;
    }
    default:
        return 0; /* OP_WAIT was resolved before; OP_BARRIER marks a point */
    }
}

/* Signals after the last op that does work are delivered by the end
 * callback (the common case: one host callback per batch). */
static void mark_end_signals(struct batch_record *rec)
{
    int work_after = 0; /* one pass from the end: a signal is at the end until work follows it */
    for (uint32_t i = rec->nops; i-- > 0;) {
        uint8_t k = rec->ops[i].kind;
        if (k == OP_SIGNAL)
            rec->ops[i].at_end = !work_after;
        else if (k != OP_WAIT && k != OP_BARRIER && k != OP_ALIGN && k != OP_TIMESTAMP)
            work_after = 1;
    }
}

void devq__issue_mark_end_signals(struct batch_record *rec)
{
    mark_end_signals(rec); /* devq__issue's own call is inlined: it is on every batch's path */
}

static struct gate_rec *gate_snapshot(struct batch *b)
{
    struct gate_rec *g = malloc(sizeof *g + b->issue.ngate * sizeof *g->sig + b->vw.nslots * sizeof *g->slot);
    if (!g)
        return NULL;
    g->b = b;
    g->from = b->issue.next_op;
    g->nsig = b->issue.ngate;
    g->nslot = b->vw.nslots;
    g->sig = (struct gate_wait *)(g + 1);
    g->slot = (struct devq_value_slot **)(g->sig + g->nsig);
    if (g->nsig)
        memcpy(g->sig, b->issue.gate, g->nsig * sizeof *g->sig);
    if (g->nslot) /* b->slots is NULL until a device-side wait */
        memcpy(g->slot, b->vw.slots, g->nslot * sizeof *g->slot);
    return g;
}

static int is_work(uint8_t k)
{
    return k == OP_EXEC || k == OP_COPY || k == OP_FILL || k == OP_WRITE || k == OP_READ || k == OP_HOST_FN ||
           k == OP_WORK;
}

static int trace_prepare(struct batch *b)
{
    if (b->issue.capmarks < b->rec.nops + 1) {
        uint64_t *m = realloc(b->issue.marks, (b->rec.nops + 1) * sizeof *m);
        if (!m)
            return -ENOMEM;
        b->issue.marks = m;
        b->issue.capmarks = b->rec.nops + 1;
    }
    if (b->issue.next_op == 0 || !b->issue.traced)
        memset(b->issue.marks, 0, (b->rec.nops + 1) * sizeof *b->issue.marks);
    return 0;
}

/* The portion of b issued up to `upto` is all that goes out for now:
 * publish its buffer effects at this point of the stream (batch_walk.c).
 * Without the callback the end callback applies them, later. */
static void end_portion(struct devq_device *dev, struct devq_stream *st, struct batch *b, uint32_t upto)
{
    struct portion *p = malloc(sizeof *p);
    if (!p)
        return;
    /* A forced error is handed over here, set before the callback is
     * queued: the callback must not read it from b (a later portion may
     * be forcing it on another thread). */
    *p = (struct portion){ .b = b, .upto = upto, .forced = b->fail.error, .fail_from = b->fail.from };
    if (enqueue_cb(dev->ops, st, devq__portion_cb, p, b) < 0)
        free(p);
}

/* Ops in [from, to) that must run before a wait at `to` is placed. */
static int work_between(const struct batch *b, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        if (b->rec.ops[i].kind != OP_WAIT && b->rec.ops[i].kind != OP_ALIGN)
            return 1;
    return 0;
}

/* What a resolver tells the portion loop: go on to the next op, stop
 * the portion here (to park the batch, or to split it before a
 * device-side wait), or stop because the batch was forced to fail. */
enum resolved { GO_ON, STOP_PARK, STOP_SPLIT, STOP_FORCED };

static void begin_unit(struct devq_queue *q, int *began)
{
    if (!*began) {
        devq__tracker_begin(q->dev->tracker, q->stream.id);
        *began = 1;
    }
}

/* Any op: a buffer hazard against a batch submitted earlier on another
 * queue and still parked parks this one behind it (hazard.h). */
static enum resolved resolve_hazard(struct devq_queue *q, struct batch *b, const struct op *o)
{
    struct devq_hazard hz;
    if (!devq__hazard_find(b, o, &hz))
        return GO_ON;
    if (!q->destroying)
        return STOP_PARK;
    devq__batch_force(b, -ECANCELED, "%s destroyed while batch %llu waited for %s batch %llu (%s)",
                      devq__queue_label(q).s, (unsigned long long)b->seq, devq__queue_label(hz.owner->q).s,
                      (unsigned long long)hz.owner->seq, devq__buffer_label(hz.buf).s);
    return STOP_FORCED;
}

/* OP_ALIGN (devq_barrier): order after another stream's point. */
static enum resolved resolve_align(struct devq_queue *q, struct batch *b, const struct op *o, int *began)
{
    begin_unit(q, began);
    int r = devq__tracker_require(q->dev->tracker, q->stream.id, &o->u.align);
    if (r >= 0)
        return GO_ON;
    devq__batch_force(b, r, "%s batch %llu: barrier: %s", devq__queue_label(q).s, (unsigned long long)b->seq,
                      devq_errmsg());
    return STOP_FORCED;
}

/* OP_WAIT: already failed or reached; produced by known work on this
 * device (a tracker alignment plus a gate); a device-side wait where the
 * backend has one; else the batch parks and the host bridges the wait. */
static enum resolved resolve_signal_wait(struct devq_queue *q, struct batch *b, uint32_t i, int *began)
{
    struct devq_device *dev = q->dev;
    devq_signal *s = b->rec.ops[i].u.sig.s;
    uint64_t v = b->rec.ops[i].u.sig.v;
    char why[DEVQ_CAUSE_MAX], dn[48];
    int st = devq__signal_wait_verdict(s, v, why, sizeof why);
    if (st) {
        devq__batch_force(b, st, "%s batch %llu on %s waits for %s >= %llu, which failed: %s",
                          devq__queue_label(q).s, (unsigned long long)b->seq, dev_name(dev, dn, sizeof dn),
                          devq__signal_label(s).s, (unsigned long long)v, why);
        return STOP_FORCED;
    }
    if (devq_signal_value(s) >= v) {
        atomic_fetch_add(&dev->stats.signal_waits_dropped, 1);
        return GO_ON;
    }
    struct devq_use u;
    if (devq__tracker_producer_find(dev->tracker, s, v, &u)) {
        begin_unit(q, began);
        char for_what[DEVQ_LABEL_MAX + 24];
        if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
            snprintf(for_what, sizeof for_what, "%s >= %llu", devq__signal_label(s).s, (unsigned long long)v);
        int r = devq__tracker_require_why(dev->tracker, q->stream.id, &u,
                                          DEVQ_LOG_ON(DEVQ_LOG_BASIC) ? for_what : NULL);
        if (r < 0 || (r = gate_push(b, s, v)) < 0) {
            devq__batch_force(b, r, "%s batch %llu: ordering after %s >= %llu failed: %s",
                              devq__queue_label(q).s, (unsigned long long)b->seq, devq__signal_label(s).s,
                              (unsigned long long)v, devq_errmsg());
            return STOP_FORCED;
        }
        atomic_fetch_add(&dev->stats.signal_waits_aligned, 1);
        /* Ordering behind a stream that waits on the device can close a cycle. */
        if (devq__value_wait_any(dev))
            q->check_cycle = 1;
        return GO_ON;
    }
    if (q->destroying) {
        devq__batch_force(b, -ECANCELED, "%s destroyed while batch %llu waited for %s >= %llu",
                          devq__queue_label(q).s, (unsigned long long)b->seq, devq__signal_label(s).s,
                          (unsigned long long)v);
        return STOP_FORCED;
    }
    if (!(dev->info.caps & DEVQ_CAP_WAIT_VALUE))
        return STOP_PARK;
    /* A device-side wait sits where the wait was recorded: the host may
     * set the value only after seeing earlier ops. */
    if (work_between(b, b->issue.next_op, i))
        return STOP_SPLIT;
    begin_unit(q, began); /* the wait belongs to this unit */
    int nr = devq__value_wait_issue(q, b, s, v);
    if (nr > 0 && gate_push(b, s, v) == 0) {
        atomic_fetch_add(&dev->stats.signal_waits_native, 1);
        q->check_cycle = 1;
        return GO_ON;
    }
    if (nr == 0)
        return STOP_PARK; /* no slot: bridge through the host after all */
    devq__batch_force(b, nr < 0 ? nr : -ENOMEM, "%s batch %llu: device wait for %s >= %llu failed: %s",
                      devq__queue_label(q).s, (unsigned long long)b->seq, devq__signal_label(s).s,
                      (unsigned long long)v, devq_errmsg());
    return STOP_FORCED;
}

/* Resolve the waits of the portion starting at next_op, one resolver per
 * kind.  Returns the end of the portion that can be issued now; *park_at
 * is set to the op the batch must park at (== the returned end), and
 * *split_at to a device-side wait that must come after the ops before
 * it (== the returned end), or UINT32_MAX. */
static uint32_t resolve_waits(struct devq_queue *q, struct batch *b, int *began, uint32_t *park_at,
                              uint32_t *split_at)
{
    *park_at = *split_at = UINT32_MAX;
    /* A replay without waits or barriers resolves nothing unless hazards
     * exist; none can appear while this loop runs (device lock). */
    if (b->replay && b->plan.nowaits && !devq__hazard_any(q->dev))
        return b->rec.nops;
    for (uint32_t i = b->issue.next_op; i < b->rec.nops; i++) {
        const struct op *o = &b->rec.ops[i];
        /* Hazards exist only while some batch is parked: one load. */
        int hazards = devq__hazard_any(q->dev);
        if (b->fail.error) {
            /* A skipped op still writes its destinations (they become
             * failed): like a write that ran, it waits for the uses of
             * batches submitted before it that are still parked, or it
             * would fail a buffer under a reader that comes first. */
            if (hazards && !b->defer.no_park && resolve_hazard(q, b, o) == STOP_PARK) {
                *park_at = i;
                return i;
            }
            continue;
        }
        enum resolved r = hazards ? resolve_hazard(q, b, o) : GO_ON;
        if (r == GO_ON && o->kind == OP_ALIGN)
            r = resolve_align(q, b, o, began);
        else if (r == GO_ON && o->kind == OP_WAIT)
            r = resolve_signal_wait(q, b, i, began);
        if (r == STOP_PARK) {
            *park_at = i;
            return i;
        }
        if (r == STOP_SPLIT) {
            *split_at = i;
            return i;
        }
        /* STOP_FORCED: the rest is skipped, hazards still checked. */
    }
    return b->rec.nops;
}

/* The batch ends now although a launch list it sent may not have run
 * (its end callback could not be queued): the entries, the arguments
 * and the value bytes they point at are left to the stream -- a small
 * leak on a path that is out of memory already -- and the batch gets
 * new ones when the pool hands it out again. */
static void list_abandon(struct batch *b)
{
    b->lists.list = NULL;
    b->lists.caplist = 0;
    b->rec.args = NULL;
    b->rec.nargs = b->rec.capargs = 0;
    b->rec.bytes = NULL;
    b->rec.nbytes = b->rec.capbytes = 0;
}

/* The pending launch list goes out; when the backend refuses it, the
 * batch fails from the list's first launch.  Returns the error or 0. */
static int list_out(struct devq_device *dev, struct devq_stream *st, struct batch *b, struct pending_list *pl,
                    int *sync_err)
{
    uint32_t from = pl->from, at = b->issue.next_op;
    int r = list_flush(dev, st, b, pl);
    if (r == 0)
        b->lists.listed = 1;
    if (r < 0) {
        if (r == -ENODEV)
            devq__device_set_lost(dev, devq_errmsg());
        *sync_err = r;
        char dn[48];
        b->issue.next_op = from; /* the forced failure starts there */
        force_issue_failure(b, NULL, r, dev_name(dev, dn, sizeof dn));
        b->issue.next_op = at;
    }
    return r;
}

/* One buffer's use bound in the unit `here` (as bind_op binds each). */
static int bind_use(struct devq_device *dev, uint32_t sid, devq_buffer *buf, unsigned acc,
                    const struct devq_use *here, int level)
{
    if (level < DEVQ_LOG_BASIC && devq__tracker_bind_local(&buf->track, here, (enum devq_access)acc))
        return 0;
    return level >= DEVQ_LOG_BASIC
               ? bind_logged(dev, sid, buf, (enum devq_access)acc, level)
               : devq__tracker_bind_why(dev->tracker, sid, &buf->track, (enum devq_access)acc, NULL);
}

/* The launches [from, to) of a replay go out as one stream op, so they
 * are bound as one: every use numbered in the order it runs (its write
 * generation, buffer_fail.c), then each buffer once with every access the
 * run makes of it -- the run's edges to other streams; inside the run the
 * stream's order holds.  A run over more than 8 buffers binds the rest
 * use by use. */
static int bind_run(struct batch *b, uint32_t from, uint32_t to, const struct devq_use *here, int level,
                    int *settled)
{
    struct devq_device *dev = b->q->dev;
    uint32_t sid = b->q->stream.id, n = 0, ncounted = 0;
    struct {
        devq_buffer *buf;
        unsigned acc;
    } seen[8];
    devq_buffer *counted[8];
    for (uint32_t i = from; i < to; i++) {
        const struct op *o = &b->rec.ops[i];
        struct buffer_use *u = o->nuses ? &b->rec.uses[o->first_use] : NULL;
        for (uint32_t k = 0; k < o->nuses; k++) {
            u[k].gen = devq__buffer_bind_gen(u[k].buf, u[k].access);
            u[k].run_buf = 0;
            if (u[k].counted && ncounted++ < 8)
                counted[ncounted - 1] = u[k].buf;
            uint32_t at = 0;
            while (at < n && seen[at].buf != u[k].buf)
                at++;
            if (at == 8) {
                int r = bind_use(dev, sid, u[k].buf, u[k].access, here, level);
                if (r < 0)
                    return r;
                continue;
            }
            if (at == n)
                seen[n++].buf = u[k].buf, seen[at].acc = 0;
            seen[at].acc |= u[k].access;
        }
    }
    for (uint32_t at = 0; at < n; at++) {
        int r = bind_use(dev, sid, seen[at].buf, seen[at].acc, here, level);
        if (r < 0)
            return r;
    }
    /* The run's last uses of its buffers go out with it (the lock is
     * held until the list is queued, and frees run after the issue), so
     * their unissued counts are settled here, once, instead of op by op
     * (devq__op_issued); not with hazards to settle too, or more than 8. */
    *settled = !b->parked_uses && ncounted <= 8;
    for (uint32_t i = 0; *settled && i < ncounted; i++)
        devq__buffer_issued(counted[i]);
    return 0;
}

/* The run of the plan starting at op i, or NULL. */
static struct run_plan *run_at(struct batch *b, uint32_t i)
{
    struct batch_plan *p = &b->plan;
    while (p->next < p->nrun && p->run[p->next].from < i)
        p->next++;
    return p->next < p->nrun && p->run[p->next].from == i ? &p->run[p->next] : NULL;
}

/* The planned run starting at op i, when the portion holds all of it
 * and its buffers are planned; else NULL (bind_run works it out). */
static const struct run_plan *planned_run(struct batch *b, uint32_t i, uint32_t stop)
{
    const struct run_plan *run = run_at(b, i);
    if (!run || run->end > stop || run->nbuf == DEVQ_RUN_UNPLANNED)
        return NULL;
    return run;
}

/* bind_run for a planned run: the same generations and binds, the
 * distinct buffers and their accesses read from the plan.  A lazy run's
 * uses carry offsets (graph_plan.c): each buffer's base is taken and its
 * generation advanced past the run's writes once, not use by use. */
static int bind_planned(struct batch *b, const struct run_plan *run, const struct devq_use *here, int level,
                        int *settled)
{
    struct devq_device *dev = b->q->dev;
    uint32_t sid = b->q->stream.id;
    for (uint32_t i = run->from; !run->lazy && i < run->end; i++) { /* numbered in the order they run */
        const struct op *o = &b->rec.ops[i];
        for (uint32_t k = 0; k < o->nuses; k++) { /* by index: no uses may mean no array (NULL + 0) */
            struct buffer_use *u = &b->rec.uses[o->first_use + k];
            u->gen = devq__buffer_bind_gen(u->buf, u->access);
            u->run_buf = 0;
        }
    }
    *settled = !b->parked_uses;
    if (!run->nbuf) /* launches of values only: the plan may have no buffer array */
        return 0;
    struct run_buf *rb = &b->plan.buf[run->first_buf];
    for (uint32_t k = 0; run->lazy && k < run->nbuf; k++) {
        rb[k].base = rb[k].buf->wgen;
        rb[k].buf->wgen += rb[k].nw;
    }
    for (uint32_t k = 0; k < run->nbuf; k++) {
        int r = bind_use(dev, sid, rb[k].buf, rb[k].acc, here, level);
        if (r < 0)
            return r;
    }
    *settled = !b->parked_uses;
    for (uint32_t k = 0; *settled && k < run->nbuf; k++)
        if (rb[k].counted)
            devq__buffer_issued(rb[k].buf);
    return 0;
}

/* The run of a replay's launches starting at op i goes out as one
 * list: bound as one (from the plan when it has the run), every launch
 * added and counted as issued, the list sent.  0 with *last set to the
 * run's last op, or the binding's error (the batch is then forced to
 * fail from op i, which the caller issues as skipped). */
static int list_take(struct devq_stream *st, struct batch *b, struct pending_list *pl, uint32_t i,
                     uint32_t stop, const struct devq_use *here, int level, int *sync_err, uint32_t *last)
{
    const struct run_plan *run = planned_run(b, i, stop);
    uint32_t end = i + 1;
    while (!run && end < stop && list_joins(&b->rec.ops[end]))
        end++;
    end = run ? run->end : end;
    int r = run ? bind_planned(b, run, here, level, &pl->settled)
                : bind_run(b, i, end, here, level, &pl->settled);
    if (r < 0) {
        devq__batch_force(b, r, "%s batch %llu: ordering failed: %s", devq__queue_label(b->q).s,
                          (unsigned long long)b->seq, devq_errmsg());
        return r;
    }
    for (uint32_t k = i; k < end; k++)
        list_add(b, pl, &b->rec.ops[k], k);
    for (uint32_t k = i; !pl->settled && k < end; k++)
        devq__op_issued(b, &b->rec.ops[k]);
    b->issue.next_op = *last = end - 1;
    list_out(b->q->dev, st, b, pl, sync_err);
    return 0;
}

/* The run starting at op i has a native handle (graph_native.h): bound
 * as list_take binds a run, then queued by ONE graph_launch.  1 when the
 * run has no handle or the portion does not hold all of it (list_take or
 * the per-op path then issue it); else as list_take.  A backend that
 * names the launch that failed stores it in run->failed_at and the walk
 * takes the launches before it as run; one that does not (a driver's
 * graph) leaves it, and the walk fails the batch from the first op it
 * has not walked (batch_walk.c): everything the run writes and what
 * follows. */
static int native_take(struct devq_stream *st, struct batch *b, uint32_t i, uint32_t stop,
                       const struct devq_use *here, int level, int *sync_err, uint32_t *last)
{
    struct run_plan *run = run_at(b, i);
    if (!run || !run->nat || run->end > stop)
        return 1;
    int settled;
    int r = run->nbuf != DEVQ_RUN_UNPLANNED ? bind_planned(b, run, here, level, &settled)
                                            : bind_run(b, i, run->end, here, level, &settled);
    if (r < 0) {
        devq__batch_force(b, r, "%s batch %llu: ordering failed: %s", devq__queue_label(b->q).s,
                          (unsigned long long)b->seq, devq_errmsg());
        return r;
    }
    for (uint32_t k = i; !settled && k < run->end; k++)
        devq__op_issued(b, &b->rec.ops[k]);
    b->issue.next_op = *last = run->end - 1;
    struct devq_device *dev = b->q->dev;
    struct graph_native *n = run->nat;
    run->nat = NULL;
    b->plan.nnat--;
    /* run->failed_at is UINT32_MAX since the plan (graph_plan.c), and
     * not written here: the stream's walk of an earlier portion reads
     * every run's slot (batch_walk.c failed_launch) while a deferred
     * batch goes on being issued on another thread (TSan, soak). */
    r = dev->ops->graph_launch(st->pl, n->g, &run->failed_at);
    devq__graph_native_issued(n);
    if (r < 0) {
        if (r == -ENODEV)
            devq__device_set_lost(dev, devq_errmsg());
        *sync_err = r;
        char dn[48];
        b->issue.next_op = i; /* the forced failure starts there */
        force_issue_failure(b, NULL, r, dev_name(dev, dn, sizeof dn));
        b->issue.next_op = *last;
    }
    return 0;
}

/* The batch's issue is over (every op issued or skipped): the native
 * runs it did not issue are no longer pending (their handles stay held
 * until the batch ends). */
static void native_sweep(struct batch *b)
{
    for (uint32_t k = 0; b->plan.nnat && k < b->plan.nrun; k++)
        if (b->plan.run[k].nat) {
            devq__graph_native_issued(b->plan.run[k].nat);
            b->plan.run[k].nat = NULL;
            b->plan.nnat--;
        }
}

int devq__issue(struct devq_queue *q, struct batch *b)
{
    struct devq_device *dev = q->dev;
    struct devq_stream *st = &q->stream;
    const struct devq_backend_ops *ops = dev->ops;
    int began, r = 0, sync_err = 0;
    if (b->issue.next_op == 0 && !b->replay) /* a replay's ops come marked (graph_plan.c) */
        mark_end_signals(&b->rec);
    else if (b->issue.next_op == 0) /* a replay's first pass: no launch named failed yet */
        b->lists.failed = NULL;
    uint32_t defer_at, split_at, stop, from;
    const struct op *work_out = NULL; /* the batch's last stream work out */
again:
    began = 0;
    from = b->issue.next_op;
    b->issue.ngate = 0;
    stop = resolve_waits(q, b, &began, &defer_at, &split_at);
    if (!b->fail.error && stop > b->issue.next_op && !began) {
        devq__tracker_begin(dev->tracker, st->id);
        began = 1;
    }
    struct gate_rec *g = NULL;
    if (!b->fail.error && b->issue.ngate && !(g = gate_snapshot(b))) {
        sync_err = -ENOMEM;
        devq__batch_force(b, -ENOMEM, "%s batch %llu: out of memory", devq__queue_label(q).s,
                          (unsigned long long)b->seq);
    }
    if (g && (r = enqueue_cb(ops, st, devq__gate_cb, g, b)) < 0) {
        free(g);
        sync_err = r;
        devq__batch_force(b, r, "%s batch %llu: %s", devq__queue_label(q).s, (unsigned long long)b->seq,
                          devq_errmsg());
    }
    if (devq__trace_on() && !b->fail.error && stop > b->issue.next_op && trace_prepare(b) == 0)
        b->issue.traced = 1;
    /* The unit the ops below are bound in (begun above when any goes out). */
    struct devq_use here = began ? devq__tracker_here(dev->tracker, st->id) : (struct devq_use){ 0 };
    int level = devq__log_level();
    struct pending_list pl = { .on = b->replay && ops->launch_list && !b->issue.traced && list_ready(b) };
    for (uint32_t i = b->issue.next_op; i < stop; i++) {
        struct op *o = &b->rec.ops[i];
        b->issue.next_op = i;
        if (b->replay && b->plan.nnat && !b->fail.error && !b->issue.traced && list_joins(o) &&
            native_take(st, b, i, stop, &here, level, &sync_err, &i) == 0)
            continue;
        if (pl.on && !b->fail.error && list_joins(o) &&
            list_take(st, b, &pl, i, stop, &here, level, &sync_err, &i) == 0)
            continue;
        /* Bound right before it goes out, so a wait the tracker inserts
         * sits just before the op that needs it: ops before it (a
         * signal another queue waits for, say) do not wait too. */
        if (!b->fail.error && (r = bind_op(b, o, &here, level)) < 0) {
            devq__batch_force(b, r, "%s batch %llu: ordering failed: %s", devq__queue_label(q).s,
                              (unsigned long long)b->seq, devq_errmsg());
            /* Its writes still go on record, as a skipped op's: a later
             * reader must be ordered after this point, where the batch's
             * failure is published, not read the old contents first. */
            bind_skipped(b, o, &began);
        } else if (b->fail.error)
            bind_skipped(b, o, &began);
        if (b->issue.traced && !b->fail.error && is_work(o->kind))
            ops->host_fn(st->pl, devq__trace_mark_cb, &b->issue.marks[i]);
        if (!b->fail.error && (r = issue_op(dev, st, b, o)) < 0) {
            if (r == -ENODEV)
                devq__device_set_lost(dev, devq_errmsg());
            sync_err = r;
            char dn[48];
            force_issue_failure(b, o == work_out ? NULL : work_out, r, dev_name(dev, dn, sizeof dn));
        } else if (!b->fail.error && o->kind == OP_WORK && o->u.work.issue)
            work_out = o;
        devq__op_issued(b, o); /* its buffer uses are settled either way */
    }
    b->issue.next_op = stop;
    if (stop > from && stop < b->rec.nops && (split_at != UINT32_MAX || defer_at != UINT32_MAX))
        end_portion(dev, st, b, stop);
    if (split_at != UINT32_MAX && !b->fail.error)
        goto again; /* the ops before the device wait are out: place it */
    if (defer_at != UINT32_MAX) {
        b->issue.park_at = defer_at;
        return DEVQ_ISSUE_PARK; /* defer.c parks it; the rest goes out when it resumes */
    }
    for (; b->issue.next_op < b->rec.nops; b->issue.next_op++) { /* forced: the rest is skipped */
        bind_skipped(b, &b->rec.ops[b->issue.next_op], &began);
        devq__op_issued(b, &b->rec.ops[b->issue.next_op]);
    }
    if (b->replay && b->plan.nnat)
        native_sweep(b);
    q->issued_seq = b->seq;
    /* After this call the batch belongs to the end callback. */
    if ((r = ops->host_fn(st->pl, devq__end_cb, b)) < 0) {
        if (!sync_err)
            sync_err = r;
        if (work_out && !b->fail.error) {
            char dn[48];
            force_issue_failure(b, work_out, r, dev_name(dev, dn, sizeof dn));
        }
        if (b->replay && b->lists.listed)
            list_abandon(b);
        devq__complete_inline(b, r);
    }
    /* A backend that refuses with -ENODEV lost the device, whichever call. */
    if (sync_err == -ENODEV)
        devq__device_set_lost(dev, devq__errmsg_peek());
    return sync_err;
}

/* A batch the pool hands out: nothing issued, no gate, not traced
 * (batch_life.c calls this; the issue state is written here only). */
void devq__issue_reset(struct batch *b)
{
    b->issue.ngate = 0;
    b->issue.next_op = 0;
    b->issue.traced = 0;
}

/* The end callback turned the marks into trace slices. */
void devq__issue_trace_done(struct batch *b)
{
    b->issue.traced = 0;
}

/* One stream op of a straight batch (straight.c), sent as devq__issue
 * sends it. */
int devq__issue_one(struct devq_device *dev, struct batch *b, struct op *o)
{
    return issue_op(dev, &b->q->stream, b, o);
}
