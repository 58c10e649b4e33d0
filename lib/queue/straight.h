/* SPDX-License-Identifier: MIT */
/* straight.c: a one-shot batch issued in a straight line. */
#ifndef DEVQ_LIB_STRAIGHT_H
#define DEVQ_LIB_STRAIGHT_H

struct devq_queue;
struct batch;

/* Issue b (submitted, numbered, device lock held) in one pass when it is
 * stream work then signals and nothing on the device needs devq__issue's
 * resolvers (straight.c says exactly when): the error the backend gave
 * (0: none; the batch is done either way, as after devq__issue), or
 * DEVQ_ISSUE_NOT_STRAIGHT with nothing changed. */
#define DEVQ_ISSUE_NOT_STRAIGHT 2
int devq__issue_straight(struct devq_queue *q, struct batch *b);

#endif
