/* SPDX-License-Identifier: MIT */
/* Instantiated graphs and their parameters between submissions
 * (graph.h).  An exec owns its own copy of the record, so a change here
 * reaches the next submission and none before it: a submission copies
 * the record into its batch, and a run's native handle is updated only
 * when no submission still to issue holds it, else copied
 * (graph_native.h). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "buffer_fail.h"
#include "error.h"
#include "graph.h"
#include "graph_native.h"
#include "kernel.h"

static int graph_check(const devq_graph *g, const char *fn)
{
    if (!g)
        return devq__err(-EINVAL, "%s: graph is NULL", fn);
    if (g->magic != DEVQ_MAGIC_GRAPH)
        return devq__err(-EINVAL, "%s: %p is not a live graph (destroyed?)", fn, (const void *)g);
    return 0;
}

/* 0 with the exec held for this call, or -EINVAL / -EBUSY. */
static int enter(devq_graph_exec *ge, const char *fn)
{
    if (!ge)
        return devq__err(-EINVAL, "%s: graph exec is NULL", fn);
    if (ge->magic != DEVQ_MAGIC_GRAPH_EXEC)
        return devq__err(-EINVAL, "%s: %p is not a live graph exec (destroyed?)", fn, (void *)ge);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&ge->busy, &expected, 1))
        return devq__err(-EBUSY,
                         "%s: the graph exec is being submitted or changed by another thread; "
                         "use each exec from one thread at a time",
                         fn);
    return 0;
}

static int leave(devq_graph_exec *ge, int r)
{
    atomic_store(&ge->busy, 0);
    return r;
}

/* A buffer the exec may use from now on: live and of its device. */
static int usable_buffer(const struct graph_rec *r, const devq_buffer *b, const char *fn, const char *what)
{
    int e = devq__buffer_check(b, fn);
    if (e < 0)
        return e;
    if (b->dev != r->dev)
        return devq__err(
            -EINVAL,
            "%s: %s %s belongs to %s:%d, the graph to %s:%d; rebind to a buffer of the graph's device", fn,
            what, devq__buffer_label(b).s, b->dev->info.backend, b->dev->info.ordinal, r->dev->info.backend,
            r->dev->info.ordinal);
    return 0;
}

