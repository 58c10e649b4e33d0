/* Issuing submitted batches to the backend stream, with the tracker
 * deciding cross-stream waits, and deferral of waits that cannot be
 * resolved on the device (bridging through the notifier thread).
 * Everything here runs under the device lock. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "grow.h"
#include "event_pool.h"
#include "hazard.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "trace.h"
#include "value_wait.h"

#define ISSUE_DEFERRED 1

static const char *dev_name(const struct devq_device *dev, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%d", dev->info.backend, dev->info.ordinal);
    return buf;
}

/* Fail the rest of b without running it; the end callback reports it. */
static void force(struct batch *b, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void force(struct batch *b, int err, const char *fmt, ...)
{
    if (b->forced_error)
        return;
    b->forced_error = err;
    b->fail_from = b->next_op;
    char chain[DEVQ_CAUSE_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(chain, sizeof chain, fmt, ap);
    va_end(ap);
    devq__cause_compact(b->cause, sizeof b->cause, chain);   /* the root cause survives */
}

static int gate_push(struct batch *b, devq_signal *s, uint64_t v)
{
    if (b->ngate == b->capgate && DEVQ_GROW(b->gate, b->capgate, 4) < 0)
        return devq__err(-ENOMEM, "out of memory");
    b->gate[b->ngate++] = (struct gate_wait){ s, v };
    return 0;
}

/* DEVQ_TRACE: the two ends of a flow arrow, stamped by host callbacks
 * where the source stream reaches the event and where the waiting stream
 * passes the wait.  They hand the stream's latched error straight on. */
struct flow {
    struct devq_device *dev;
    uint32_t track;
    int start;
    uint64_t id;
};

static int flow_cb(void *arg, int status)
{
    struct flow *f = arg;
    devq__trace_flow(f->dev, f->track, f->id, f->start, devq__trace_now());
    free(f);
    return status;
}

static struct flow *flow_new(struct devq_device *dev, struct devq_stream *st)
{
    struct flow *f = malloc(sizeof *f);
    if (!f)
        return NULL;
    const struct devq_queue *q = (const struct devq_queue *)((const char *)st - offsetof(struct devq_queue, stream));
    *f = (struct flow){ .dev = dev, .track = q->number, .start = 1, .id = devq__trace_flow_id() };
    return f;
}

/* The tracker's way to order streams: an event at src's tail, waited on
 * by dst.  The event goes back to the pool at once: stream_wait_event
 * captures its position at call time. */
int devq__align_streams(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                        const char *why)
{
    struct devq_device *dev = ctx;
    struct devq_stream *d = dev->streams[dst], *s = dev->streams[src];
    /* src may be held up by a device-side wait for the host (its own or
     * one it is ordered behind), and after this dst is too: remember
     * where dst was, so that streams needing only dst's earlier work do
     * not wait for src as well (a false dependency that deadlocks valid
     * programs: tests/test_held_alignment.c). */
    if (devq__value_wait_any(dev))
        devq__checkpoint(dev, d);
    /* Work before a held-up point on src: wait for the checkpoint, not
     * for the tail behind it (which may wait for the host). */
    for (uint32_t i = 0; i < s->ncp; i++)
        if (s->cp[i].cursor >= need) {
            int r = dev->ops->stream_wait_event(d->pl, s->cp[i].ev);
            if (r == 0) {
                *synced = s->cp[i].cursor;
                if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
                    devq__log(DEVQ_LOG_BASIC, "%s:%d: stream %u waits on stream %u @%llu (checkpoint) for %s",
                              dev->info.backend, dev->info.ordinal, dst, src,
                              (unsigned long long)s->cp[i].cursor,
                              why ? why : "a barrier");
            }
            return r;
        }
    devq_pl_event *e;
    int r = devq__event_get(dev, 0, &e);
    if (r < 0)
        return r;
    struct flow *fs = devq__trace_on() ? flow_new(dev, s) : NULL, *fe = fs ? flow_new(dev, d) : NULL;
    if (fs && fe) {
        fe->id = fs->id;
        fe->start = 0;
        if (dev->ops->host_fn(s->pl, flow_cb, fs) < 0)
            free(fs);
    }
    if ((r = dev->ops->event_record(e, s->pl)) == 0)
        r = dev->ops->stream_wait_event(d->pl, e);
    if (fe && (r < 0 || dev->ops->host_fn(d->pl, flow_cb, fe) < 0))
        free(fe);
    devq__event_put(dev, e, 0);
    if (r == 0 && DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        devq__log(DEVQ_LOG_BASIC, "%s:%d: stream %u waits on stream %u @%llu for %s",
                  dev->info.backend, dev->info.ordinal, dst, src,
                  (unsigned long long)devq__tracker_cursor(dev->tracker, src),
                  why ? why : "a barrier");
    return r;
}

static int bind(struct devq_device *dev, uint32_t sid, devq_buffer *b, enum devq_access acc)
{
    char why[80];
    int r = devq__tracker_bind_why(dev->tracker, sid, &b->track, acc,
                                   DEVQ_LOG_ON(DEVQ_LOG_BASIC) ? devq__buffer_label(b, why, sizeof why) : NULL);
    if (r >= 0 && DEVQ_LOG_ON(DEVQ_LOG_FULL))
        devq__log(DEVQ_LOG_FULL, "%s:%d: stream %u binds buffer %p %s: %d wait(s)",
                  dev->info.backend, dev->info.ordinal, sid, b->dptr,
                  acc == DEVQ_READ ? "read" : acc == DEVQ_WRITE ? "write" : "read-write", r);
    return r;
}

static int bind_cb(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    const struct batch *b = ctx;
    struct devq_device *dev = b->q->dev;
    int r = bind(dev, b->q->stream.id, buf, acc);
    return r < 0 ? r : 0;
}

static int bind_op(struct batch *b, const struct op *o)
{
    return devq__op_each_buffer(b, o, bind_cb, b);
}

/* A skipped op still "writes" its destinations: they become failed when
 * the batch ends (batch_walk.c), and later users must be ordered after
 * that point, exactly as after a write that ran. */
static int bind_skipped_cb(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    if (acc & DEVQ_WRITE)
        bind_cb(ctx, buf, DEVQ_WRITE);     /* best effort: the batch failed already */
    return 0;
}

static void bind_skipped(struct batch *b, const struct op *o, int *began)
{
    if (!*began) {
        devq__tracker_begin(b->q->dev->tracker, b->q->stream.id);
        *began = 1;
    }
    devq__op_each_buffer(b, o, bind_skipped_cb, b);
}

static int launch(struct devq_device *dev, struct devq_stream *st, struct batch *b, const struct op *o)
{
    struct devq_pl_arg stack_args[16], *pa = stack_args;
    uint32_t n = o->u.exec.nargs;
    if (n > 16 && !(pa = malloc(n * sizeof *pa)))
        return devq__err(-ENOMEM, "devq_queue_submit: out of memory for %u kernel arguments", n);
    for (uint32_t a = 0; a < n; a++) {
        const struct batch_arg *ba = &b->args[o->u.exec.first_arg + a];
        pa[a] = ba->buf ? (struct devq_pl_arg){ .is_buffer = 1, .device_ptr = ba->buf->dptr }
                        : (struct devq_pl_arg){ .value = b->bytes + ba->value_off, .size = ba->size };
    }
    int r = dev->ops->launch(st->pl, o->u.exec.k->pl, &o->u.exec.l, pa, n);
    if (pa != stack_args)
        free(pa);
    return r;
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
        return ops->copy(st->pl, (char *)o->u.xfer.buf->dptr + o->u.xfer.off, o->u.xfer.host,
                         o->u.xfer.n, DEVQ_COPY_H2D);
    case OP_READ:
        return ops->copy(st->pl, o->u.xfer.host, (const char *)o->u.xfer.buf->dptr + o->u.xfer.off,
                         o->u.xfer.n, DEVQ_COPY_D2H);
    case OP_HOST_FN:
        return enqueue_cb(ops, st, devq__user_fn_cb, o, b);
    case OP_TIMESTAMP: {
        int r = ops->event_record(o->u.ts->ev, st->pl);
        if (r == 0)
            atomic_store(&o->u.ts->recorded, 1);
        return r;
    }
    default:
        return 0;     /* OP_WAIT was resolved before; OP_BARRIER marks a point */
    }
}

/* Signals after the last op that does work are delivered by the end
 * callback (the common case: one host callback per batch). */
static void mark_end_signals(struct batch *b)
{
    int32_t last_work = -1;
    for (uint32_t i = 0; i < b->nops; i++) {
        uint8_t k = b->ops[i].kind;
        if (k != OP_WAIT && k != OP_SIGNAL && k != OP_BARRIER && k != OP_ALIGN && k != OP_TIMESTAMP)
            last_work = (int32_t)i;
    }
    for (uint32_t i = 0; i < b->nops; i++)
        if (b->ops[i].kind == OP_SIGNAL)
            b->ops[i].at_end = (int32_t)i > last_work;
}

static struct gate_rec *gate_snapshot(struct batch *b)
{
    struct gate_rec *g = malloc(sizeof *g + b->ngate * sizeof *g->sig + b->nslots * sizeof *g->slot);
    if (!g)
        return NULL;
    g->b = b;
    g->from = b->next_op;
    g->nsig = b->ngate;
    g->nslot = b->nslots;
    g->sig = (struct gate_wait *)(g + 1);
    g->slot = (struct devq_value_slot **)(g->sig + g->nsig);
    if (g->nsig)
        memcpy(g->sig, b->gate, g->nsig * sizeof *g->sig);
    if (g->nslot)          /* b->slots is NULL until a device-side wait */
        memcpy(g->slot, b->slots, g->nslot * sizeof *g->slot);
    return g;
}

static int is_work(uint8_t k)
{
    return k == OP_EXEC || k == OP_COPY || k == OP_FILL || k == OP_WRITE || k == OP_READ || k == OP_HOST_FN;
}

static int trace_prepare(struct batch *b)
{
    if (b->capmarks < b->nops + 1) {
        uint64_t *m = realloc(b->marks, (b->nops + 1) * sizeof *m);
        if (!m)
            return -ENOMEM;
        b->marks = m;
        b->capmarks = b->nops + 1;
    }
    if (b->next_op == 0 || !b->traced)
        memset(b->marks, 0, (b->nops + 1) * sizeof *b->marks);
    return 0;
}

static void resume_cb(void *arg, int status);

/* The portion of b issued up to `upto` is all that goes out for now:
 * publish its buffer effects at this point of the stream (batch_walk.c).
 * Without the callback the end callback applies them, later. */
static void end_portion(struct devq_device *dev, struct devq_stream *st, struct batch *b, uint32_t upto)
{
    struct portion *p = malloc(sizeof *p);
    if (!p)
        return;
    *p = (struct portion){ b, upto };
    if (enqueue_cb(dev->ops, st, devq__portion_cb, p, b) < 0)
        free(p);
}

static int defer(struct devq_queue *q, struct batch *b, devq_signal *s, uint64_t v)
{
    b->blocked_on = s;
    b->blocked_value = v;
    atomic_fetch_add(&q->dev->stats.batches_deferred, 1);
    int r = devq_signal_notify(s, v, resume_cb, b, &b->notify);
    if (r < 0)
        return r;
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        devq__log(DEVQ_LOG_BASIC, "%s:%d: queue %u batch %llu deferred: waits s%llu>=%llu (value %llu)",
                  q->dev->info.backend, q->dev->info.ordinal, q->number, (unsigned long long)b->seq,
                  (unsigned long long)devq__signal_id(s), (unsigned long long)v,
                  (unsigned long long)devq_signal_value(s));
    return ISSUE_DEFERRED;
}

/* An op conflicts with a batch submitted earlier on another queue that
 * is still parked: park this one too until that use is issued (hazard.h). */
static int defer_hazard(struct devq_queue *q, struct batch *b)
{
    struct devq_hazard hz;
    b->hazard_wait = 1;
    atomic_fetch_add(&q->dev->stats.batches_deferred, 1);
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC) && devq__hazard_blocker(b, &hz))
        devq__log(DEVQ_LOG_BASIC, "%s:%d: queue %u batch %llu deferred: %s buffer %p after queue %u batch %llu "
                  "(submitted earlier, deferred)", q->dev->info.backend, q->dev->info.ordinal, q->number,
                  (unsigned long long)b->seq, hz.mine & DEVQ_WRITE ? "writes" : "reads", hz.buf->dptr,
                  hz.owner->q->number, (unsigned long long)hz.owner->seq);
    return ISSUE_DEFERRED;
}

