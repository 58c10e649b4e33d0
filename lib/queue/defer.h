/* SPDX-License-Identifier: MIT */
/* defer.c: submitting a batch (issue or park) and the deferred FIFO. */
#ifndef DEVQ_LIB_DEFER_H
#define DEVQ_LIB_DEFER_H

struct devq_queue;
struct batch;

/* Submit (issue or park) a batch; issue what a queue's FIFO lets go
 * (device lock held). */
int  devq__submit_locked(struct devq_queue *q, struct batch *b);
void devq__drain_deferred(struct devq_queue *q);

#endif
