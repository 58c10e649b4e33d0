/* SPDX-License-Identifier: MIT */
/* inline.c: a batch of only signals completed at submit. */
#ifndef DEVQ_LIB_INLINE_H
#define DEVQ_LIB_INLINE_H

struct devq_queue;
struct batch;

/* Complete b (its recorder role held) at submit when it only signals and
 * every earlier batch of q completed: 1 done (the role given back), 0 not
 * eligible (nothing changed). */
int devq__submit_inline(struct devq_queue *q, struct batch *b);

#endif
