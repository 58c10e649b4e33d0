/* SPDX-License-Identifier: MIT */
/* defer.c: submitting a batch (issue or park) and the deferred FIFO. */
#ifndef DEVQ_LIB_DEFER_H
#define DEVQ_LIB_DEFER_H

#include <devq/devq.h>

struct devq_queue;
struct batch;

/* Submit (issue or park) a batch; issue what a queue's FIFO lets go
 * (device lock held). */
int devq__submit_locked(struct devq_queue *q, struct batch *b);
void devq__drain_deferred(struct devq_queue *q);
/* The deferral state's other writers (batch.h): a batch the pool hands
 * out, and a destroy taking the head's resume notify to cancel it. */
void devq__defer_reset(struct batch *b);
devq_notify *devq__defer_take_notify(struct batch *b);

#endif
