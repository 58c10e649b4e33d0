/* SPDX-License-Identifier: MIT */
/* Emulator engine: graphs of kernel nodes, as CUDA and HIP graphs work.
 * A node's parameters are copied when it is added or set; instantiating
 * orders the nodes by their dependencies once; a launch is one op on a
 * stream that runs every node in that order, so it is ordered with the
 * stream's other work like any op.  An executable graph's parameters
 * live in a version: each launch holds the version current when it was
 * queued, and a change while launches hold it copies it first, so a
 * change reaches only later launches.  Destroying the executable graph
 * drops its hold: the last queued launch frees the version.
 *
 * DEVQ_EMU_GRAPH_KERNEL_FAIL=N:K[:ERROR]: the Nth graph launch of the
 * process (counted when queued) fails in its Kth node, after the nodes
 * before it ran, with ERROR (a sticky error of the face; default the
 * face's launch failure), as a faulting kernel would. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu_engine.h"

#define GRAPH_MAGIC 0x454d4752u
#define EXEC_MAGIC 0x454d4758u

/* One kernel node's launch with its parameters packed (emu__kernel_pack). */
struct kcall {
    emu_kernel_fn fn;
    uint32_t grid[3], block[3];
    void **blk;
    size_t nparams;
    size_t sizes[EMU_MAX_PARAMS];
    bool deref[EMU_MAX_PARAMS];
};

struct emu_graph_node {
    uint64_t graph_id; /* the graph it belongs to */
    size_t index;      /* in the graph's nodes */
    struct kcall k;
    size_t ndeps;
    size_t *deps; /* indices of the nodes it waits for */
};

struct emu_graph {
    uint32_t magic;
    uint64_t id;
    emu_graph_node **nodes;
    size_t n, cap;
};

/* What launches run: the nodes in dependency order.  Not changed while
 * more than the executable graph holds it. */
struct version {
    atomic_int refs;
    size_t n;
    struct kcall k[];
};

struct emu_graph_exec {
    uint32_t magic;
    uint64_t graph_id;
    size_t n;
    size_t *pos;        /* graph node index -> position in the run order */
    pthread_mutex_t mu; /* cur */
    struct version *cur;
};

/* One queued launch. */
struct launch {
    struct version *v;
    size_t fail_node; /* 1-based node that faults; 0: none */
    int fail_code;
};

static atomic_uint_fast64_t next_graph_id = 1;

/* ---- DEVQ_EMU_GRAPH_KERNEL_FAIL ---- */

static struct {
    pthread_once_t once;
    long launch;
    size_t node;
    int code;
    atomic_long launches;
} gfail = { .once = PTHREAD_ONCE_INIT };

static void parse_graph_fail(void)
{
    const char *v = getenv("DEVQ_EMU_GRAPH_KERNEL_FAIL");
    if (!v || !*v)
        return;
    char err[64] = "";
    long n = 0, k = 0;
    int got = sscanf(v, "%ld:%ld:%63s", &n, &k, err);
    const struct emu_face *face = emu__face();
    bool sticky = true;
    int code = EMU_E_LAUNCH_FAILED;
    if (got < 2 || n < 1 || k < 1 || (got == 3 && !face->parse_error(err, &code, &sticky)) || !sticky) {
        fprintf(stderr,
                "devq-emu: DEVQ_EMU_GRAPH_KERNEL_FAIL='%s': want N:K[:ERROR], N and K from 1, ERROR a sticky "
                "%s error; ignored\n",
                v, face->name);
        return;
    }
    gfail.launch = n;
    gfail.node = (size_t)k;
    gfail.code = code;
}

/* ---- parameters ---- */

static void kcall_free(struct kcall *k)
{
    free(k->blk);
    k->blk = NULL;
}

static int kcall_set(struct kcall *k, const struct emu_kernel_call *c)
{
    if (!c->fn || c->nparams > EMU_MAX_PARAMS || (c->nparams && (!c->params || !c->sizes)))
        return EMU_E_INVALID_VALUE;
    for (int d = 0; d < 3; d++)
        if (c->grid[d] == 0 || c->block[d] == 0)
            return EMU_E_INVALID_VALUE;
    void **blk;
    int st = emu__kernel_pack(c->params, c->sizes, c->deref, c->nparams, &blk);
    if (st)
        return st;
    kcall_free(k);
    k->fn = c->fn;
    memcpy(k->grid, c->grid, sizeof k->grid);
    memcpy(k->block, c->block, sizeof k->block);
    k->blk = blk;
    k->nparams = c->nparams;
    for (size_t i = 0; i < c->nparams; i++) {
        k->sizes[i] = c->sizes[i];
        k->deref[i] = c->deref && c->deref[i];
    }
    return 0;
}