/* Ops in [from, to) that must run before a wait at `to` is placed. */
static int work_between(const struct batch *b, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        if (b->ops[i].kind != OP_WAIT && b->ops[i].kind != OP_ALIGN)
            return 1;
    return 0;
}

/* Resolve the waits of the portion starting at next_op.  Returns the end
 * of the portion that can be issued now; *defer_at is set to the index of
 * a wait that must be bridged through the host (== returned end), and
 * *split_at to a device-side wait that must come after the ops before it
 * (== returned end), or UINT32_MAX. */
static uint32_t resolve_waits(struct devq_queue *q, struct batch *b, int *began, uint32_t *defer_at,
                              uint32_t *split_at)
{
    struct devq_device *dev = q->dev;
    uint32_t sid = q->stream.id;
    char dn[48];
    *defer_at = *split_at = UINT32_MAX;
    for (uint32_t i = b->next_op; i < b->nops && !b->forced_error; i++) {
        struct op *o = &b->ops[i];
        struct devq_hazard hz;
        if (devq__hazard_find(b, o, &hz)) {
            if (q->destroying) {
                force(b, -ECANCELED, "queue %u destroyed while batch %llu waited for queue %u batch %llu "
                      "(buffer %p)", q->number, (unsigned long long)b->seq, hz.owner->q->number,
                      (unsigned long long)hz.owner->seq, hz.buf->dptr);
                break;
            }
            *defer_at = i;
            return i;
        }
        if (o->kind == OP_ALIGN) {
            if (!*began) {
                devq__tracker_begin(dev->tracker, sid);
                *began = 1;
            }
            int r = devq__tracker_require(dev->tracker, sid, &o->u.align);
            if (r < 0) {
                force(b, r, "queue %u batch %llu: barrier: %s", q->number,
                      (unsigned long long)b->seq, devq_errmsg());
                break;
            }
            continue;
        }
        if (o->kind != OP_WAIT)
            continue;
        devq_signal *s = o->u.sig.s;
        uint64_t v = o->u.sig.v;
        char why[DEVQ_CAUSE_MAX];
        int st = devq__signal_wait_verdict(s, v, why, sizeof why);
        if (st) {
            force(b, st, "queue %u batch %llu on %s waits s%llu>=%llu, which failed: %s", q->number,
                  (unsigned long long)b->seq, dev_name(dev, dn, sizeof dn),
                  (unsigned long long)devq__signal_id(s), (unsigned long long)v, why);
            break;
        }
        if (devq_signal_value(s) >= v) {
            atomic_fetch_add(&dev->stats.signal_waits_dropped, 1);
            continue;
        }
        struct devq_use u;
        if (devq__tracker_producer_find(dev->tracker, s, v, &u)) {
            if (!*began) {
                devq__tracker_begin(dev->tracker, sid);
                *began = 1;
            }
            char for_what[48];
            if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
                snprintf(for_what, sizeof for_what, "s%llu>=%llu", (unsigned long long)devq__signal_id(s),
                         (unsigned long long)v);
            int r = devq__tracker_require_why(dev->tracker, sid, &u,
                                              DEVQ_LOG_ON(DEVQ_LOG_BASIC) ? for_what : NULL);
            if (r < 0 || (r = gate_push(b, s, v)) < 0) {
                force(b, r, "queue %u batch %llu: ordering after s%llu>=%llu failed: %s", q->number,
                      (unsigned long long)b->seq, (unsigned long long)devq__signal_id(s),
                      (unsigned long long)v, devq_errmsg());
                break;
            }
            atomic_fetch_add(&dev->stats.signal_waits_aligned, 1);
            /* Ordering behind a stream that waits on the device can close a cycle. */
            if (devq__value_wait_any(dev))
                q->check_cycle = 1;
            continue;
        }
        if (q->destroying) {
            force(b, -ECANCELED, "queue %u destroyed while batch %llu waited for s%llu>=%llu",
                  q->number, (unsigned long long)b->seq, (unsigned long long)devq__signal_id(s),
                  (unsigned long long)v);
            break;
        }
        if (dev->info.caps & DEVQ_CAP_WAIT_VALUE) {
            /* A device-side wait sits where the wait was recorded: the
             * host may set the value only after seeing earlier ops. */
            if (work_between(b, b->next_op, i)) {
                *split_at = i;
                return i;
            }
            if (!*began) {
                devq__tracker_begin(dev->tracker, sid);   /* the wait belongs to this unit */
                *began = 1;
            }
            int nr = devq__value_wait_issue(q, b, s, v);
            if (nr > 0 && gate_push(b, s, v) == 0) {
                atomic_fetch_add(&dev->stats.signal_waits_native, 1);
                q->check_cycle = 1;
                continue;
            }
            if (nr != 0) {
                force(b, nr < 0 ? nr : -ENOMEM, "queue %u batch %llu: device wait for s%llu>=%llu failed: %s",
                      q->number, (unsigned long long)b->seq, (unsigned long long)devq__signal_id(s),
                      (unsigned long long)v, devq_errmsg());
                break;
            }
        }
        *defer_at = i;
        return i;
    }
    return b->nops;
}

