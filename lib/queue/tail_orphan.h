/* SPDX-License-Identifier: MIT */
/* Signal tails whose batch ended before its end callback was queued.
 *
 * straight.c queues a batch's signal tails on the stream, then its end
 * callback; when the backend refuses that callback (out of memory) the
 * batch ends at once (devq__complete_inline) and drops its references,
 * while the tails may still run on the stream and touch their signals.
 * Each such signal keeps one reference, recorded here with the batch's
 * number; the stream runs every later batch's end callback after those
 * tails, so the first of them drops it (completion.c), and the queue's
 * destroy drops what is left once its stream stopped (queue_life.c). */
#ifndef DEVQ_TAIL_ORPHAN_H
#define DEVQ_TAIL_ORPHAN_H

#include <stdatomic.h>
#include <stdint.h>
#include "queue.h"

/* Keep a reference to s until the tails of batch seq ran.  When the
 * queue already keeps DEVQ_TAIL_ORPHANS, the reference is never dropped
 * (logged). */
void devq__tail_orphan_add(struct devq_queue *q, devq_signal *s, uint64_t seq);
/* Drop the references kept for batches before seq (on the stream, from
 * a later batch's end callback; UINT64_MAX: all, after the stream
 * stopped). */
void devq__tail_orphans_release(struct devq_queue *q, uint64_t seq);

static inline int devq__tail_orphans_any(const struct devq_queue *q)
{
    return atomic_load_explicit(&q->norphans, memory_order_relaxed) != 0;
}

#endif
