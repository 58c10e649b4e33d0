/* SPDX-License-Identifier: MIT */
/* Completing a signal-only batch at submit, on the submitting thread.
 *
 * A batch whose ops are only signals (devq_queue_signal + submit, or an
 * empty submit) does nothing on the stream: the normal path queues its
 * end callback only to set those signals after all earlier work of the
 * queue.  When every batch submitted before it has completed (the
 * queue's timeline says so), that point is now: the stream has nothing
 * of this queue left to run, so the submitting thread sets the signals
 * itself and the batch never crosses to the stream thread.
 *
 * Taken only when the outcome is provably the one the end callback would
 * give (see eligible()):
 *  - order: the timeline reached the previous batch, so every earlier
 *    batch ran, delivered its verdict (a failed one failed its signals
 *    first) and published the queue's completion state updated here;
 *  - failure: the end callback's walk fails a signal-only batch only
 *    through the stream's error latch, a queue destroy (cancel_after) or
 *    a lost device.  The backend's stream_idle op says nothing queued on
 *    the stream is left to run and no error is latched (ops queued
 *    between batches, such as the guard's canary fills, can latch one);
 *    a backend without that op keeps the normal path;
 *  - logging and tracing: off here, so nothing they would show changes;
 *  - counters: submitted and completed, as the normal path counts them.
 * No tracker producer record is made: the value is set before submit
 * returns, and an issue that looks for the producer of a value sees the
 * value reached first (or, racing on another thread, parks and is
 * resumed by this set like by any host set). */
#include "config.h"
#include "batch.h"
#include "inline.h"
#include "log.h"
#include "mem.h"
#include "queue.h"
#include "signal_int.h"
#include "trace.h"

static int eligible(const struct devq_queue *q, const struct batch *b, uint64_t seq)
{
    for (uint32_t i = 0; i < b->rec.nops; i++)
        if (b->rec.ops[i].kind != OP_SIGNAL)
            return 0;
    const struct devq_device *dev = q->dev;
    if (!dev->ops->stream_idle)
        return 0;
    if (atomic_load_explicit(&dev->lost, memory_order_relaxed) ||
        atomic_load_explicit(&q->cancel_after, memory_order_relaxed) != UINT64_MAX)
        return 0;
    if (devq__trace_on() || DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        return 0;
    /* Acquire: what the completing thread did before it advanced the
     * timeline (done_upto under done_lock, the verdicts, the work) is
     * visible from here on. */
    return devq_signal_value(q->timeline) == seq - 1 && dev->ops->stream_idle(q->stream.pl);
}

int devq__submit_inline(struct devq_queue *q, struct batch *b)
{
    /* The recorder role is held: nobody else numbers batches. */
    uint64_t seq = atomic_load_explicit(&q->submitted, memory_order_relaxed) + 1;
    if (!eligible(q, b, seq))
        return 0;
    struct devq_device *dev = q->dev;
    b->seq = seq;
    atomic_store_explicit(&q->submitted, seq, memory_order_release);
    for (uint32_t i = 0; i < b->rec.nops; i++) /* b holds each until the release below */
        devq__signal_advance_held(b->rec.ops[i].u.sig.s, b->rec.ops[i].u.sig.v);
    devq__mem_reap_soon(dev);
    /* Signal ops hold their signal and nothing in b->held. */
    for (uint32_t i = 0; i < b->rec.nops; i++)
        devq__signal_release(b->rec.ops[i].u.sig.s);
    if (b->held.n)
        devq__ref_set_release(&b->held);
    /* Submitted and completed, in one count (devq_stats_get). */
    atomic_fetch_add_explicit(&dev->stats.batches_inline, 1, memory_order_relaxed);
    /* No batch of q is in flight, so no callback reads or writes these
     * until the next issue, which this store happens-before. */
    q->done_upto = seq;
    b->next = q->free_private;
    q->free_private = b;
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    /* Last, as in devq__batch_unref: once the timeline moves, a finishing
     * thread may destroy q (so no reference of ours is assumed held). */
    devq__signal_advance(q->timeline, seq);
    return 1;
}
