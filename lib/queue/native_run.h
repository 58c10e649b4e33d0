/* SPDX-License-Identifier: MIT */
/* A native graph run's handle as a replay sees it (graph_native.h has
 * the rest): the refcounted wrapper of the plugin's devq_pl_graph and
 * the count of replays that have not issued it yet.  Its own header so
 * that issue.c, which queues the handle, does not include the graph
 * code (graph_native.h needs graph.h, which needs batch_life.h, which
 * needs issue.h: an include knot). */
#ifndef DEVQ_LIB_NATIVE_RUN_H
#define DEVQ_LIB_NATIVE_RUN_H

#include <stdatomic.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>
#include "object.h"

#define DEVQ_MAGIC_GRAPH_NATIVE 0x474e4154u /* "GNAT" */

struct graph_native {
    struct devq_object obj;
    _Atomic uint32_t unissued; /* replays holding it that have not issued it */
    struct devq_device *dev;   /* one device reference */
    devq_pl_graph *g;
    /* One reference to each launch's kernel: the handle points at them. */
    devq_kernel **kernels;
    uint32_t nkernels;
};

/* A replay takes n for one submission (graph_submit.c), and issued or
 * skipped its run (issue.c); the replay's held reference keeps n alive. */
static inline void devq__graph_native_submitted(struct graph_native *n)
{
    atomic_fetch_add_explicit(&n->unissued, 1, memory_order_relaxed);
}
static inline void devq__graph_native_issued(struct graph_native *n)
{
    atomic_fetch_sub_explicit(&n->unissued, 1, memory_order_release);
}

#endif