int devq__issue(struct devq_queue *q, struct batch *b)
{
    struct devq_device *dev = q->dev;
    struct devq_stream *st = &q->stream;
    const struct devq_backend_ops *ops = dev->ops;
    int began, r = 0, sync_err = 0;
    if (b->next_op == 0)
        mark_end_signals(b);
    uint32_t defer_at, split_at, stop, from;
again:
    began = 0;
    from = b->next_op;
    b->ngate = 0;
    stop = resolve_waits(q, b, &began, &defer_at, &split_at);
    if (!b->forced_error && stop > b->next_op && !began) {
        devq__tracker_begin(dev->tracker, st->id);
        began = 1;
    }
    struct gate_rec *g = NULL;
    if (!b->forced_error && b->ngate && !(g = gate_snapshot(b))) {
        sync_err = -ENOMEM;
        force(b, -ENOMEM, "queue %u batch %llu: out of memory", q->number, (unsigned long long)b->seq);
    }
    if (g && (r = enqueue_cb(ops, st, devq__gate_cb, g, b)) < 0) {
        free(g);
        sync_err = r;
        force(b, r, "queue %u batch %llu: %s", q->number, (unsigned long long)b->seq, devq_errmsg());
    }
    if (devq__trace_on() && !b->forced_error && stop > b->next_op && trace_prepare(b) == 0)
        b->traced = 1;
    for (uint32_t i = b->next_op; i < stop; i++) {
        struct op *o = &b->ops[i];
        b->next_op = i;
        /* Bound right before it goes out, so a wait the tracker inserts
         * sits just before the op that needs it: ops before it (a
         * signal another queue waits for, say) do not wait too. */
        if (!b->forced_error && (r = bind_op(b, o)) < 0)
            force(b, r, "queue %u batch %llu: ordering failed: %s", q->number,
                  (unsigned long long)b->seq, devq_errmsg());
        else if (b->forced_error)
            bind_skipped(b, o, &began);
        if (b->traced && !b->forced_error && is_work(o->kind))
            ops->host_fn(st->pl, devq__trace_mark_cb, &b->marks[i]);
        if (!b->forced_error && (r = issue_op(dev, st, b, o)) < 0) {
            if (r == -ENODEV)
                devq__device_set_lost(dev, devq_errmsg());
            sync_err = r;
            char dn[48];
            force(b, r, "queue %u batch %llu on %s: %s", q->number, (unsigned long long)b->seq,
                  dev_name(dev, dn, sizeof dn), devq_errmsg());
        }
        devq__op_issued(b, o);      /* its buffer uses are settled either way */
    }
    b->next_op = stop;
    if (stop > from && stop < b->nops && !b->forced_error &&
        (split_at != UINT32_MAX || defer_at != UINT32_MAX))
        end_portion(dev, st, b, stop);
    if (split_at != UINT32_MAX && !b->forced_error)
        goto again;          /* the ops before the device wait are out: place it */
    if (defer_at != UINT32_MAX && !b->forced_error) {
        struct op *w = &b->ops[defer_at];
        /* Parked, its uses must be known to later batches first. */
        if ((r = devq__hazard_park(b)) < 0)
            force(b, r, "queue %u batch %llu: cannot defer: %s", q->number, (unsigned long long)b->seq,
                  devq_errmsg());
        else if (w->kind != OP_WAIT)
            return defer_hazard(q, b);   /* resolve_waits found the conflict at w */
        else if ((r = defer(q, b, w->u.sig.s, w->u.sig.v)) == ISSUE_DEFERRED)
            return ISSUE_DEFERRED;
        else
            force(b, r, "queue %u batch %llu: cannot wait for s%llu>=%llu: %s", q->number,
                  (unsigned long long)b->seq, (unsigned long long)devq__signal_id(w->u.sig.s),
                  (unsigned long long)w->u.sig.v, devq_errmsg());
    }
    for (; b->next_op < b->nops; b->next_op++) {    /* forced: the rest is skipped */
        bind_skipped(b, &b->ops[b->next_op], &began);
        devq__op_issued(b, &b->ops[b->next_op]);
    }
    q->issued_seq = b->seq;
    /* After this call the batch belongs to the end callback. */
    if ((r = ops->host_fn(st->pl, devq__end_cb, b)) < 0) {
        if (!sync_err)
            sync_err = r;
        devq__complete_inline(b, r);
    }
    /* A backend that refuses with -ENODEV lost the device, whichever call. */
    if (sync_err == -ENODEV)
        devq__device_set_lost(dev, devq__errmsg_peek());
    return sync_err;
}

