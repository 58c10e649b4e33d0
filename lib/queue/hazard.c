/* SPDX-License-Identifier: MIT */
/* See hazard.h.  Each buffer keeps a short array of the parked batches
 * that use it (one entry per batch, with counts of reading and writing
 * ops), freed when it empties: parked batches are rare, and a buffer
 * with none costs nothing. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "batch.h"
#include "buffer.h"
#include "error.h"
#include "grow.h"
#include "hazard.h"
#include "queue.h"

static struct devq_parked_use *entry(devq_buffer *buf, const struct batch *b)
{
    for (uint32_t i = 0; i < buf->nparked; i++)
        if (buf->parked[i].b == b)
            return &buf->parked[i];
    return NULL;
}

static int add_use(struct batch *b, devq_buffer *buf, enum devq_access acc)
{
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

static void drop_use(struct batch *b, devq_buffer *buf, enum devq_access acc)
{
    struct devq_parked_use *e = entry(buf, b);
    if (!e)
        return; /* registered after this op (a later park) */
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
}

int devq__hazard_park(struct batch *b)
{
    if (b->parked_uses)
        return 0; /* its unissued uses are registered already */
    /* The unissued ops' uses are one slice of the flat list. */
    uint32_t from = b->issue.next_op < b->rec.nops ? b->rec.ops[b->issue.next_op].first_use : b->rec.nuses;
    for (uint32_t k = from; k < b->rec.nuses; k++) {
        int r = add_use(b, b->rec.uses[k].buf, b->rec.uses[k].access);
        if (r < 0) {
            /* Leave nothing half registered: the caller fails the batch. */
            while (k-- > from)
                drop_use(b, b->rec.uses[k].buf, b->rec.uses[k].access);
            return r;
        }
    }
    return 0;
}

void devq__hazard_op_done(struct batch *b, const struct op *o)
{
    if (!b->parked_uses)
        return;
    const struct buffer_use *u = devq__op_uses(b, o);
    for (uint32_t k = 0; k < o->nuses; k++)
        drop_use(b, u[k].buf, u[k].access);
}

static int conflicts(const struct devq_parked_use *e, enum devq_access acc, enum devq_access *theirs)
{
    if ((acc & DEVQ_WRITE) && (e->nread || e->nwrite)) {
        *theirs = e->nwrite ? DEVQ_WRITE : DEVQ_READ; /* WAW before WAR, for messages */
        return 1;
    }
    if ((acc & DEVQ_READ) && e->nwrite) {
        *theirs = DEVQ_WRITE; /* RAW */
        return 1;
    }
    return 0;
}

static int find_use(const struct batch *b, devq_buffer *buf, enum devq_access acc, struct devq_hazard *out)
{
    for (uint32_t i = 0; i < buf->nparked; i++) {
        const struct devq_parked_use *e = &buf->parked[i];
        enum devq_access theirs;
        /* Same queue: FIFO order covers it.  Later batches: they order
         * after this one when they are issued. */
        if (e->b->q == b->q || e->b->defer.serial > b->defer.serial || !conflicts(e, acc, &theirs))
            continue;
        *out = (struct devq_hazard){ .owner = e->b, .buf = buf, .mine = acc, .theirs = theirs };
        return 1;
    }
    return 0;
}

int devq__hazard_find(const struct batch *b, const struct op *o, struct devq_hazard *out)
{
    if (!devq__hazard_any(b->q->dev))
        return 0;
    const struct buffer_use *u = devq__op_uses(b, o);
    for (uint32_t k = 0; k < o->nuses; k++)
        if (find_use(b, u[k].buf, u[k].access, out))
            return 1;
    return 0;
}

int devq__hazard_blocker(const struct batch *b, struct devq_hazard *out)
{
    /* A hazard wait parks a batch at the conflicting op: only that op
     * holds it (later ones are checked as the batch gets there). */
    return b->issue.next_op < b->rec.nops && devq__hazard_find(b, &b->rec.ops[b->issue.next_op], out);
}

/* A batch the pool hands out has no parked use (batch_life.c calls this;
 * parked_uses is written here only). */
void devq__hazard_batch_reset(struct batch *b)
{
    b->parked_uses = 0;
}