/* dst = a copy of src, parameters included. */
static int kcall_copy(struct kcall *dst, const struct kcall *src)
{
    void *params[EMU_MAX_PARAMS];
    for (size_t i = 0; i < src->nparams; i++)
        params[i] = src->deref[i] ? (void *)&src->blk[i] : src->blk[i];
    struct emu_kernel_call c = {
        .fn = src->fn, .params = params, .sizes = src->sizes, .deref = src->deref, .nparams = src->nparams
    };
    memcpy(c.grid, src->grid, sizeof c.grid);
    memcpy(c.block, src->block, sizeof c.block);
    dst->blk = NULL;
    return kcall_set(dst, &c);
}

/* ---- graphs ---- */

int emu_graph_create(emu_graph **out)
{
    emu_graph *g = calloc(1, sizeof *g);
    if (!g)
        return EMU_E_OUT_OF_MEMORY;
    g->magic = GRAPH_MAGIC;
    g->id = atomic_fetch_add(&next_graph_id, 1);
    *out = g;
    return 0;
}

bool emu_graph_valid(const emu_graph *g)
{
    return g && g->magic == GRAPH_MAGIC;
}

static void node_free(emu_graph_node *n)
{
    kcall_free(&n->k);
    free(n->deps);
    free(n);
}

int emu_graph_destroy(emu_graph *g)
{
    if (!emu_graph_valid(g))
        return EMU_E_INVALID_HANDLE;
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    g->magic = 0;
    free(g);
    return 0;
}

int emu_graph_add_kernel(emu_graph *g, emu_graph_node *const *deps, size_t ndeps,
                         const struct emu_kernel_call *k, emu_graph_node **out)
{
    if (!emu_graph_valid(g))
        return EMU_E_INVALID_HANDLE;
    if (!out || !k || (ndeps && !deps))
        return EMU_E_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++)
        if (!deps[i] || deps[i]->graph_id != g->id)
            return EMU_E_INVALID_VALUE;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        emu_graph_node **nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return EMU_E_OUT_OF_MEMORY;
        g->nodes = nodes;
        g->cap = cap;
    }
    emu_graph_node *n = calloc(1, sizeof *n);
    size_t *d = calloc(ndeps ? ndeps : 1, sizeof *d);
    int st = n && d ? kcall_set(&n->k, k) : EMU_E_OUT_OF_MEMORY;
    if (st) {
        free(n);
        free(d);
        return st;
    }
    for (size_t i = 0; i < ndeps; i++)
        d[i] = deps[i]->index;
    n->graph_id = g->id;
    n->index = g->n;
    n->deps = d;
    n->ndeps = ndeps;
    g->nodes[g->n++] = n;
    *out = n;
    return 0;
}

