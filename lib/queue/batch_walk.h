/* SPDX-License-Identifier: MIT */
/* batch_walk.c: a batch's verdict, walked in its callbacks. */
#ifndef DEVQ_LIB_BATCH_WALK_H
#define DEVQ_LIB_BATCH_WALK_H

#include <stdint.h>

struct batch;

/* The batch's verdict, op by op, in its callbacks (stream
 * order).  walk applies ops [walked, upto) to the buffers they use;
 * status is what the backend reported for them; final (the end
 * callback) also applies a forced error.  Returns the batch's failure. */
int devq__batch_walk(struct batch *b, uint32_t upto, int status, int final);
/* Fail the walk from where it is: with the plugin's detail for status
 * (devq_errmsg() on this thread), or with a given cause. */
void devq__batch_walk_fail(struct batch *b, int status);
void devq__batch_walk_fail_cause(struct batch *b, int err, const char *cause);
void devq__batch_walk_inline(struct batch *b, int err, const char *cause);
/* The end callback's final walk when it has nothing to do (status 0,
 * nothing failed anywhere): 1 and the batch walked, else 0 (walk it). */
int devq__batch_walk_clean_end(struct batch *b);
/* Nothing walked yet: a batch the pool hands out. */
void devq__batch_walk_reset(struct batch *b);


#endif
