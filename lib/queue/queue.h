/* Queues, batches, buffers and kernels as lib keeps them.
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

#define DEVQ_MAGIC_QUEUE  0x51554555u  /* "QUEU" */
#define DEVQ_MAGIC_BUFFER 0x42554646u  /* "BUFF" */
#define DEVQ_MAGIC_KERNEL 0x4b45524eu  /* "KERN" */
#define DEVQ_MAGIC_TIMESTAMP 0x54494d45u  /* "TIME" */

struct devq_timestamp {
    struct devq_object obj;        /* refs: user + the batch until issued */
    struct devq_device *dev;
    devq_pl_event *ev;
    _Atomic int recorded;          /* the event was recorded on the stream */
};

#define DEVQ_CAUSE_MAX 384

struct devq_kernel {
    struct devq_object obj;        /* refs: user + batches in flight */
    struct devq_device *dev;
    devq_pl_kernel *pl;
    char name[64];
};

struct devq_buffer {
    struct devq_object obj;        /* refs: user + batches in flight */
    struct devq_device *dev;
    size_t size;
    void *dptr, *hptr;
    uint32_t tag;
    uint32_t number;               /* "buffer #7": per process, creation order */
    /* The failure its last writer left (buffer_fail.c): 0 or a negative
     * errno; the cause under a striped lock, only while failed. */
    _Atomic int fail_err;
    char *fail_cause;
    struct devq_use alloc_use;     /* stream-ordered alloc point (cursor 0: sync) */
    /* Under the device lock: */
    struct devq_buffer_track track;
    _Atomic uint32_t unissued;     /* uses recorded but not yet issued (recorders add
                                    * without the device lock; the rest is under it) */
    int freed;                     /* devq_buffer_free called */
    int free_pending;              /* free waits for unissued uses */
    struct devq_queue *free_q;     /* where the pending free goes (NULL: sync) */
    struct devq_buffer *next_pending;
    struct devq_parked_use *parked;   /* uses by deferred batches (hazard.c) */
    uint32_t nparked, capparked;
};

enum op_kind {
    OP_WAIT, OP_SIGNAL, OP_EXEC, OP_COPY, OP_FILL, OP_WRITE, OP_READ,
    OP_BARRIER, OP_HOST_FN,
    OP_ALIGN,                      /* order after another stream's point (devq_barrier) */
    OP_TIMESTAMP,                  /* record a timing event */
};

struct batch;

struct gate_wait {
    devq_signal *s;
    uint64_t v;
};

/* A buffer an op uses, with its access.  A batch keeps them in one flat
 * array, built at record time in op order (record.c); an op's uses are
 * the slice [first_use, first_use + nuses). */
struct buffer_use {
    devq_buffer *buf;
    enum devq_access access;
};

struct op {
    uint8_t kind;
    uint8_t at_end;                /* OP_SIGNAL delivered by the end callback */
    uint16_t nuses;                /* buffers it uses (exec: at most 4096) */
    uint32_t first_use;            /* its slice of batch->uses */
    union {
        struct { devq_signal *s; uint64_t v; struct batch *owner; } sig;
        struct { devq_kernel *k; devq_launch l; uint32_t first_arg, nargs; } exec;
        struct { devq_buffer *dst, *src; size_t dst_off, src_off, n; } copy;
        struct { devq_buffer *dst; size_t off, n; uint8_t byte; } fill;
        struct { devq_buffer *buf; size_t off, n; void *host; } xfer;   /* write: host is the source */
        struct { void (*fn)(void *); void *arg; struct batch *owner; } host;
        struct devq_use align;
        struct devq_timestamp *ts;
    } u;
};

struct batch_arg {
    devq_buffer *buf;
    enum devq_access access;
    size_t value_off, size;        /* value bytes live in batch->bytes */
};


