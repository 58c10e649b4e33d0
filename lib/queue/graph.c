/* SPDX-License-Identifier: MIT */
/* Capture: a queue's builder calls recorded into a graph (graph.h).
 *
 * The capture is the queue's open batch, recorded by record.c exactly
 * as always; this file only marks the queue and, at the end, copies the
 * record out and drops the batch without running it.  What cannot be
 * replayed (a cross-queue devq_barrier point, a timestamp object, a
 * channel op whose peers count each op once) fails the end. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "batch_life.h"
#include "error.h"
#include "graph.h"
#include "queue.h"

/* Take the recorder role (record.c's rule: one thread at a time). */
static int take_role(devq_queue *q, const char *fn)
{
    int r = devq__queue_check(q, fn);
    if (r < 0)
        return r;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&q->recording, &expected, 1))
        return devq__err(
            -EBUSY, "%s: %s is being recorded by another thread; record each queue from one thread at a time",
            fn, devq__queue_label(q).s);
    return 0;
}

static int give_role(devq_queue *q, int r)
{
    atomic_store(&q->recording, 0);
    return r;
}

DEVQ_API int devq_queue_begin_capture(devq_queue *q)
{
    const char *fn = "devq_queue_begin_capture";
    int r = take_role(q, fn);
    if (r < 0)
        return r;
    if (atomic_load(&q->capturing))
        return give_role(
            q, devq__err(-EBUSY,
                         "%s: %s is already capturing; end that capture with devq_queue_end_capture first",
                         fn, devq__queue_label(q).s));
    if (q->sticky || (q->open && q->open->rec.nops))
        return give_role(q, devq__err(-EBUSY,
                                      "%s: %s has %u recorded ops not yet submitted%s; "
                                      "devq_queue_submit them before capturing",
                                      fn, devq__queue_label(q).s, q->open ? q->open->rec.nops : 0u,
                                      q->sticky ? " and a sticky recording error" : ""));
    atomic_store(&q->capturing, 1);
    return give_role(q, 0);
}

/* The first op of rec that a submission cannot repeat, or -1. */
static long unreplayable(const struct batch_record *rec)
{
    for (uint32_t i = 0; i < rec->nops; i++) {
        uint8_t k = rec->ops[i].kind;
        if (k == OP_ALIGN || k == OP_TIMESTAMP || k == OP_WORK)
            return (long)i;
    }
    return -1;
}

static int make_graph(devq_queue *q, struct batch *b, devq_graph **out, const char *fn)
{
    static const struct batch_record empty;
    const struct batch_record *rec = b ? &b->rec : &empty;
    long bad = unreplayable(rec);
    if (bad >= 0)
        return devq__err(-EINVAL,
                         "%s: %s: op %ld (%s) cannot be replayed by a graph; "
                         "record it in an ordinary batch before or after devq_graph_submit",
                         fn, devq__queue_label(q).s, bad, devq__graph_op_name(rec->ops[bad].kind));
    devq_graph *g = calloc(1, sizeof *g);
    if (!g || devq__graph_rec_copy(&g->r, q->dev, rec) < 0) {
        free(g);
        return devq__err(-ENOMEM, "%s: out of memory for a graph of %u ops", fn, rec->nops);
    }
    g->magic = DEVQ_MAGIC_GRAPH;
    *out = g;
    return 0;
}

DEVQ_API int devq_queue_end_capture(devq_queue *q, devq_graph **out)
{
    const char *fn = "devq_queue_end_capture";
    if (out)
        *out = NULL;
    int r = take_role(q, fn);
    if (r < 0)
        return r;
    if (!out)
        return give_role(q, devq__err(-EINVAL, "%s: out is NULL", fn));
    if (!atomic_load(&q->capturing))
        return give_role(q, devq__err(-EINVAL, "%s: %s is not capturing; call devq_queue_begin_capture first",
                                      fn, devq__queue_label(q).s));
    struct batch *b = q->open;
    q->open = NULL;
    int sticky = q->sticky;
    q->sticky = 0;
    atomic_store(&q->capturing, 0);
    if (sticky)
        r = devq__err(sticky, "%s: %s: capture discarded: %s", fn, devq__queue_label(q).s, q->sticky_msg);
    else
        r = make_graph(q, b, out, fn);
    /* The recording never runs: drop its references and its buffers'
     * unissued counts; its signals are not failed, nothing was
     * submitted that would signal them. */
    if (b) {
        char msg[DEVQ_CAUSE_MAX];
        snprintf(msg, sizeof msg, "%s", devq_errmsg());
        devq__batch_discard(b, 0, NULL);
        if (r < 0)
            devq__err_str(r, msg);
    }
    return give_role(q, r);
}

DEVQ_API void devq_graph_destroy(devq_graph *g)
{
    if (!g || g->magic != DEVQ_MAGIC_GRAPH)
        return;
    g->magic = 0;
    devq__graph_rec_fini(&g->r);
    free(g);
}