DEVQ_API int devq_graph_instantiate(devq_graph *g, devq_graph_exec **out)
{
    const char *fn = "devq_graph_instantiate";
    int r = graph_check(g, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    for (uint32_t i = 0; i < g->r.ncounted; i++)
        if ((r = devq__buffer_check(g->r.counted[i], fn)) < 0)
            return r; /* freed since the capture */
    devq_graph_exec *ge = calloc(1, sizeof *ge);
    if (!ge || devq__graph_rec_copy(&ge->r, g->r.dev, &g->r.rec) < 0) {
        free(ge);
        return devq__err(-ENOMEM, "%s: out of memory for an exec of %u ops", fn, g->r.rec.nops);
    }
    devq__graph_native_make(&ge->r);
    ge->magic = DEVQ_MAGIC_GRAPH_EXEC;
    *out = ge;
    return 0;
}

/* Op `op` of ge, which must be of one of the kinds in mask (bits by
 * enum op_kind); else -EINVAL naming it. */
static int find_op(devq_graph_exec *ge, size_t op, unsigned mask, const char *want, const char *fn,
                   struct op **out)
{
    if (op >= ge->r.rec.nops)
        return devq__err(-EINVAL,
                         "%s: op %zu is out of range: the graph has %u ops (0-based, in capture order)", fn,
                         op, ge->r.rec.nops);
    struct op *o = &ge->r.rec.ops[op];
    if (!(mask & (1u << o->kind)))
        return devq__err(-EINVAL, "%s: op %zu was recorded by %s; only %s ops can be changed this way", fn,
                         op, devq__graph_op_name(o->kind), want);
    *out = o;
    return 0;
}

/* The use of exec op o's buffer argument `index`: its buffer arguments'
 * uses are its slice of uses, in argument order (record.c). */
static struct buffer_use *arg_use(struct graph_rec *r, const struct op *o, size_t index)
{
    uint32_t k = 0;
    for (size_t i = 0; i < index; i++)
        k += r->rec.args[o->u.exec.first_arg + i].is_buffer;
    return &r->rec.uses[o->first_use + k];
}

static int set_buffer_arg(devq_graph_exec *ge, struct op *o, size_t op, size_t index, const devq_arg *arg,
                          const char *fn)
{
    struct buffer_use *u = arg_use(&ge->r, o, index);
    int r = usable_buffer(&ge->r, arg->buf, fn, "argument");
    if (r < 0)
        return r;
    if (arg->access != u->access)
        return devq__err(-EINVAL,
                         "%s: op %zu argument %zu: access %d differs from the captured %d; "
                         "keep the access or record a new graph",
                         fn, op, index, (int)arg->access, (int)u->access);
    struct devq_pl_arg *pa = &ge->r.rec.args[o->u.exec.first_arg + index];
    devq_buffer *old = u->buf;
    void *old_ptr = pa->device_ptr;
    u->buf = arg->buf;
    pa->device_ptr = arg->buf->dptr;
    if ((r = devq__graph_rec_bind(&ge->r)) < 0) {
        u->buf = old;
        pa->device_ptr = old_ptr;
        return devq__err(r, "%s: out of memory", fn);
    }
    devq__graph_native_changed(&ge->r, (uint32_t)op);
    return 0;
}

DEVQ_API int devq_graph_exec_set_arg(devq_graph_exec *ge, size_t op, size_t index, const devq_arg *arg)
{
    const char *fn = "devq_graph_exec_set_arg";
    int r = enter(ge, fn);
    if (r < 0)
        return r;
    struct op *o;
    if ((r = find_op(ge, op, 1u << OP_EXEC, "devq_queue_exec", fn, &o)) < 0)
        return leave(ge, r);
    if (index >= o->u.exec.nargs)
        return leave(ge, devq__err(-EINVAL, "%s: op %zu: argument %zu is out of range: the launch has %u", fn,
                                   op, index, o->u.exec.nargs));
    if (!arg)
        return leave(ge, devq__err(-EINVAL, "%s: arg is NULL", fn));
    struct devq_pl_arg *pa = &ge->r.rec.args[o->u.exec.first_arg + index];
    if (!pa->is_buffer != !arg->buf)
        return leave(ge, devq__err(-EINVAL,
                                   "%s: op %zu argument %zu was captured as a %s; a graph cannot change "
                                   "an argument between buffer and value: record a new graph",
                                   fn, op, index, pa->is_buffer ? "buffer" : "value"));
    if (arg->buf)
        return leave(ge, set_buffer_arg(ge, o, op, index, arg, fn));
    if (!arg->value || arg->size != pa->size)
        return leave(ge, devq__err(-EINVAL,
                                   "%s: op %zu argument %zu: a value of %zu bytes at %p; the capture's "
                                   "value has %zu: give a pointer to as many bytes",
                                   fn, op, index, arg->size, arg->value, pa->size));
    memcpy(ge->r.rec.bytes + (uintptr_t)pa->value, arg->value, arg->size);
    devq__graph_native_changed(&ge->r, (uint32_t)op);
    return leave(ge, 0);
}

/* Every reference to old in the ops becomes new (uses, the arguments
 * built from them, the copy/fill/transfer fields). */
static void rebind(struct graph_rec *r, devq_buffer *old, devq_buffer *nb)
{
    for (uint32_t i = 0; i < r->rec.nops; i++) {
        struct op *o = &r->rec.ops[i];
        if (o->kind == OP_EXEC)
            for (uint32_t a = 0, k = 0; a < o->u.exec.nargs; a++) {
                struct devq_pl_arg *pa = &r->rec.args[o->u.exec.first_arg + a];
                if (pa->is_buffer && r->rec.uses[o->first_use + k++].buf == old)
                    pa->device_ptr = nb->dptr;
            }
        else if (o->kind == OP_COPY) {
            if (o->u.copy.dst == old)
                o->u.copy.dst = nb;
            if (o->u.copy.src == old)
                o->u.copy.src = nb;
        } else if (o->kind == OP_FILL && o->u.fill.dst == old)
            o->u.fill.dst = nb;
        else if ((o->kind == OP_READ || o->kind == OP_WRITE) && o->u.xfer.buf == old)
            o->u.xfer.buf = nb;
    }
    for (uint32_t i = 0; i < r->rec.nuses; i++)
        if (r->rec.uses[i].buf == old)
            r->rec.uses[i].buf = nb;
}

DEVQ_API int devq_graph_exec_set_buffer(devq_graph_exec *ge, devq_buffer *old_buf, devq_buffer *new_buf)
{
    const char *fn = "devq_graph_exec_set_buffer";
    int r = enter(ge, fn);
    if (r < 0)
        return r;
    uint32_t i = 0;
    while (i < ge->r.ncounted && ge->r.counted[i] != old_buf)
        i++;
    if (i == ge->r.ncounted)
        return leave(ge, devq__err(-EINVAL,
                                   "%s: old_buf %p is not used by the graph; pass a buffer it was captured "
                                   "with (or last rebound to)",
                                   fn, (void *)old_buf));
    if ((r = usable_buffer(&ge->r, new_buf, fn, "new_buf")) < 0)
        return leave(ge, r);
    if (new_buf->size < old_buf->size)
        return leave(ge, devq__err(-EINVAL,
                                   "%s: %s has %zu bytes, fewer than the %zu of %s it replaces; "
                                   "rebind to a buffer at least as large",
                                   fn, devq__buffer_label(new_buf).s, new_buf->size, old_buf->size,
                                   devq__buffer_label(old_buf).s));
    if (new_buf == old_buf)
        return leave(ge, 0);
    rebind(&ge->r, old_buf, new_buf);
    if ((r = devq__graph_rec_bind(&ge->r)) < 0) {
        rebind(&ge->r, new_buf, old_buf);
        return leave(ge, devq__err(r, "%s: out of memory", fn));
    }
    devq__graph_native_rebound(&ge->r, new_buf);
    return leave(ge, 0);
}

DEVQ_API int devq_graph_exec_set_value(devq_graph_exec *ge, size_t op, uint64_t value, int64_t step)
{
    const char *fn = "devq_graph_exec_set_value";
    int r = enter(ge, fn);
    if (r < 0)
        return r;
    struct op *o;
    if ((r = find_op(ge, op, (1u << OP_WAIT) | (1u << OP_SIGNAL), "devq_queue_wait and devq_queue_signal", fn,
                     &o)) < 0)
        return leave(ge, r);
    uint32_t lo = 0, hi = ge->r.nfix; /* fix is in op order */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (ge->r.fix[mid] < op)
            lo = mid + 1;
        else
            hi = mid;
    }
    o->u.sig.v = value;
    ge->r.step[lo] = step;
    return leave(ge, 0);
}

DEVQ_API void devq_graph_exec_destroy(devq_graph_exec *ge)
{
    /* Submissions hold their own references (graph_submit.c), native
     * handles included: nothing in flight points into the exec. */
    if (enter(ge, "devq_graph_exec_destroy") < 0)
        return;
    ge->magic = 0;
    devq__graph_native_fini(&ge->r);
    devq__graph_rec_fini(&ge->r);
    free(ge);
}

/* For graph_submit.c: the exec, held for one submission. */
int devq__graph_exec_enter(devq_graph_exec *ge, const char *fn)
{
    return enter(ge, fn);
}

void devq__graph_exec_leave(devq_graph_exec *ge)
{
    leave(ge, 0);
}
