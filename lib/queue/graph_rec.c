/* SPDX-License-Identifier: MIT */
/* The record a graph and an exec own (graph.h): copying it with its
 * references, and recomputing those after a buffer is rebound. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "device.h"
#include "object.h"
#include "graph.h"
#include "kernel.h"
#include "signal_int.h"

const char *devq__graph_op_name(uint8_t kind)
{
    static const char *const names[] = {
        [OP_WAIT] = "devq_queue_wait",           [OP_SIGNAL] = "devq_queue_signal",
        [OP_EXEC] = "devq_queue_exec",           [OP_COPY] = "devq_queue_copy",
        [OP_FILL] = "devq_queue_fill",           [OP_WRITE] = "devq_queue_write",
        [OP_READ] = "devq_queue_read",           [OP_BARRIER] = "devq_queue_barrier",
        [OP_HOST_FN] = "devq_queue_host_fn",     [OP_ALIGN] = "devq_barrier",
        [OP_TIMESTAMP] = "devq_queue_timestamp", [OP_WORK] = "a channel op",
    };
    return kind < sizeof names / sizeof names[0] && names[kind] ? names[kind] : "an op";
}

static void *dup_array(const void *src, size_t n, size_t size, int *failed)
{
    if (!n)
        return NULL;
    void *p = malloc(n * size);
    if (!p)
        *failed = 1;
    else
        memcpy(p, src, n * size);
    return p;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* Sort and drop duplicates; returns the new count. */
static uint32_t unique(void **v, uint32_t n)
{
    if (n < 2)
        return n;
    qsort(v, n, sizeof *v, by_address);
    uint32_t m = 1;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

/* A batch counts a buffer once, at its last use (record.c); a rebound
 * graph recomputes that rather than trust the capture's marks. */
static int mark_counted(struct graph_rec *r, devq_buffer ***out, uint32_t *nout)
{
    struct batch_record *rec = &r->rec;
    devq_buffer **bufs = rec->nuses ? malloc(rec->nuses * sizeof *bufs) : NULL;
    if (rec->nuses && !bufs)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = rec->nuses; i-- > 0;) {
        devq_buffer *b = rec->uses[i].buf;
        uint32_t k = 0;
        while (k < n && bufs[k] != b) /* graphs use few distinct buffers */
            k++;
        rec->uses[i].counted = k == n;
        if (k == n)
            bufs[n++] = b;
    }
    *out = bufs;
    *nout = n;
    return 0;
}

int devq__graph_rec_bind(struct graph_rec *r)
{
    struct batch_record *rec = &r->rec;
    uint32_t nexec = 0;
    for (uint32_t i = 0; i < rec->nops; i++)
        nexec += rec->ops[i].kind == OP_EXEC;
    devq_buffer **counted = NULL;
    uint32_t ncounted = 0;
    if (mark_counted(r, &counted, &ncounted) < 0)
        return -ENOMEM;
    /* sized by what goes in, so the fill below cannot overrun it */
    uint32_t cap = ncounted + nexec;
    struct devq_object **held = cap ? malloc(cap * sizeof *held) : NULL;
    if ((cap && !held) || devq__graph_rec_plan(r) < 0) {
        free(held);
        free(counted);
        return -ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < ncounted && n < cap; i++)
        held[n++] = &counted[i]->obj;
    for (uint32_t i = 0; i < rec->nops && n < cap; i++)
        if (rec->ops[i].kind == OP_EXEC)
            held[n++] = &rec->ops[i].u.exec.k->obj;
    n = unique((void **)held, n);
    for (uint32_t i = 0; i < n; i++) /* new references before the old go */
        devq__object_retain(held[i]);
    for (uint32_t i = 0; i < r->nheld; i++)
        devq__object_release(r->held[i]);
    free(r->held);
    free(r->counted);
    r->held = held;
    r->nheld = n;
    r->counted = counted;
    r->ncounted = ncounted;
    return 0;
}

static int find_fixups(struct graph_rec *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->rec.nops; i++) {
        uint8_t k = r->rec.ops[i].kind;
        n += k == OP_WAIT || k == OP_SIGNAL || k == OP_HOST_FN;
    }
    r->nfix = 0;
    if (!n)
        return 0;
    r->fix = malloc(n * sizeof *r->fix);
    r->step = calloc(n, sizeof *r->step);
    if (!r->fix || !r->step)
        return -ENOMEM;
    for (uint32_t i = 0; i < r->rec.nops; i++) {
        uint8_t k = r->rec.ops[i].kind;
        if (k == OP_WAIT || k == OP_SIGNAL || k == OP_HOST_FN)
            r->fix[r->nfix++] = i;
    }
    return 0;
}

int devq__graph_rec_copy(struct graph_rec *dst, struct devq_device *dev, const struct batch_record *src)
{
    memset(dst, 0, sizeof *dst);
    int failed = 0;
    struct batch_record *d = &dst->rec;
    d->ops = dup_array(src->ops, src->nops, sizeof *src->ops, &failed);
    d->args = dup_array(src->args, src->nargs, sizeof *src->args, &failed);
    d->uses = dup_array(src->uses, src->nuses, sizeof *src->uses, &failed);
    d->bytes = dup_array(src->bytes, src->nbytes, 1, &failed);
    d->nops = d->capops = src->nops;
    d->nargs = d->capargs = src->nargs;
    d->nuses = d->capuses = src->nuses;
    d->nbytes = d->capbytes = src->nbytes;
    if (failed || find_fixups(dst) < 0 || devq__graph_rec_bind(dst) < 0) {
        free(d->ops);
        free(d->args);
        free(d->uses);
        free(d->bytes);
        free(dst->fix);
        free(dst->step);
        memset(dst, 0, sizeof *dst);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < d->nops; i++) {
        struct op *o = &d->ops[i];
        if (o->kind == OP_WAIT || o->kind == OP_SIGNAL)
            devq__signal_retain(o->u.sig.s);
    }
    devq__device_retain(dev);
    dst->dev = dev;
    return 0;
}

void devq__graph_rec_fini(struct graph_rec *r)
{
    if (!r->dev)
        return;
    for (uint32_t i = 0; i < r->rec.nops; i++) {
        struct op *o = &r->rec.ops[i];
        if (o->kind == OP_WAIT || o->kind == OP_SIGNAL)
            devq__signal_release(o->u.sig.s);
    }
    for (uint32_t i = 0; i < r->nheld; i++)
        devq__object_release(r->held[i]);
    free(r->held);
    free(r->counted);
    free(r->fix);
    free(r->step);
    free(r->run);
    free(r->runbuf);
    free(r->rec.ops);
    free(r->rec.args);
    free(r->rec.uses);
    free(r->rec.bytes);
    struct devq_device *dev = r->dev;
    memset(r, 0, sizeof *r);
    devq_device_close(dev);
}