struct batch {
    struct devq_queue *q;
    uint64_t seq;                  /* 1-based number on its queue */
    uint64_t serial;               /* submission order on the device (device lock) */
    struct op *ops;
    uint32_t nops, capops;
    struct batch_arg *args;
    uint32_t nargs, capargs;
    struct buffer_use *uses;       /* every op's buffer uses, in op order */
    uint32_t nuses, capuses;
    unsigned char *bytes;
    size_t nbytes, capbytes;
    struct gate_wait *gate;        /* aligned signal waits to re-check on the device */
    uint32_t ngate, capgate;
    struct devq_value_slot **slots;   /* device-side waits (value_wait.c) */
    uint32_t nslots, capslots;
    /* One reference to each buffer and kernel the ops use (record.c);
     * dropped when the batch completes. */
    struct devq_ref_set held;
    /* Issue state (device lock). */
    uint32_t next_op;              /* first op not yet issued */
    int forced_error;              /* fail without running the rest */
    uint32_t fail_from;            /* first op that did not run when forced */
    uint32_t park_at;              /* the op issue stopped at to park (issue.c) */
    char cause[DEVQ_CAUSE_MAX];    /* of forced_error (issuing thread) */
    /* The walk (batch_walk.c): owned by the batch's callbacks. */
    uint32_t walked;               /* ops whose buffer effects are applied */
    uint32_t walk_at;              /* first op failed */
    int walk_err;                  /* the batch's failure, as far as walked */
    char walk_cause[DEVQ_CAUSE_MAX];
    _Atomic int inline_done;       /* completed inline: the walk never clears */
    devq_signal *blocked_on;       /* deferred: waiting for this value */
    uint64_t blocked_value;
    int hazard_wait;               /* deferred: an op conflicts with an earlier parked batch */
    uint32_t parked_uses;          /* buffer uses registered in hazard.c */
    devq_notify *notify;
    uint64_t *marks;               /* DEVQ_TRACE: op start times, [nops] = end */
    uint32_t capmarks;
    int traced;
    /* Host callbacks that still point into this batch, plus one for its
     * completion: the last to let go recycles it, so a batch completed
     * early (its end callback could not be queued) outlives the
     * callbacks already queued for its ops. */
    _Atomic uint32_t cb_refs;
    struct batch *next;            /* deferred FIFO / free list */
};

/* The queue layer's state of one device (dev->qs), under the device lock
 * unless said otherwise. */
struct devq_queue_state {
    struct devq_queue *queues;            /* list of live queues */
    uint32_t queue_numbers;               /* last queue number handed out */
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

struct devq_queue {
    uint32_t magic;
    struct devq_device *dev;
    devq_queue_desc desc;
    uint32_t number;               /* per-device, for messages: "queue 2" */
    struct devq_stream stream;
    _Atomic int recording;         /* one recorder at a time: else -EBUSY */
    struct batch *open;
    int sticky;                    /* first recording error of the open batch */
    char sticky_msg[DEVQ_CAUSE_MAX];

    devq_signal *timeline;         /* N: every batch up to seq N completed */
    pthread_mutex_t done_lock;     /* completion order (completion.c) */
    uint64_t done_upto;
    struct batch *ahead;           /* completed before an earlier batch, by seq */
    _Atomic uint64_t submitted;    /* batches submitted (issued or deferred) */
    uint64_t issued_seq;           /* last batch fully issued (device lock) */
    struct batch *deferred, *deferred_tail;   /* device lock */
    int destroying;                /* device lock */
    /* Destroy released the device-side waits from this batch on: later
     * batches held behind them are cancelled, not run (UINT64_MAX: none). */
    _Atomic uint64_t cancel_after;
    int check_cycle;               /* a wait was bridged during this submit */

