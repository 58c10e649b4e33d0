/* SPDX-License-Identifier: MIT */
/* Signal tails whose batch ended before its end callback was queued
 * (tail_orphan.h). */
#include "config.h"
#include "log.h"
#include "signal_int.h"
#include "tail_orphan.h"

void devq__tail_orphan_add(struct devq_queue *q, devq_signal *s, uint64_t seq)
{
    devq__signal_retain(s);
    pthread_mutex_lock(&q->done_lock);
    uint32_t n = atomic_load_explicit(&q->norphans, memory_order_relaxed);
    if (n < DEVQ_TAIL_ORPHANS) {
        q->orphans[n] = (struct devq_tail_orphan){ s, seq };
        atomic_store_explicit(&q->norphans, n + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->done_lock);
    if (n >= DEVQ_TAIL_ORPHANS)
        devq__log(DEVQ_LOG_BASIC,
                  "%s batch %llu: out of memory queueing its end callback after its signal tails, %u "
                  "times without a batch completing in between: one reference to %s is kept for ever",
                  devq__queue_label(q).s, (unsigned long long)seq, (unsigned)n, devq__signal_label(s).s);
}

void devq__tail_orphans_release(struct devq_queue *q, uint64_t seq)
{
    devq_signal *drop[DEVQ_TAIL_ORPHANS];
    uint32_t ndrop = 0;
    pthread_mutex_lock(&q->done_lock);
    uint32_t n = atomic_load_explicit(&q->norphans, memory_order_relaxed), keep = 0;
    for (uint32_t i = 0; i < n; i++)
        if (q->orphans[i].seq < seq)
            drop[ndrop++] = q->orphans[i].s;
        else
            q->orphans[keep++] = q->orphans[i];
    atomic_store_explicit(&q->norphans, keep, memory_order_relaxed);
    pthread_mutex_unlock(&q->done_lock);
    for (uint32_t i = 0; i < ndrop; i++) /* outside the lock: the last reference frees the signal */
        devq__signal_release(drop[i]);
}
