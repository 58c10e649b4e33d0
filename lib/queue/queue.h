/* SPDX-License-Identifier: MIT */
/* Queues as lib keeps them, and the entry points of the queue layer.
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
#include "checkpoint.h"
#include "device.h"
#include "object.h"
#include "stream.h"
#include "tracker.h"
#include "name.h"
/* The queue layer's objects, each in its owner's header. */
#include "batch.h"
#include "buffer.h"
#include "completion.h"
#include "kernel.h"
#include "timestamp.h"

#define DEVQ_MAGIC_QUEUE  0x51554555u  /* "QUEU" */

/* The queue layer's state of one device (dev->qs), under the device lock
 * unless said otherwise. */
struct devq_queue_state {
    struct devq_queue *queues;            /* list of live queues */
    struct devq_buffer *pending_frees;    /* frees waiting for their last use to issue */
    uint64_t submit_serial;               /* batches submitted, in order (hazard.c) */
    uint32_t parked_uses;                 /* buffer uses of deferred batches (hazard.c) */
    int parked_progress;                  /* a parked use was issued: retry hazard waits */
    uint64_t last_cycle;                  /* identity of the last wait cycle counted (cycle.c) */
    /* value_wait.c, under its own slot lock */
    struct devq_value_slot *value_slots_free, *value_slots_active;
};
int  devq__queue_state_create(struct devq_device *dev);
void devq__queue_state_destroy(struct devq_device *dev);

/* Laid out by who writes what: the recording thread and the stream's
 * callback thread each write their own cache lines per batch, so neither
 * invalidates the other's (done_lock and done_upto used to share a line
 * with submitted and issued_seq, free_shared with free_private).
 * Allocated on a cache line (queue.c). */
struct devq_queue {
    /* Read-mostly: both sides read these. */
    uint32_t magic;
    struct devq_device *dev;
    devq_queue_desc desc;
    devq_signal *timeline;         /* N: every batch up to seq N completed */
    /* Destroy released the device-side waits from this batch on: later
     * batches held behind them are cancelled, not run (UINT64_MAX: none). */
    _Atomic uint64_t cancel_after;
    struct devq_queue *next;       /* device's queue list */
    struct devq_buffer_cache *_Atomic buffers;   /* freed buffers kept for reuse (buffer.c) */

    /* The recording side (recorder role or device lock). */
    _Alignas(64) struct devq_stream stream;
    _Atomic int recording;         /* one recorder at a time: else -EBUSY */
    struct batch *open;
    int sticky;                    /* first recording error of the open batch */
    int check_cycle;               /* a wait was bridged during this submit */
    _Atomic uint64_t submitted;    /* batches submitted (issued or deferred) */
    uint64_t issued_seq;           /* last batch fully issued (device lock) */
    struct batch *deferred, *deferred_tail;   /* device lock */
    int destroying;                /* device lock */
    /* Recycled batches: completion callbacks push onto free_shared (a
     * lock-free stack); the recorder (one thread at a time, by the
     * recording flag) takes the whole stack at once into free_private, so
     * the two sides never share a lock or suffer ABA. */
    struct batch *free_private;

    /* The completing side (the stream's callbacks). */
    _Alignas(64) pthread_mutex_t done_lock;     /* completion order (completion.c) */
    uint64_t done_upto;
    struct batch *ahead;           /* completed before an earlier batch, by seq */
    _Atomic(struct batch *) free_shared;
    _Atomic int first_error;       /* first batch failure since the last finish */

    /* Written on errors only. */
    char sticky_msg[DEVQ_CAUSE_MAX];
    char first_cause[DEVQ_CAUSE_MAX];
    pthread_mutex_t first_lock;    /* first_cause, and first_error's changes */
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

/* 0, or -EINVAL naming fn when q is NULL or not a live queue. */
static inline int devq__queue_check(const devq_queue *q, const char *fn)
{
    if (!q)
        return devq__err(-EINVAL, "%s: queue is NULL", fn);
    if (q->magic != DEVQ_MAGIC_QUEUE)
        return devq__err(-EINVAL, "%s: %p is not a live queue (destroyed?)", fn, (const void *)q);
    return 0;
}

/* How every message names q (name.h, devq(7) NAMES). */
static inline struct devq_label devq__queue_label(const struct devq_queue *q)
{
    return devq__name_label(&q->name, DEVQ_NAME_QUEUE, NULL);
}

/* DEVQ_TRACE: (re)name q's track after its label. */
void devq__queue_trace_track(const struct devq_queue *q);

void devq__queue_record_failure(struct devq_queue *q, int err, const char *cause);
/* queue.c: wait until every submitted batch completed, or an absolute deadline. */
int  devq__queue_finish_until(struct devq_queue *q, uint64_t deadline);

/* record.c: one op recorded under the recorder role (else -EBUSY):
 * begin, append (a zeroed op, nheld references reserved), fill it in,
 * commit.  Commit returns r, made sticky when negative. */
int  devq__record_begin(struct devq_queue *q, const char *fn);
int  devq__record_append(struct devq_queue *q, uint32_t nheld, const char *fn, struct op **out);
/* Append an OP_WORK op (caller holds the role): data (size bytes) is
 * copied into the batch, the uses are checked by the caller, hold (may
 * be NULL) is kept alive until the batch completes; writes_whole: its
 * one DEVQ_WRITE use covers that buffer (a success clears its failure);
 * issue (NULL: run in a host callback) enqueues it on the device stream
 * at issue time (batch.h).  The channel layer's
 * entry into recording (DESIGN §11). */
struct buffer_use;
struct devq_object;
int  devq__record_work(struct devq_queue *q, devq_work_fn run, devq_work_issue_fn issue, const void *key,
                       const void *data,
                       size_t size, const struct buffer_use *uses, uint32_t nuses,
                       struct devq_object *hold, int writes_whole, const char *fn);
int  devq__record_signal(struct devq_queue *q, devq_signal *s, uint64_t v, enum op_kind kind, const char *fn);
int  devq__record_commit(struct devq_queue *q, int r);

/* issue.c: issue a submitted batch (device lock held): DEVQ_ISSUE_PARK (the batch must park at b->park_at), or the
 * error the backend gave (0: none; the batch is done either way). */
#define DEVQ_ISSUE_PARK 1
int  devq__issue(struct devq_queue *q, struct batch *b);
/* inline.c: complete b (its recorder role held) at submit when it only
 * signals and every earlier batch of q completed: 1 done (the role given
 * back), 0 not eligible (nothing changed). */
int  devq__submit_inline(struct devq_queue *q, struct batch *b);
/* defer.c: submit (issue or park) a batch; issue what a queue's FIFO
 * lets go (device lock held). */
int  devq__submit_locked(struct devq_queue *q, struct batch *b);
void devq__drain_deferred(struct devq_queue *q);
/* align.c: the tracker's align op (tracker.h). */
int  devq__align_streams(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                         const char *why);

/* cycle.c: wait-cycle detection among deferred batches (device lock). */
int  devq__cycle_check(struct devq_queue *q, char *msg, size_t cap);
/* A head was just deferred: detect, count and log a cycle it closes. */
void devq__note_cycle(struct devq_queue *q);

#endif
