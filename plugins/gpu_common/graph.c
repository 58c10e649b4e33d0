/* SPDX-License-Identifier: MIT */
/* Native graphs (devq_plugin.h's graph_* ops): a run of launches made
 * once into a CUDA or HIP graph, a chain of kernel nodes each depending
 * on the one before (the run's order is its meaning), instantiated once
 * and launched as one stream op per submission.  The driver copies each
 * node's arguments when the node is added or set, so lib's entries are
 * read during the call only; a set reaches only launches queued after
 * it, and destroying an executable graph with launches in flight is the
 * driver's to defer (cuGraphExecDestroy's rule).  Without the driver's
 * graph calls the ops say so (-ENOTSUP) and libdevq replays the launches;
 * DEVQ_CAP_GRAPH_NATIVE is off then (open.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

struct devq_pl_graph {
    struct devq_pl_device *dev;
    void *graph; /* CUgraph, hipGraph_t: kept for its nodes */
    void *exec;  /* CUgraphExec, hipGraphExec_t */
    size_t n;
    void **nodes; /* CUgraphNode, hipGraphNode_t: entry i's */
};

static int unsupported(const char *op)
{
    return gpu_host->error(-ENOTSUP, "%s: %s: %s; libdevq replays the launches instead", gpu_backend, op,
                           gpu_missing.graph);
}

/* A failed call on node i of a graph: a sticky status loses the device. */
static int node_fail(struct devq_pl_device *dev, const char *call, size_t i, int r)
{
    if (gpu_drv.sticky(r))
        return gpu_drv_fail(dev, call, r);
    char d[256];
    return gpu_host->error(gpu_drv.to_errno(r), "%s: %s (launch %zu of the graph): %s", gpu_backend, call, i,
                           gpu_drv.desc(r, d, sizeof d));
}

/* Entry i's launch as the driver's arguments: 0 or a reported errno. */
static int entry_check(struct devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t i)
{
    if (!e->k || e->k->dev != dev || (e->nargs && !e->args) || e->nargs > DEVQ_PL_LIST_ARGS_MAX)
        return gpu_host->error(-EINVAL,
                               "%s: graph entry %zu: need a kernel of this device and at most %d "
                               "arguments",
                               gpu_backend, i, DEVQ_PL_LIST_ARGS_MAX);
    return 0;
}

/* Add or set node i from entry e (node i exists when set is true). */
static int put_node(struct devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e, bool set)
{
    int err = entry_check(g->dev, e, i);
    struct gpu_launch gl;
    if (err || (err = gpu_launch_prepare(&gl, &e->l, e->args, e->nargs)))
        return err;
    int r = set ? gpu_drv.graph_set_kernel(g->exec, g->nodes[i], e->k->function, &gl, e->l.shared_bytes)
                : gpu_drv.graph_add_kernel(&g->nodes[i], g->graph, i ? g->nodes[i - 1] : NULL, e->k->function,
                                           &gl, e->l.shared_bytes);
    gpu_launch_release(&gl);
    if (r)
        return node_fail(g->dev, set ? gpu_drv.call.graph_set_kernel : gpu_drv.call.graph_add_kernel, i, r);
    return 0;
}

static void graph_free(struct devq_pl_graph *g)
{
    if (g->exec)
        gpu_drv.graph_exec_destroy(g->exec);
    if (g->graph)
        gpu_drv.graph_destroy(g->graph);
    free(g->nodes);
    free(g);
}

int gpu_graph_create(devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t n, devq_pl_graph **out)
{
    if (*gpu_missing.graph)
        return unsupported("graph_create");
    if (!dev || !e || !n || !out)
        return gpu_host->error(-EINVAL, "%s: graph_create: need a device and at least one launch",
                               gpu_backend);
    int err = gpu_enter(dev);
    if (err)
        return err;
    struct devq_pl_graph *g = gpu_zalloc(sizeof *g, "a graph");
    void **nodes = g ? calloc(n, sizeof *nodes) : NULL;
    if (!nodes) {
        free(g);
        return g ? gpu_host->error(-ENOMEM, "%s: out of memory for a graph of %zu launches", gpu_backend, n)
                 : -ENOMEM;
    }
    g->dev = dev;
    g->n = n;
    g->nodes = nodes;
    int r = gpu_drv.graph_create(&g->graph);
    if (r) {
        g->graph = NULL;
        err = gpu_drv_fail(dev, gpu_drv.call.graph_create, r);
    }
    for (size_t i = 0; !err && i < n; i++)
        err = put_node(g, i, &e[i], false);
    if (!err && (r = gpu_drv.graph_instantiate(&g->exec, g->graph))) {
        g->exec = NULL;
        err = gpu_drv_fail(dev, gpu_drv.call.graph_instantiate, r);
    }
    if (err) {
        graph_free(g);
        return err;
    }
    *out = g;
    return 0;
}

int gpu_graph_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e)
{
    if (!g || !e || i >= g->n)
        return gpu_host->error(-EINVAL, "%s: graph_update: launch %zu of a graph of %zu", gpu_backend, i,
                               g ? g->n : 0);
    int err = gpu_enter(g->dev);
    return err ? err : put_node(g, i, e, true);
}

/* failed is left alone: a faulting node of a driver graph is the
 * context's sticky error, which names no node (the whole run fails). */
int gpu_graph_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed)
{
    (void)failed;
    int err = gpu_enter(s->dev);
    if (err)
        return err;
    int r = gpu_drv.graph_launch(g->exec, s->stream);
    return gpu_drv_check(s->dev, gpu_drv.call.graph_launch, r);
}

void gpu_graph_destroy(devq_pl_graph *g)
{
    if (!g)
        return;
    gpu_drv.make_current(g->dev);
    graph_free(g);
}
