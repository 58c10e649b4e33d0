/* SPDX-License-Identifier: MIT */
/* cpu backend: native graphs (graph_create/update/launch/destroy).  A
 * graph is a prebuilt op list: every launch's record (kernel, groups,
 * argument pointers) and its value bytes made once, in one allocation
 * (the body), so a launch of the graph queues one op and the worker runs
 * the records as they are: nothing is built, copied or allocated per
 * launch.
 *
 * The body is immutable while a queued launch holds it: a launch takes a
 * reference for its op, which the worker drops after running it; an
 * update with such references outstanding copies the body and changes
 * the copy (the launches already queued run with what they had), else
 * it changes the body in place.  graph_destroy drops the graph's own
 * reference: a queued launch keeps the body alive until it ran. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "launch.h"

#define CPU_ARG_BUFFER UINT32_MAX /* in a slot's sizes: a buffer argument */

struct cpu_graph_slot {
    size_t rec;   /* offset of the launch record in the body */
    size_t sizes; /* offset of its nargs value sizes (CPU_ARG_BUFFER: a buffer) */
    devq_launch l;
    /* A launch of one group (most of a graph's) is run here by calling
     * fn with its group prebuilt, not through the pool's job. */
    int one;
    devq_cpu_kernel_fn fn;
    devq_cpu_group g;
};

struct cpu_graph_body {
    struct pl_ref refs; /* the graph's (while current) + one per queued launch */
    size_t n, bytes;
    struct cpu_graph_slot slot[];
};

struct devq_pl_graph {
    struct cpu_graph_body *body; /* what launches queued from now on run */
};

static size_t align_up(size_t n)
{
    return (n + CPU_VALUE_ALIGN - 1) & ~(size_t)(CPU_VALUE_ALIGN - 1);
}

static struct cpu_launch *rec_of(struct cpu_graph_body *b, size_t i)
{
    return (struct cpu_launch *)((char *)b + b->slot[i].rec);
}

static uint32_t *sizes_of(struct cpu_graph_body *b, size_t i)
{
    return (uint32_t *)((char *)b + b->slot[i].sizes);
}

/* The entries as lib builds them for launch_list; -EINVAL names the
 * first that is not. */
static int check_entries(const struct devq_pl_launch_entry *e, size_t n, size_t *bytes)
{
    if (!n || !e)
        return cpu_host->error(-EINVAL, "cpu: graph_create: %zu entries at %p; give at least one", n,
                               (const void *)e);
    size_t total = align_up(sizeof(struct cpu_graph_body) + n * sizeof(struct cpu_graph_slot));
    for (size_t i = 0; i < n; i++) {
        if (!e[i].k || e[i].nargs > DEVQ_PL_LIST_ARGS_MAX || (e[i].nargs && !e[i].args))
            return cpu_host->error(-EINVAL,
                                   "cpu: graph_create: entry %zu has kernel %p and %u arguments at %p; "
                                   "at most %d, given with their kernel",
                                   i, (void *)e[i].k, e[i].nargs, (const void *)e[i].args,
                                   DEVQ_PL_LIST_ARGS_MAX);
        total += align_up(sizeof(struct cpu_launch) + e[i].nargs * sizeof(void *));
        total += align_up(e[i].nargs * sizeof(uint32_t));
        for (uint32_t a = 0; a < e[i].nargs; a++) {
            if (e[i].args[a].is_buffer)
                continue;
            if (e[i].args[a].size && !e[i].args[a].value)
                return cpu_host->error(-EINVAL,
                                       "cpu: graph_create: entry %zu argument %u: %zu value bytes at NULL", i,
                                       a, e[i].args[a].size);
            total += align_up(e[i].args[a].size);
        }
    }
    *bytes = total;
    return 0;
}

/* Entry i's arguments into its record (the value bytes at *at). */
static void put_args(struct cpu_graph_body *b, size_t i, const struct devq_pl_launch_entry *e, size_t *at)
{
    struct cpu_launch *cl = rec_of(b, i);
    uint32_t *sizes = sizes_of(b, i);
    for (uint32_t a = 0; a < e->nargs; a++) {
        if (e->args[a].is_buffer) {
            cl->args[a] = e->args[a].device_ptr;
            sizes[a] = CPU_ARG_BUFFER;
            continue;
        }
        cl->args[a] = (char *)b + *at;
        sizes[a] = (uint32_t)e->args[a].size;
        if (e->args[a].size)
            memcpy(cl->args[a], e->args[a].value, e->args[a].size);
        *at += align_up(e->args[a].size);
    }
    cl->nargs = e->nargs;
}

