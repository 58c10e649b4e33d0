/* SPDX-License-Identifier: MIT */
/* batch_life.c: a batch's life -- the per-queue pool, the references it
 * holds, dropping one that never ran, forcing a failure on the rest of
 * it -- and the queue's first failure. */
#ifndef DEVQ_LIB_BATCH_LIFE_H
#define DEVQ_LIB_BATCH_LIFE_H

#include <stdint.h>

struct devq_queue;
struct batch;
struct op;

struct batch *devq__batch_get(struct devq_queue *q);
void devq__batch_put(struct devq_queue *q, struct batch *b);
/* The recorder, after a submit: take back the batches completion
 * returned and start fetching the lines the next recording writes. */
void devq__batch_pool_warm(struct devq_queue *q);
/* Back to the pool by the thread that holds q's recorder role (a batch
 * of signals completed at submit, inline.c, which wrote nothing but its
 * record and number): no atomic, as devq__batch_get pops. */
void devq__batch_put_private(struct devq_queue *q, struct batch *b);
void devq__batch_free(struct batch *b); /* memory of a recycled batch */
void devq__batch_release_refs(struct batch *b, uint32_t from_op);
/* Drop a batch that never ran (takes the device lock); err != 0 fails the
 * signals it would have signalled with that cause. */
void devq__batch_discard(struct batch *b, int err, const char *cause);
/* Fail the rest of b without running it; the end callback reports it.
 * First error wins; the cause keeps its root through any chain. */
void devq__batch_force(struct batch *b, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The batch ends inline: its forced failure is err from its end unless
 * one was forced (the cause then devq_errmsg()); batch.h. */
void devq__batch_force_end(struct batch *b, int err);
/* Buffer uses of ops from `from` on were not issued and never will be (device lock). */
void devq__batch_unissue(struct batch *b, uint32_t from);
void devq__op_issued(struct batch *b, struct op *o);
/* The queue's first failure since its last finish (first error wins). */
void devq__queue_record_failure(struct devq_queue *q, int err, const char *cause);

#endif
