/* See hazard.h.  Each buffer keeps a short array of the parked batches
 * that use it (one entry per batch, with counts of reading and writing
 * ops), freed when it empties: parked batches are rare, and a buffer
 * with none costs nothing. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "error.h"
#include "grow.h"
#include "hazard.h"

static struct devq_parked_use *entry(devq_buffer *buf, const struct batch *b)
{
    for (uint32_t i = 0; i < buf->nparked; i++)
        if (buf->parked[i].b == b)
            return &buf->parked[i];
    return NULL;
}

static int add_use(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    struct batch *b = ctx;
    struct devq_parked_use *e = entry(buf, b);
    if (!e) {
        if (buf->nparked == buf->capparked && DEVQ_GROW(buf->parked, buf->capparked, 2) < 0)
            return devq__err(-ENOMEM, "out of memory recording the uses of a deferred batch");
        e = &buf->parked[buf->nparked++];
        *e = (struct devq_parked_use){ .b = b };
    }
    e->nread += (acc & DEVQ_READ) != 0;
    e->nwrite += (acc & DEVQ_WRITE) != 0;
    b->parked_uses++;
    b->q->dev->qs->parked_uses++;
    return 0;
}

static int drop_use(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    struct batch *b = ctx;
    struct devq_parked_use *e = entry(buf, b);
    if (!e)
        return 0;             /* registered after this op (a later park) */
    e->nread -= (acc & DEVQ_READ) != 0;
    e->nwrite -= (acc & DEVQ_WRITE) != 0;
    b->parked_uses--;
    b->q->dev->qs->parked_uses--;
    b->q->dev->qs->parked_progress = 1;
    if (e->nread == 0 && e->nwrite == 0) {
        *e = buf->parked[--buf->nparked];
        if (buf->nparked == 0) {
            free(buf->parked);
            buf->parked = NULL;
            buf->capparked = 0;
        }
    }
    return 0;
}

int devq__hazard_park(struct batch *b)
{
    if (b->parked_uses)
        return 0;             /* its unissued uses are registered already */
    for (uint32_t i = b->next_op; i < b->nops; i++) {
        int r = devq__op_each_buffer(b, &b->ops[i], add_use, b);
        if (r < 0) {
            /* Leave nothing half registered: the caller fails the batch. */
            for (uint32_t j = b->next_op; j <= i; j++)
                devq__op_each_buffer(b, &b->ops[j], drop_use, b);
            return r;
        }
    }
    return 0;
}

void devq__hazard_op_done(struct batch *b, const struct op *o)
{
    if (b->parked_uses)
        devq__op_each_buffer(b, o, drop_use, b);
}

struct find_ctx {
    const struct batch *b;
    struct devq_hazard *out;
};

static int conflicts(const struct devq_parked_use *e, enum devq_access acc, enum devq_access *theirs)
{
    if ((acc & DEVQ_WRITE) && (e->nread || e->nwrite)) {
        *theirs = e->nwrite ? DEVQ_WRITE : DEVQ_READ;      /* WAW before WAR, for messages */
        return 1;
    }
    if ((acc & DEVQ_READ) && e->nwrite) {
        *theirs = DEVQ_WRITE;                               /* RAW */
        return 1;
    }
    return 0;
}

static int find_use(void *ctx, devq_buffer *buf, enum devq_access acc)
{
    struct find_ctx *f = ctx;
    for (uint32_t i = 0; i < buf->nparked; i++) {
        const struct devq_parked_use *e = &buf->parked[i];
        enum devq_access theirs;
        /* Same queue: FIFO order covers it.  Later batches: they order
         * after this one when they are issued. */
        if (e->b->q == f->b->q || e->b->serial > f->b->serial || !conflicts(e, acc, &theirs))
            continue;
        *f->out = (struct devq_hazard){ .owner = e->b, .buf = buf, .mine = acc, .theirs = theirs };
        return 1;
    }
    return 0;
}

int devq__hazard_find(const struct batch *b, const struct op *o, struct devq_hazard *out)
{
    if (!devq__hazard_any(b->q->dev))
        return 0;
    struct find_ctx f = { .b = b, .out = out };
    return devq__op_each_buffer(b, o, find_use, &f) > 0;
}

int devq__hazard_blocker(const struct batch *b, struct devq_hazard *out)
{
    /* A hazard wait parks a batch at the conflicting op: only that op
     * holds it (later ones are checked as the batch gets there). */
    return b->next_op < b->nops && devq__hazard_find(b, &b->ops[b->next_op], out);
}