static void body_free(struct cpu_graph_body *b, size_t made)
{
    for (size_t i = 0; i < made; i++)
        cpu_kernel_unref(rec_of(b, i)->k);
    free(b);
}

static void body_put(struct cpu_graph_body *b)
{
    if (pl_ref_put(&b->refs))
        body_free(b, b->n);
}

int cpu_graph_create(devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t n, devq_pl_graph **out)
{
    (void)dev;
    size_t bytes = 0;
    int err = check_entries(e, n, &bytes);
    if (err)
        return err;
    devq_pl_graph *g = malloc(sizeof *g);
    struct cpu_graph_body *b = g ? cpu_aligned_alloc(CPU_VALUE_ALIGN, bytes) : NULL;
    if (!b) {
        free(g);
        return cpu_host->error(-ENOMEM, "cpu: out of memory for a graph of %zu launches", n);
    }
    memset(b, 0, bytes);
    pl_ref_init(&b->refs, 1);
    b->n = n;
    b->bytes = bytes;
    size_t at = align_up(sizeof *b + n * sizeof(struct cpu_graph_slot));
    for (size_t i = 0; i < n; i++) {
        b->slot[i].rec = at;
        at += align_up(sizeof(struct cpu_launch) + e[i].nargs * sizeof(void *));
        b->slot[i].sizes = at;
        at += align_up(e[i].nargs * sizeof(uint32_t));
        b->slot[i].l = e[i].l;
        struct cpu_launch *cl = rec_of(b, i);
        if ((err = cpu_launch_dims(cl, &e[i].l, cpu_kernel_entry(e[i].k))) != 0) {
            body_free(b, i);
            free(g);
            return err;
        }
        cl->k = e[i].k;
        cpu_kernel_ref(cl->k); /* the body runs it, maybe after kernel_destroy */
        b->slot[i].one = cl->total == 1;
        b->slot[i].fn = cpu_kernel_fn(cl->k);
        for (int d = 0; d < 3; d++) { /* group 0, as run_group builds it (kernel.c) */
            b->slot[i].g.group_id[d] = 0;
            b->slot[i].g.local_size[d] = cl->local[d];
            b->slot[i].g.global_size[d] = cl->global[d];
            b->slot[i].g.num_groups[d] = cl->groups[d];
        }
        put_args(b, i, &e[i], &at);
    }
    g->body = b;
    *out = g;
    return 0;
}

/* A copy of b (one reference, its own kernel references), value
 * pointers moved into the copy; NULL when out of memory.  Queued
 * launches may be running b: its atomics (the reference count, each
 * record's `positive`) are not copied but set anew. */
static struct cpu_graph_body *body_copy(struct cpu_graph_body *b)
{
    struct cpu_graph_body *c = cpu_aligned_alloc(CPU_VALUE_ALIGN, b->bytes);
    if (!c)
        return NULL;
    pl_ref_init(&c->refs, 1);
    c->n = b->n;
    c->bytes = b->bytes;
    memcpy(c->slot, b->slot, b->n * sizeof *b->slot);
    for (size_t i = 0; i < c->n; i++) {
        size_t end = i + 1 < c->n ? c->slot[i + 1].rec : c->bytes;
        const struct cpu_launch *from = rec_of(b, i);
        struct cpu_launch *cl = rec_of(c, i);
        memcpy(cl, from, offsetof(struct cpu_launch, positive));
        atomic_init(&cl->positive, 0);
        size_t rest = offsetof(struct cpu_launch, nargs);
        memcpy((char *)cl + rest, (const char *)from + rest, end - c->slot[i].rec - rest);
        const uint32_t *sizes = sizes_of(c, i);
        for (size_t a = 0; a < cl->nargs; a++)
            if (sizes[a] != CPU_ARG_BUFFER)
                cl->args[a] = (char *)c + ((char *)cl->args[a] - (char *)b);
        cpu_kernel_ref(cl->k);
    }
    return c;
}