static void version_unref(struct version *v)
{
    if (atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    for (size_t i = 0; i < v->n; i++)
        kcall_free(&v->k[i]);
    free(v);
}

static struct version *version_new(size_t n)
{
    struct version *v = calloc(1, sizeof *v + n * sizeof v->k[0]);
    if (v) {
        atomic_init(&v->refs, 1);
        v->n = n;
    }
    return v;
}

/* order[] = g's node indices with each node after its dependencies
 * (Kahn's algorithm over the dependency lists); false for a cycle. */
static bool sort_nodes(const emu_graph *g, size_t *order, bool *placed)
{
    size_t done = 0;
    while (done < g->n) {
        size_t before = done;
        for (size_t i = 0; i < g->n; i++) {
            if (placed[i])
                continue;
            bool ready = true;
            for (size_t d = 0; d < g->nodes[i]->ndeps && ready; d++)
                ready = placed[g->nodes[i]->deps[d]];
            if (ready) {
                placed[i] = true;
                order[done++] = i;
            }
        }
        if (done == before)
            return false;
    }
    return true;
}

static int exec_fill(emu_graph_exec *x, const emu_graph *g)
{
    size_t *order = calloc(g->n ? g->n : 1, sizeof *order);
    bool *placed = calloc(g->n ? g->n : 1, sizeof *placed);
    int st = order && placed ? 0 : EMU_E_OUT_OF_MEMORY;
    if (!st && !sort_nodes(g, order, placed))
        st = EMU_E_INVALID_VALUE;
    for (size_t i = 0; !st && i < g->n; i++) {
        x->pos[order[i]] = i;
        st = kcall_copy(&x->cur->k[i], &g->nodes[order[i]]->k);
    }
    free(order);
    free(placed);
    return st;
}

int emu_graph_instantiate(emu_graph *g, emu_graph_exec **out)
{
    if (!emu_graph_valid(g))
        return EMU_E_INVALID_HANDLE;
    if (!out)
        return EMU_E_INVALID_VALUE;
    emu_graph_exec *x = calloc(1, sizeof *x);
    size_t *pos = calloc(g->n ? g->n : 1, sizeof *pos);
    struct version *v = version_new(g->n);
    int st = x && pos && v ? 0 : EMU_E_OUT_OF_MEMORY;
    if (!st) {
        x->pos = pos;
        x->cur = v;
        x->n = g->n;
        st = exec_fill(x, g);
    }
    if (st) {
        if (v)
            version_unref(v);
        free(pos);
        free(x);
        return st;
    }
    x->magic = EXEC_MAGIC;
    x->graph_id = g->id;
    pthread_mutex_init(&x->mu, NULL);
    *out = x;
    return 0;
}

bool emu_graph_exec_valid(const emu_graph_exec *x)
{
    return x && x->magic == EXEC_MAGIC;
}

/* Under x->mu: x->cur held by x alone, copied first when a launch holds it. */
static int own_version(emu_graph_exec *x)
{
    if (atomic_load(&x->cur->refs) == 1)
        return 0;
    struct version *v = version_new(x->n);
    if (!v)
        return EMU_E_OUT_OF_MEMORY;
    for (size_t i = 0; i < x->n; i++) {
        int st = kcall_copy(&v->k[i], &x->cur->k[i]);
        if (st) {
            version_unref(v);
            return st;
        }
    }
    version_unref(x->cur);
    x->cur = v;
    return 0;
}

int emu_graph_exec_set_kernel(emu_graph_exec *x, const emu_graph_node *node, const struct emu_kernel_call *k)
{
    if (!emu_graph_exec_valid(x))
        return EMU_E_INVALID_HANDLE;
    if (!node || !k || node->graph_id != x->graph_id || node->index >= x->n)
        return EMU_E_INVALID_VALUE;
    pthread_mutex_lock(&x->mu);
    int st = own_version(x);
    if (!st)
        st = kcall_set(&x->cur->k[x->pos[node->index]], k);
    pthread_mutex_unlock(&x->mu);
    return st;
}

static int launch_run(void *arg)
{
    struct launch *l = arg;
    for (size_t i = 0; i < l->v->n; i++) {
        const struct kcall *k = &l->v->k[i];
        if (emu__trace())
            fprintf(stderr, "emu = graph node %zu/%zu\n", i + 1, l->v->n);
        if (i + 1 == l->fail_node)
            return l->fail_code;
        int st = emu__kernel_run(k->fn, k->grid, k->block, k->blk);
        if (st)
            return st;
    }
    return 0;
}

static void launch_release(void *arg)
{
    struct launch *l = arg;
    version_unref(l->v);
    free(l);
}

int emu_graph_launch(emu_graph_exec *x, emu_stream *s, struct emu_fail f)
{
    if (!emu_graph_exec_valid(x))
        return EMU_E_INVALID_HANDLE;
    pthread_once(&gfail.once, parse_graph_fail);
    struct launch *l = calloc(1, sizeof *l);
    if (!l)
        return EMU_E_OUT_OF_MEMORY;
    pthread_mutex_lock(&x->mu);
    l->v = x->cur;
    atomic_fetch_add(&l->v->refs, 1);
    pthread_mutex_unlock(&x->mu);
    /* Counted before it is queued: the worker may run it at once. */
    if (gfail.launch && atomic_fetch_add(&gfail.launches, 1) + 1 == gfail.launch) {
        l->fail_node = gfail.node;
        l->fail_code = gfail.code;
    }
    int st = emu__enqueue_call(s, launch_run, launch_release, l, f);
    if (st)
        launch_release(l);
    return st;
}

int emu_graph_exec_destroy(emu_graph_exec *x)
{
    if (!emu_graph_exec_valid(x))
        return EMU_E_INVALID_HANDLE;
    x->magic = 0;
    pthread_mutex_lock(&x->mu);
    struct version *v = x->cur;
    x->cur = NULL;
    pthread_mutex_unlock(&x->mu);
    version_unref(v);
    pthread_mutex_destroy(&x->mu);
    free(x->pos);
    free(x);
    return 0;
}
