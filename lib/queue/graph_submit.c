/* SPDX-License-Identifier: MIT */
/* Submitting an instantiated graph: one ordinary batch, replayed.
 *
 * Nothing is validated again (the capture's builder calls did it) but
 * the liveness of the buffers, which the program may free between
 * submissions.  The exec's record is copied into a batch of the queue's
 * pool, whose arrays and reference set keep their capacity, so a warm
 * submission allocates nothing; the batch then takes the same path as
 * devq_queue_submit (record.c): the tracker binds its buffer uses
 * against other queues, it defers, fails and completes like any batch.
 * A submission holds its own references: the exec may change or go. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "batch_life.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "error.h"
#include "graph.h"
#include "native_run.h"
#include "queue.h"
#include "record.h"
#include "signal_int.h"

/* Grow *p (cap elements of size) to hold n; 0 or -ENOMEM. */
static int room(void **p, uint32_t *cap, uint32_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *np = realloc(*p, (size_t)n * size);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = n;
    return 0;
}

static int reserve(struct batch *b, const struct graph_rec *g)
{
    const struct batch_record *s = &g->rec;
    struct batch_record *d = &b->rec;
    if (room((void **)&d->ops, &d->capops, s->nops, sizeof *s->ops) < 0 ||
        room((void **)&d->args, &d->capargs, s->nargs, sizeof *s->args) < 0 ||
        room((void **)&d->uses, &d->capuses, s->nuses, sizeof *s->uses) < 0)
        return -ENOMEM;
    if (s->nbytes > d->capbytes) {
        unsigned char *nb = realloc(d->bytes, s->nbytes);
        if (!nb)
            return -ENOMEM;
        d->bytes = nb;
        d->capbytes = s->nbytes;
    }
    if (room((void **)&b->plan.run, &b->plan.caprun, g->nrun, sizeof *g->run) < 0 ||
        room((void **)&b->plan.buf, &b->plan.capbuf, g->nrunbuf, sizeof *g->runbuf) < 0 ||
        room((void **)&b->plan.fix, &b->plan.capfix, g->nfix, sizeof *g->fix) < 0)
        return -ENOMEM;
    return devq__ref_set_reserve(&b->held, g->nheld + g->nrun);
}

/* b (empty, room reserved) becomes a copy of the exec's record holding
 * its own references; the exec's values advance by their steps. */
static void replay(struct batch *b, struct graph_rec *g)
{
    const struct batch_record *s = &g->rec;
    struct batch_record *d = &b->rec;
    if (s->nops) /* an empty graph: either array may be NULL */
        memcpy(d->ops, s->ops, s->nops * sizeof *s->ops);
    if (s->nargs)
        memcpy(d->args, s->args, s->nargs * sizeof *s->args);
    if (s->nuses)
        memcpy(d->uses, s->uses, s->nuses * sizeof *s->uses);
    if (s->nbytes)
        memcpy(d->bytes, s->bytes, s->nbytes);
    d->nops = s->nops;
    d->nargs = s->nargs;
    d->nuses = s->nuses;
    d->nbytes = s->nbytes;
    if (g->nrun)
        memcpy(b->plan.run, g->run, g->nrun * sizeof *g->run);
    if (g->nrunbuf)
        memcpy(b->plan.buf, g->runbuf, g->nrunbuf * sizeof *g->runbuf);
    if (g->nfix)
        memcpy(b->plan.fix, g->fix, g->nfix * sizeof *g->fix);
    b->plan.nfix = g->nfix;
    b->plan.nrun = g->nrun;
    b->plan.nbuf = g->nrunbuf;
    b->plan.next = 0;
    b->plan.nowaits = g->nowaits;
    b->plan.nnat = 0;
    for (uint32_t k = 0; k < g->nrun; k++) /* held until the batch ends */
        if (g->run[k].nat) {
            devq__ref_set_add(&b->held, &g->run[k].nat->obj);
            devq__graph_native_submitted(g->run[k].nat);
            b->plan.nnat++;
        }
    for (uint32_t i = 0; i < g->nheld; i++)
        devq__ref_set_add(&b->held, g->held[i]);
    /* One count per buffer, held by its last use (record.c's rule). */
    for (uint32_t i = 0; i < g->ncounted; i++)
        atomic_fetch_add_explicit(&g->counted[i]->unissued, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < g->nfix; i++) {
        struct op *o = &d->ops[g->fix[i]];
        if (o->kind == OP_HOST_FN) {
            o->u.host.owner = b;
            continue;
        }
        o->u.sig.owner = b;
        devq__signal_retain(o->u.sig.s);
        g->rec.ops[g->fix[i]].u.sig.v += (uint64_t)g->step[i];
    }
}

/* 0, or the error that stops ge from being submitted to q now (recorder
 * role held). */
static int submittable(devq_queue *q, const devq_graph_exec *ge, const char *fn)
{
    if (atomic_load_explicit(&q->capturing, memory_order_relaxed))
        return devq__err(-EBUSY, "%s: %s is capturing a graph; call devq_queue_end_capture first", fn,
                         devq__queue_label(q).s);
    if (q->sticky || (q->open && q->open->rec.nops))
        return devq__err(
            -EBUSY,
            "%s: %s has %u recorded ops not yet submitted%s; a graph submission is a batch of its "
            "own: devq_queue_submit them first",
            fn, devq__queue_label(q).s, q->open ? q->open->rec.nops : 0u,
            q->sticky ? " and a sticky recording error" : "");
    for (uint32_t i = 0; i < ge->r.ncounted; i++) {
        const devq_buffer *b = ge->r.counted[i];
        if (b->freed)
            return devq__err(
                -EINVAL, "%s: the graph uses %s, which was freed; rebind it with devq_graph_exec_set_buffer",
                fn, devq__buffer_label(b).s);
    }
    return 0;
}

static int take_role(devq_queue *q, const char *fn)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&q->recording, &expected, 1))
        return devq__err(-EBUSY, "%s: %s is being recorded by another thread", fn, devq__queue_label(q).s);
    return 0;
}

DEVQ_API int devq_graph_submit(devq_queue *q, devq_graph_exec *ge)
{
    const char *fn = "devq_graph_submit";
    int r = devq__queue_check(q, fn);
    if (r < 0 || (r = devq__graph_exec_enter(ge, fn)) < 0)
        return r;
    if (ge->r.dev != q->dev) {
        r = devq__err(
            -EINVAL,
            "%s: the graph was captured on %s:%d but %s is on %s:%d; submit it to a queue of its device", fn,
            ge->r.dev->info.backend, ge->r.dev->info.ordinal, devq__queue_label(q).s, q->dev->info.backend,
            q->dev->info.ordinal);
        devq__graph_exec_leave(ge);
        return r;
    }
    if ((r = take_role(q, fn)) < 0) {
        devq__graph_exec_leave(ge);
        return r;
    }
    struct batch *b = NULL;
    if ((r = submittable(q, ge, fn)) >= 0) {
        r = 0;
        b = q->open ? q->open : devq__record_fresh_batch(q);
        q->open = NULL;
        if (!b || reserve(b, &ge->r) < 0) {
            q->open = b; /* empty: the next recording or submit uses it */
            r = devq__err(-ENOMEM, "%s: out of memory for a batch of %u ops", fn, ge->r.rec.nops);
        }
    }
    if (r < 0) {
        atomic_store(&q->recording, 0);
        devq__graph_exec_leave(ge);
        return r;
    }
    replay(b, &ge->r);
    b->replay = 1;
    devq__graph_exec_leave(ge);
    return devq__record_submit(q, b);
}