int cpu_graph_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e)
{
    struct cpu_graph_body *b = g->body;
    if (i >= b->n || !e)
        return cpu_host->error(-EINVAL, "cpu: graph_update: entry %zu of a graph of %zu launches (%p)", i,
                               b->n, (const void *)e);
    struct cpu_launch *cl = rec_of(b, i);
    const uint32_t *sizes = sizes_of(b, i);
    int same = e->k == cl->k && e->nargs == cl->nargs && (!e->nargs || e->args) &&
               !memcmp(&e->l, &b->slot[i].l, sizeof e->l);
    for (uint32_t a = 0; same && a < e->nargs; a++)
        same = e->args[a].is_buffer ? sizes[a] == CPU_ARG_BUFFER
                                    : sizes[a] == e->args[a].size && (!sizes[a] || e->args[a].value);
    if (!same)
        return cpu_host->error(-EINVAL,
                               "cpu: graph_update: entry %zu changes its kernel, dimensions or arguments' "
                               "kinds or sizes; make a new graph",
                               i);
    if (atomic_load_explicit(&b->refs.n, memory_order_acquire) > 1) {
        /* Queued launches run the body as it is: change a copy. */
        struct cpu_graph_body *c = body_copy(b);
        if (!c)
            return cpu_host->error(-ENOMEM, "cpu: out of memory updating a graph of %zu launches", b->n);
        g->body = c;
        body_put(b);
        b = c;
        cl = rec_of(b, i);
    }
    for (uint32_t a = 0; a < e->nargs; a++) {
        if (e->args[a].is_buffer)
            cl->args[a] = e->args[a].device_ptr;
        else if (e->args[a].size)
            memcpy(cl->args[a], e->args[a].value, e->args[a].size);
    }
    return 0;
}

#define CPU_GRAPH_PAUSE_NS 100000000ull /* as the ring's pause (stream.c) */

int cpu_graph_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed)
{
    struct cpu_graph_body *b = g->body;
    /* A launch of the graph is b->n launches in one op: the producer
     * runs ahead by launches, as launch_list does (kernel.c). */
    uint64_t ahead = CPU_BACKLOG_OPS / b->n < 4 ? 4 : CPU_BACKLOG_OPS / b->n, at = s->enqueued_local;
    if (at - cpu_stream_completed(s) > ahead)
        cpu_stream_wait_seq(s, at - ahead / 2, cpu_deadline(CPU_GRAPH_PAUSE_NS));
    struct cpu_op *op = cpu_stream_queue(s, CPU_OP_GRAPH, "a graph launch");
    if (!op)
        return -ENOMEM;
    pl_ref_get(&b->refs);
    op->u.graph.body = b;
    op->u.graph.failed = failed;
    cpu_stream_publish(s);
    return 0;
}

/* The records in order; the first failure latches and skips the rest
 * (like the ops after a failed launch). */
void cpu_graph_run(devq_pl_stream *s, struct cpu_op *op)
{
    struct cpu_graph_body *b = op->u.graph.body;
    for (size_t i = 0; i < b->n && !s->error; i++) {
        const struct cpu_graph_slot *sl = &b->slot[i];
        struct cpu_launch *cl = rec_of(b, i);
        int err;
        if (sl->one) {
            int r = sl->fn(cl->args, &sl->g);
            err = r ? cpu_group_failed(cl, &sl->g, r) : 0;
        } else
            err = cpu_launch_exec(s, cl);
        if (err) {
            char where[64];
            snprintf(where, sizeof where, " (launch %zu of a graph of %zu)", i, b->n);
            if (op->u.graph.failed) /* before the callback that reports it: this thread runs that too */
                *op->u.graph.failed = (uint32_t)i;
            cpu_launch_latch(s, cl, err, where);
            atomic_store_explicit(&cl->positive, 0, memory_order_relaxed); /* read by the latch only */
        }
    }
    body_put(b);
}

void cpu_graph_destroy(devq_pl_graph *g)
{
    if (!g)
        return;
    body_put(g->body);
    free(g);
}