    _Atomic int first_error;       /* first batch failure since the last finish */
    char first_cause[DEVQ_CAUSE_MAX];
    /* Recycled batches: completion callbacks push onto free_shared (a
     * lock-free stack); the recorder (one thread at a time, by the
     * recording flag) takes the whole stack at once into free_private, so
     * the two sides never share a lock or suffer ABA. */
    _Atomic(struct batch *) free_shared;
    struct batch *free_private;
    struct devq_queue *next;       /* device's queue list */
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

/* batch.c */
struct batch *devq__batch_get(struct devq_queue *q);
void devq__batch_put(struct devq_queue *q, struct batch *b);
void devq__batch_free(struct batch *b);        /* memory of a recycled batch */
void devq__batch_release_refs(struct batch *b, uint32_t from_op);
/* Drop a batch that never ran (takes the device lock); err != 0 fails the
 * signals it would have signalled with that cause. */
void devq__batch_discard(struct batch *b, int err, const char *cause);
/* Fail the rest of b without running it; the end callback reports it.
 * First error wins; the cause keeps its root through any chain. */
void devq__batch_force(struct batch *b, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Buffer uses of ops from `from` on were not issued and never will be (device lock). */
void devq__batch_unissue(struct batch *b, uint32_t from);
void devq__queue_record_failure(struct devq_queue *q, int err, const char *cause);
/* queue.c: wait until every submitted batch completed, or an absolute deadline. */
int  devq__queue_finish_until(struct devq_queue *q, uint64_t deadline);

/* record.c: one op recorded under the recorder role (else -EBUSY):
 * begin, append (a zeroed op, nheld references reserved), fill it in,
 * commit.  Commit returns r, made sticky when negative. */
int  devq__record_begin(struct devq_queue *q, const char *fn);
int  devq__record_append(struct devq_queue *q, uint32_t nheld, const char *fn, struct op **out);
int  devq__record_signal(struct devq_queue *q, devq_signal *s, uint64_t v, enum op_kind kind, const char *fn);
int  devq__record_commit(struct devq_queue *q, int r);

/* issue.c: issue a submitted batch (device lock held): DEVQ_ISSUE_PARK (the batch must park at b->park_at), or the
 * error the backend gave (0: none; the batch is done either way). */
#define DEVQ_ISSUE_PARK 1
int  devq__issue(struct devq_queue *q, struct batch *b);
/* defer.c: submit (issue or park) a batch; issue what a queue's FIFO
 * lets go (device lock held). */
int  devq__submit_locked(struct devq_queue *q, struct batch *b);
void devq__drain_deferred(struct devq_queue *q);
/* align.c: the tracker's align op (tracker.h). */
int  devq__align_streams(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                         const char *why);

/* completion.c: host callbacks. */
int  devq__end_cb(void *arg, int status);
/* What one gate callback checks: a snapshot taken when the gate was
 * issued, so that issuing a later portion of the same batch (from
 * another thread) never races with a gate still to run. */
struct gate_rec {
    struct batch *b;
    uint32_t from;                     /* the portion it opens: ops before it are walked */
    uint32_t nsig, nslot;
    struct gate_wait *sig;             /* held by the batch's wait ops */
    struct devq_value_slot **slot;     /* held by the batch until its end */
};
int  devq__gate_cb(void *arg, int status);
/* The end of an issued portion of a batch that continues later. */
struct portion {
    struct batch *b;
    uint32_t upto;
};
int  devq__portion_cb(void *arg, int status);
int  devq__signal_cb(void *arg, int status);
int  devq__user_fn_cb(void *arg, int status);
int  devq__trace_mark_cb(void *arg, int status);
void devq__trace_batch(struct batch *b);
void devq__complete_inline(struct batch *b, int err);
void devq__batch_unref(struct batch *b);

/* The buffers op o of b uses (o->nuses of them). */
static inline const struct buffer_use *devq__op_uses(const struct batch *b, const struct op *o)
{
    return b->uses + o->first_use;
}

/* batch_walk.c: the batch's verdict, op by op, in its callbacks (stream
 * order).  walk applies ops [walked, upto) to the buffers they use;
 * status is what the backend reported for them; final (the end
 * callback) also applies a forced error.  Returns the batch's failure. */
int  devq__batch_walk(struct batch *b, uint32_t upto, int status, int final);
/* Fail the walk from where it is: with the plugin's detail for status
 * (devq_errmsg() on this thread), or with a given cause. */
void devq__batch_walk_fail(struct batch *b, int status);
void devq__batch_walk_fail_cause(struct batch *b, int err, const char *cause);
void devq__batch_walk_inline(struct batch *b, int err, const char *cause);

/* buffer_fail.c: the failure a buffer's last writer left. */
void devq__buffer_fail(devq_buffer *b, int err, const char *cause);
void devq__buffer_clear(devq_buffer *b);
int  devq__buffer_failed(const devq_buffer *b, char *cause, size_t cap);   /* 0 or the error */
void devq__buffer_fail_fini(devq_buffer *b);
int  devq__buffer_any_failed(void);        /* any buffer failed, process-wide */
uint32_t devq__buffer_number_next(void);
const char *devq__buffer_label(const devq_buffer *b, char *buf, size_t cap);

/* cycle.c: wait-cycle detection among deferred batches (device lock). */
int  devq__cycle_check(struct devq_queue *q, char *msg, size_t cap);
/* A head was just deferred: detect, count and log a cycle it closes. */
void devq__note_cycle(struct devq_queue *q);

/* buffer.c / kernel.c */
int  devq__buffer_check(const devq_buffer *b, const char *fn);
void devq__buffer_issued(devq_buffer *b);      /* one unissued use went out (device lock) */
/* Run frees that waited for their buffer's last use to be issued (device lock). */
void devq__process_pending_frees(struct devq_device *dev);
void devq__op_issued(struct batch *b, struct op *o);
void devq__buffer_queue_gone(struct devq_device *dev, struct devq_queue *q);
int  devq__kernel_check(const devq_kernel *k, const char *fn);

#endif
