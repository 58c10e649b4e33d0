/* SPDX-License-Identifier: MIT */
/* The queue object: struct devq_queue and the queue layer's state of a
 * device, with the checks every entry point makes.  Each file of the
 * layer declares its own entry points in its own header (record.h,
 * issue.h, defer.h, ...); queue_life.c, the queue's life cycle, in
 * queue_life.h.
 *
 * A queue records ops into an open batch; submit hands the batch to the
 * issuer (issue.c), which asks the tracker for cross-stream waits and
 * calls the backend.  A batch whose wait cannot be resolved on the device
 * (value produced by the host, another device, or not yet submitted) is
 * parked on the queue's deferred FIFO and resumed from the notifier
 * thread; later batches of that queue queue up behind it so order holds.
 *
 * Locking: every backend stream call and all tracker state are under the
 * device lock.  Host callbacks (completion.c) never take it and never call
 * the backend. */
#ifndef DEVQ_LIB_QUEUE_H
#define DEVQ_LIB_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdint.h>
#include <devq/devq_plugin.h>
#include "error.h"
#include "fork.h"
#include "checkpoint.h"
#include "device.h"
#include "object.h"
#include "stream.h"
#include "tracker.h"
#include "name.h"
#include "cause.h"

#define DEVQ_MAGIC_QUEUE 0x51554555u /* "QUEU" */

/* The queue layer's state of one device (dev->qs), under the device lock
 * unless said otherwise. */
struct batch;
struct devq_buffer_cache;
struct devq_value_slot;

struct devq_queue_state {
    struct devq_queue *queues;         /* list of live queues */
    struct devq_buffer *pending_frees; /* frees waiting for their last use to issue */
    uint64_t submit_serial;            /* batches submitted, in order (hazard.c) */
    uint64_t straight;                 /* batches straight.c issued (tests/unit/test_straight) */
    uint64_t tails;                    /* signals straight.c handed to signal_tail (tests/unit/test_tail) */
    uint32_t parked_uses;              /* buffer uses of deferred batches (hazard.c) */
    int parked_progress;               /* a parked use was issued: retry hazard waits */
    uint64_t last_cycle;               /* identity of the last wait cycle counted (cycle.c) */
    /* Buffers freed with no queue, never used, kept for reuse (buffer.c). */
    struct devq_buffer_cache *_Atomic idle;
    /* value_wait.c, under its own slot lock */
    struct devq_value_slot *value_slots_free, *value_slots_active;
};

/* Laid out by who writes what: the recording thread and the stream's
 * callback thread each write their own cache lines per batch, so neither
 * invalidates the other's (done_lock and done_upto used to share a line
 * with submitted and issued_seq, free_shared with free_private).
 * Allocated on a cache line (queue.c). */
/* Tail orphans a queue keeps at once (tail_orphan.c); past that, a
 * reference stays held for ever (out of memory after out of memory). */
#define DEVQ_TAIL_ORPHANS 8

struct devq_queue {
    /* Read-mostly: both sides read these. */
    uint32_t magic;
    unsigned fork_gen; /* its device's (fork.h): refused in a forked child */
    struct devq_device *dev;
    devq_queue_desc desc;
    devq_signal *timeline; /* N: every batch up to seq N completed */
    /* Destroy released the device-side waits from this batch on: later
     * batches held behind them are cancelled, not run (UINT64_MAX: none). */
    _Atomic uint64_t cancel_after;
    struct devq_queue *next;                   /* device's queue list */
    struct devq_buffer_cache *_Atomic buffers; /* freed buffers kept for reuse (buffer.c) */

    /* The recording side (recorder role or device lock). */
    _Alignas(64) struct devq_stream stream;
    _Atomic int recording; /* one recorder at a time: else -EBUSY */
    struct batch *open;
    int sticky; /* first recording error of the open batch */
    /* devq_queue_begin_capture: the open batch is a graph's recording,
     * never submitted (graph.c); submit and finish answer -EBUSY. */
    _Atomic int capturing;
    int check_cycle;                        /* a wait was bridged during this submit */
    _Atomic uint64_t submitted;             /* batches submitted (issued or deferred) */
    uint64_t issued_seq;                    /* last batch fully issued (device lock) */
    struct batch *deferred, *deferred_tail; /* device lock */
    int destroying;                         /* device lock */
    /* Recycled batches: completion callbacks push onto free_shared (a
     * lock-free stack); the recorder (one thread at a time, by the
     * recording flag) takes the whole stack at once into free_private, so
     * the two sides never share a lock or suffer ABA. */
    struct batch *free_private;

    /* The completing side (the stream's callbacks). */
    _Alignas(64) pthread_mutex_t done_lock; /* completion order (completion.c) */
    uint64_t done_upto;
    struct batch *ahead; /* completed before an earlier batch, by seq */
    _Atomic(struct batch *) free_shared;
    _Atomic int first_error; /* first batch failure since the last finish */
    /* Signals whose tails may still run after their batch ended early
     * (tail_orphan.c): under done_lock; the count is read without it. */
    _Atomic uint32_t norphans;
    struct devq_tail_orphan {
        devq_signal *s;
        uint64_t seq; /* the batch the tail belongs to */
    } orphans[DEVQ_TAIL_ORPHANS];

    /* Written on errors only. */
    char sticky_msg[DEVQ_CAUSE_MAX];
    char first_cause[DEVQ_CAUSE_MAX];
    pthread_mutex_t first_lock; /* first_cause, and first_error's changes */
    /* The last error a callback of this queue returned to the plugin's
     * latch (DEVQ_CAP_SKIP_ON_ERROR: the device skips what follows until
     * the next callback, which gets the error as its status), and why.
     * Only the stream's callbacks touch them, one at a time in stream
     * order: when the next callback belongs to a later batch (the end
     * callback of the failed one could not be queued), that batch's
     * cause says what it was skipped after, not just the errno. */
    int cb_err;
    char cb_cause[DEVQ_CAUSE_MAX];
    /* "queue #2": per process, creation order; name.number is also the
     * trace track.  Cold: last, off the recording path's lines. */
    struct devq_name name;
};

/* -ENODEV: q was made before this process was forked (queue_fork.c:
 * a leaf, so every caller of the check does not call queue_life). */
int devq__queue_forked(const devq_queue *q, const char *fn) __attribute__((cold));

/* 0, or -EINVAL naming fn when q is NULL or not a live queue, or
 * -ENODEV when it is the parent's, in a forked child. */
static inline int devq__queue_check(const devq_queue *q, const char *fn)
{
    if (!q)
        return devq__err(-EINVAL, "%s: queue is NULL", fn);
    if (q->magic != DEVQ_MAGIC_QUEUE)
        return devq__err(-EINVAL, "%s: %p is not a live queue (destroyed?)", fn, (const void *)q);
    if (__builtin_expect(q->fork_gen != devq__fork_gen(), 0))
        return devq__queue_forked(q, fn);
    return 0;
}

/* How every message names q (name.h, devq(7) NAMES). */
static inline struct devq_label devq__queue_label(const struct devq_queue *q)
{
    return devq__name_label(&q->name, DEVQ_NAME_QUEUE, NULL);
}

#endif
