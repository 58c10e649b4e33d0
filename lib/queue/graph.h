/* SPDX-License-Identifier: MIT */
/* Graphs: record once, submit many (devq_graph_instantiate(3)).
 *
 * A capture is an ordinary open batch that is never submitted:
 * devq_queue_begin_capture marks the queue, the builder calls record
 * into its open batch exactly as they always do (same checks, same
 * sticky errors), and devq_queue_end_capture copies what was recorded
 * into a graph_rec and drops the batch.  Instantiating copies the
 * graph_rec again, so an exec owns everything it replays; a submission
 * copies the exec's record into a pooled batch (arrays that keep their
 * capacity: no allocation once warm) and hands it to the same submit
 * path as devq_queue_submit, so its buffers are bound by the tracker,
 * deferred, failed and completed exactly like a one-shot batch.
 *
 * graph.c: capture and devq_graph; graph_rec.c: the shared record
 * (copy, references, rebinding); graph_exec.c: the exec and its
 * parameter updates; graph_submit.c: submission. */
#ifndef DEVQ_LIB_GRAPH_H
#define DEVQ_LIB_GRAPH_H

#include <stdatomic.h>
#include <stdint.h>
#include <devq/devq.h>
#include "batch.h"

#define DEVQ_MAGIC_GRAPH 0x47524150u      /* "GRAP" */
#define DEVQ_MAGIC_GRAPH_EXEC 0x47455845u /* "GEXE" */

struct devq_device;
struct devq_object;

/* What a capture recorded, owned outright: the arrays are exactly
 * sized, every op's owner pointer is meaningless until a submission
 * sets it, and value arguments keep their offsets into bytes (issue.c
 * points them there on each batch's own copy). */
struct graph_rec {
    struct devq_device *dev; /* one device reference */
    struct batch_record rec;
    /* One reference to each distinct buffer and kernel the ops use;
     * signals are held once per wait/signal op, like a batch does. */
    struct devq_object **held;
    uint32_t nheld;
    /* The buffers whose last use in the graph holds a batch's
     * `unissued` count (the uses marked counted), one per buffer. */
    devq_buffer **counted;
    uint32_t ncounted;
    /* Ops a submission touches besides copying: waits and signals (a
     * reference per op, a value that may advance) and host functions
     * (their owner); in op order. */
    uint32_t *fix;
    int64_t *step; /* per fix entry: added to the op's value after each submission */
    uint32_t nfix;
    /* The run plan (graph_plan.c): launch_list runs and their buffers,
     * copied into each replay; nowaits: no wait or barrier op. */
    struct run_plan *run;
    uint32_t nrun;
    struct run_buf *runbuf;
    uint32_t nrunbuf;
    int nowaits;
};

struct devq_graph {
    uint32_t magic;
    struct graph_rec r;
};

struct devq_graph_exec {
    uint32_t magic;
    /* One user at a time (submit or set_*): another gets -EBUSY. */
    _Atomic int busy;
    struct graph_rec r;
};

/* graph_rec.c */
/* Copy src (a capture's record or another graph_rec) into dst and take
 * dst's references; 0 or -ENOMEM (dst then empty). */
int devq__graph_rec_copy(struct graph_rec *dst, struct devq_device *dev, const struct batch_record *src);
/* Recompute held, counted and fix from the ops, taking the new
 * references before dropping the old; 0 or -ENOMEM (unchanged). */
int devq__graph_rec_bind(struct graph_rec *r);
void devq__graph_rec_fini(struct graph_rec *r);
/* graph_plan.c: (re)compute r's run plan and mark its end signals, once
 * the uses carry their counted marks; 0 or -ENOMEM (plan unchanged). */
int devq__graph_rec_plan(struct graph_rec *r);
/* The name of op kind k as the builder call that records it. */
const char *devq__graph_op_name(uint8_t kind);

/* graph_exec.c: hold ge for one submission (-EBUSY when another thread
 * uses it), and let it go. */
int devq__graph_exec_enter(devq_graph_exec *ge, const char *fn);
void devq__graph_exec_leave(devq_graph_exec *ge);

#endif