/* Issue deferred batches from the head of the FIFO until one blocks;
 * 1 if any batch went out. */
static int drain_one(struct devq_queue *q)
{
    struct batch *b;
    int progress = 0;
    while ((b = q->deferred)) {
        struct devq_hazard hz;
        if (b->hazard_wait && !q->destroying && devq__hazard_blocker(b, &hz))
            break;            /* still behind an earlier parked batch */
        b->hazard_wait = 0;
        q->deferred = b->next;
        if (!q->deferred)
            q->deferred_tail = NULL;
        b->next = NULL;
        /* A destroyed queue runs nothing that was still deferred. */
        if (q->destroying && !b->forced_error && b->next_op == 0)
            force(b, -ECANCELED, "queue %u destroyed while batch %llu was deferred", q->number,
                  (unsigned long long)b->seq);
        if (devq__issue(q, b) == ISSUE_DEFERRED) {
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
            if (x->deferred && x->deferred->hazard_wait)
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
    for (uint32_t i = 0; i < b->nops; i++) {
        if (b->ops[i].kind != OP_SIGNAL)
            continue;
        for (struct devq_queue *x = dev->qs->queues; x; x = x->next)
            if (x != b->q && x->deferred && x->deferred->blocked_on == b->ops[i].u.sig.s &&
                b->ops[i].u.sig.v >= x->deferred->blocked_value)
                return 1;
    }
    return 0;
}

int devq__submit_locked(struct devq_queue *q, struct batch *b)
{
    b->serial = ++q->dev->qs->submit_serial;
    if (q->deferred) {
        /* Order holds: wait behind the deferred head, uses known to
         * batches submitted after this one. */
        int r = devq__hazard_park(b);
        if (r < 0)
            force(b, r, "queue %u batch %llu: cannot defer: %s", q->number, (unsigned long long)b->seq,
                  devq_errmsg());
        q->deferred_tail->next = b;
        q->deferred_tail = b;
        if (signals_awaited(q->dev, b))
            devq__note_cycle(q);
        return 0;
    }
    q->check_cycle = 0;
    int r = devq__issue(q, b);
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
    if (b->notify)
        devq_notify_release(b->notify);
    b->notify = NULL;
    if (status < 0) {
        /* The signal's own verdict first: a failure (whatever its errno,
         * -ECANCELED included) or a destroy of the signal; only a wait
         * cancelled with neither is the queue's own destroy. */
        char why[DEVQ_CAUSE_MAX];
        int st = devq__signal_wait_verdict(b->blocked_on, b->blocked_value, why, sizeof why);
        if (st)
            force(b, st, "queue %u batch %llu waits s%llu>=%llu, which failed: %s", q->number,
                  (unsigned long long)b->seq, (unsigned long long)devq__signal_id(b->blocked_on),
                  (unsigned long long)b->blocked_value, why);
        else
            force(b, status, "queue %u destroyed while batch %llu waited for s%llu>=%llu", q->number,
                  (unsigned long long)b->seq, (unsigned long long)devq__signal_id(b->blocked_on),
                  (unsigned long long)b->blocked_value);
    }
    b->blocked_on = NULL;
    devq__drain_deferred(q);
    pthread_mutex_unlock(&dev->lock);
}
