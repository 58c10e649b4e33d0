/* SPDX-License-Identifier: MIT */
/* issue.c: issuing a submitted batch to the backend. */
#ifndef DEVQ_LIB_ISSUE_H
#define DEVQ_LIB_ISSUE_H

struct devq_queue;
struct batch;

/* Issue a submitted batch (device lock held): DEVQ_ISSUE_PARK (the batch
 * must park at its park_at), or the error the backend gave (0: none; the
 * batch is done either way). */
#define DEVQ_ISSUE_PARK 1
int devq__issue(struct devq_queue *q, struct batch *b);
/* The issue state's other writers (batch.h): a batch the pool hands out,
 * and the end callback once it traced the batch's marks. */
void devq__issue_reset(struct batch *b);
void devq__issue_trace_done(struct batch *b);
/* Mark the signals after rec's last op that does work as delivered by
 * the end callback (a batch's first issue; a graph's plan, graph_plan.c,
 * whose replays then skip it). */
struct batch_record;
void devq__issue_mark_end_signals(struct batch_record *rec);
/* Send one stream op (fill, copy, transfer, launch) of b, bound already,
 * to its queue's stream: 0 or the backend's error (straight.c). */
struct devq_device;
struct op;
int devq__issue_one(struct devq_device *dev, struct batch *b, struct op *o);

#endif
