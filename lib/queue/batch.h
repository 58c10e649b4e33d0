/* SPDX-License-Identifier: MIT */
/* Batches and their ops: what a queue records and issues, the flat list
 * of buffer uses, the references held: types only, so every file of the
 * layer can use them without depending on another.  A batch's life
 * (pool, references, forcing a failure): batch_life.h; the verdict its
 * callbacks walk: batch_walk.h. */
#ifndef DEVQ_LIB_BATCH_H
#define DEVQ_LIB_BATCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>
#include "cause.h"
#include "object.h"
#include "tracker.h"

struct devq_queue;
struct devq_value_slot;

enum op_kind {
    OP_WAIT,
    OP_SIGNAL,
    OP_EXEC,
    OP_COPY,
    OP_FILL,
    OP_WRITE,
    OP_READ,
    OP_BARRIER,
    OP_HOST_FN,
    OP_ALIGN,     /* order after another stream's point (devq_barrier) */
    OP_TIMESTAMP, /* record a timing event */
    OP_WORK,      /* work run by an upper layer in a host callback (channels) */
};

/* OP_WORK: run(data, status, group) runs in stream order with the
 * batch's failure so far as status (nonzero: the op is skipped, run
 * only cleans up; it includes a buffer the op reads that failed; then
 * devq_errmsg() holds that failure's cause).
 * Consecutive OP_WORK ops of one batch with the same run and key form a
 * group: DEVQ_WORK_MORE says a member follows, DEVQ_WORK_CONT that one
 * came before.  A negative return, with devq_errmsg() set, fails the op
 * (what it writes) and the rest of the batch. */
#define DEVQ_WORK_MORE 1u
#define DEVQ_WORK_CONT 2u
/* Stream work (issue set, below) that will never be issued: its batch
 * failed before it.  run is called once per such op, on the issuing
 * thread with the device lock held, only to learn it. */
#define DEVQ_WORK_SKIPPED 4u
/* Stream work already issued whose batch then failed to queue a later
 * op (the device failed under the group, say): run is called on the
 * issuing thread, device lock held, only to ask whether the work itself
 * knows of a failure -- the root cause the enqueue failure follows
 * from.  It returns that error with its message, or 0, and must release
 * nothing: the completion callback still comes. */
#define DEVQ_WORK_PROBE 8u
/* Host work (no issue function) called on the submitting thread
 * (inline.c) instead of in a stream callback: the queue is idle and the
 * batch needs no wait.  run may decline or stop short: it returns
 * DEVQ_WORK_PENDING (with nothing failed) when the op cannot finish
 * within a short spin -- the channel is held by another queue, or its
 * peers are not there yet -- and is then called again for the same op,
 * without this flag, from a stream callback, where it must pick up what
 * it started.  Any other return is final, as from a callback. */
#define DEVQ_WORK_INLINE 16u
#define DEVQ_WORK_PENDING 1
/* gid: the same for every member of one group (its first op), unique
 * while the batch runs. */
typedef int (*devq_work_fn)(void *data, int status, unsigned group, const void *gid);
/* OP_WORK ops that run on the device stream (channels over NCCL/RCCL)
 * also have issue: called for each member as it is issued (issuing
 * thread, device lock held, in op order, after the member's buffers are
 * bound), it enqueues the work on stream s -- the group's last member
 * enqueues the group, so every wait the tracker inserts for any member
 * comes before it.  A negative return fails the batch there.  Only the
 * group's last member gets a completion callback, queued after its
 * work: run is called there first (with the stream's status), and its
 * error, with its message, is the cause the batch walk gives. */
typedef int (*devq_work_issue_fn)(void *data, devq_pl_stream *s, unsigned group, const void *gid);

struct batch;

struct gate_wait {
    devq_signal *s;
    uint64_t v;
};

/* A buffer an op uses, with its access.  A batch keeps them in one flat
 * array, built at record time in op order (record.c); an op's uses are
 * the slice [first_use, first_use + nuses).  Every use is kept (the walk
 * and the hazards are per op), but a batch counts a buffer in its
 * `unissued` once: `counted` marks the use that holds that count, the
 * latest of the buffer's uses in the batch (record.c moves it along), so
 * the count drops when the batch's last use of the buffer is issued. */
struct buffer_use {
    devq_buffer *buf;
    uint8_t access;  /* enum devq_access */
    uint8_t counted; /* this use holds the batch's unissued count */
    /* 0: gen is the generation itself.  In a replay's planned run
     * (graph_plan.c), n + 1: gen is an offset (the run's writes of the
     * buffer before this use) from the base of the batch's plan.buf[n],
     * set when the run is bound -- no per-use numbering at issue;
     * devq__use_gen reads either. */
    uint16_t run_buf;
    /* Set when the use is bound (issue.c, device lock): the buffer's
     * write generation it reads -- the writes ordered before it; a use
     * that writes is generation gen + 1 (buffer_fail.c). */
    uint32_t gen;
};

/* Recording: the batch's latest use of a few recent buffers (direct
 * mapped by address; an entry counts only when the use it names is one
 * of this batch's and of its buffer, so nothing empties it, record.c).
 * The use an entry names holds its buffer's unissued count. */
#define DEVQ_USE_MEMO 8u
struct use_memo {
    devq_buffer *buf;
    uint32_t use;
};

/* op.at_end for a signal that ends a batch: 1, set by the end callback;
 * OP_AT_END_TAIL, set first by the backend's signal_tail (straight.c),
 * which skips it when an error is latched or a buffer failed, so the end
 * callback sets (or fails) it only if it is not settled yet. */
#define OP_AT_END_TAIL 2

struct op {
    uint8_t kind;
    uint8_t at_end;     /* OP_SIGNAL delivered by the end callback (OP_AT_END_TAIL:
                         * set on the stream first, straight.c) */
    uint16_t nuses;     /* buffers it uses (exec: at most 4096) */
    uint32_t first_use; /* its slice of batch->uses */
    union {
        struct {
            devq_signal *s;
            uint64_t v;
            struct batch *owner;
        } sig;
        struct {
            devq_kernel *k;
            devq_launch l;
            uint32_t first_arg, nargs, values;
        } exec; /* values: how many are not buffers */
        struct {
            devq_buffer *dst, *src;
            size_t dst_off, src_off, n;
        } copy;
        struct {
            devq_buffer *dst;
            size_t off, n;
            uint8_t byte;
        } fill;
        struct {
            devq_buffer *buf;
            size_t off, n;
            void *host;
        } xfer; /* write: host is the source */
        struct {
            void (*fn)(void *);
            void *arg;
            struct batch *owner;
        } host;
        struct devq_use align;
        struct devq_timestamp *ts;
        struct {
            devq_work_fn run;
            devq_work_issue_fn issue;
            const void *key;
            size_t off;
            struct batch *owner;
            int whole;
        } work; /* data: bytes + off; whole: its WRITE use covers the buffer */
    } u;
};


/* What was recorded: the ops, their kernel arguments, buffer uses and
 * bytes.  Written only by record.c, under the recorder role (it empties a
 * batch it takes from the pool), like use_memo below, or by
 * graph_submit.c, which copies a graph exec's record in the same way;
 * read by every file that issues, walks or completes the batch, once
 * submit has handed it over.  The exceptions: issue.c points a value
 * argument's `value` at its bytes (args[i].value) and, for a launch list
 * left to a stream whose batch ends early, hands args and bytes over to
 * it (list_abandon); batch_life.c frees the arrays with the batch. */
struct batch_record {
    struct op *ops;
    uint32_t nops, capops;
    /* Kernel arguments as the backend takes them, built at record time
     * (a buffer's device pointer is fixed for its life); a value's
     * `value` holds its offset in bytes until issue points it there. */
    struct devq_pl_arg *args;
    uint32_t nargs, capargs;
    struct buffer_use *uses; /* every op's buffer uses, in op order */
    uint32_t nuses, capuses;
    unsigned char *bytes;
    size_t nbytes, capbytes;
};

/* Issue state (device lock): written only by issue.c (devq__issue, and
 * devq__issue_reset / devq__issue_trace_done for batch_life.c's pool and
 * completion.c's end callback) and by straight.c, which issues the common
 * one-shot batch in one pass (next_op).  Read by defer.c, hazard.c, cycle.c and
 * batch_life.c (next_op: how far the batch went out); completion.c reads
 * marks, whose entries the trace-mark callbacks fill in. */
struct batch_issue {
    uint32_t next_op;       /* first op not yet issued */
    uint32_t park_at;       /* the op issue stopped at to park */
    struct gate_wait *gate; /* aligned signal waits to re-check on the device */
    uint32_t ngate, capgate;
    int traced;      /* DEVQ_TRACE: marks are being filled in */
    uint64_t *marks; /* DEVQ_TRACE: op start times, [nops] = end */
    uint32_t capmarks;
};

/* Launch lists of a graph replay on a backend with launch_list (issue.c
 * writes them, batch_life.c frees the array): entry i is op i's launch,
 * kept until the batch ends, since the backend holds pointers into it. */
struct batch_lists {
    struct devq_pl_launch_entry *list;
    uint32_t caplist;
    int listed; /* a list went out (its memory is the stream's until a callback ran) */
    /* The launch that failed, stored by the backend (launch_list) before
     * the callback that gets its error runs; batch_walk.c reads it there
     * to fail that launch on, not the launches before it that ran. */
    const struct devq_pl_launch_entry *failed;
};

/* A run of a graph's launches that a replay sends as one stream op,
 * planned once per exec (graph_plan.c): ops [from, end), the maximal run
 * of list_joins ops, and its nbuf distinct buffers (at most
 * DEVQ_RUN_BUFS) from buf[first_buf], in order of first use, each with
 * every access the run makes of it and whether the run holds the use
 * that carries the buffer's unissued count; a run over more buffers has
 * nbuf DEVQ_RUN_UNPLANNED (issue.c's bind_run works them out).  nat: the
 * run's native handle (graph_native.h) or NULL: the exec's reference in
 * its plan; in a replay's copy, the handle until the run is issued. */
#define DEVQ_RUN_BUFS 8u
#define DEVQ_RUN_UNPLANNED UINT32_MAX
struct graph_native;
struct run_plan {
    uint32_t from, end, first_buf, nbuf;
    uint32_t lazy; /* its uses carry offsets (buffer_use.run_buf) */
    struct graph_native *nat;
    /* A replay's copy: graph_launch's failed slot, the index in the run
     * of the launch that failed when the backend names it (UINT32_MAX
     * from the plan on, graph_plan.c; only the stream writes it, before
     * the error's callback). */
    uint32_t failed_at;
};
struct run_buf {
    devq_buffer *buf;
    uint8_t acc;
    uint8_t counted;
    uint32_t nw;   /* the run's writes of buf */
    uint32_t base; /* a replay's copy: buf's write generation when the run was bound */
};

/* A replay's copy of its exec's plan (graph_submit.c writes it with the
 * record; issue.c reads it; batch_life.c frees the arrays): runs sorted
 * by `from`, `next` the first not yet looked at; nowaits: no op waits
 * or aligns, so with no hazards there is nothing to resolve; nnat: the
 * runs whose native handle is not yet issued (issue.c counts them down). */
struct batch_plan {
    struct run_plan *run;
    uint32_t nrun, caprun, next;
    struct run_buf *buf;
    uint32_t nbuf, capbuf;
    uint32_t nnat;
    int nowaits;
    /* The replay's wait, signal and host fn ops, in order (the exec's
     * fix list): the end of a batch (completion.c's end_clean,
     * batch_life.c's reference release) visits these, not every op. */
    uint32_t *fix;
    uint32_t nfix, capfix;
};

/* Deferral (device lock): written only by defer.c (submit, park, resume,
 * and devq__defer_reset / devq__defer_take_notify for batch_life.c's pool
 * and queue_life.c's destroy).  Read by blocker.c, cycle.c, hazard.c
 * (serial) and issue.c (no_park). */
struct batch_defer {
    uint64_t serial;         /* submission order on the device */
    int no_park;             /* parking failed: finish it without waiting */
    int hazard_wait;         /* deferred: an op conflicts with an earlier parked batch */
    devq_signal *blocked_on; /* deferred: waiting for this value */
    uint64_t blocked_value;
    devq_notify *notify; /* the resume notify while blocked_on */
};

/* Device-side value waits the batch holds: written only by value_wait.c
 * (devq__value_wait_issue, devq__value_wait_batch_done); issue.c reads
 * them to snapshot a gate, batch_life.c frees the array. */
struct batch_value_waits {
    struct devq_value_slot **slots;
    uint32_t nslots, capslots;
};

/* The batch's verdict as its callbacks walk it, op by op in stream order.
 * Written only by batch_walk.c (devq__batch_walk*, and
 * devq__batch_walk_reset when the pool hands the batch out); completion.c
 * reads err and cause to end the batch, nothing else reads it. */
struct batch_walk_state {
    uint32_t walked;            /* ops whose buffer effects are applied */
    uint32_t at;                /* first op failed */
    int err;                    /* the batch's failure, as far as walked */
    _Atomic int inline_done;    /* completed inline: the walk never clears */
    char cause[DEVQ_CAUSE_MAX]; /* of err */
};

/* The batch's forced failure: the first error that stops the rest of it
 * from running (its ops from `from` on are not run, its end callback
 * reports it).  Written only by batch_life.c: devq__batch_force (the
 * issuing thread, device lock), devq__batch_force_end (a batch ended
 * inline) and the reset in devq__batch_get.  Read by issue.c, defer.c,
 * completion.c and batch_walk.c; issue.c copies error and from into a
 * portion before queueing its callback, so the callback reads no field
 * the issuer may still write. */
struct batch_failure {
    int error;                  /* 0, or fail without running the rest */
    uint32_t from;              /* first op that did not run when forced */
    char cause[DEVQ_CAUSE_MAX]; /* of error; keeps the root of a chain */
};

/* Laid out for the hand-off: a batch is filled by the recording thread,
 * completed by the stream's callback thread and recycled to the recorder,
 * so every cache line either side touches per batch moves between cores.
 * The fields a batch resets or reads on every use come first, together;
 * the two cause strings (written only on failure, but reset with their
 * first byte) come last.  Batches are allocated on a cache line. */
struct batch {
    /* The fields outside a sub-struct: q is set by batch_life.c when the
     * pool hands the batch out; seq is numbered under the recorder role by
     * record.c at submit, or by inline.c for a batch it completes at
     * submit; cb_refs is a reference count (batch_life.c sets it, issue.c
     * takes one per callback queued, completion.c drops them); next links
     * the batch into whichever list holds it (the pool's free lists in
     * batch_life.c, the deferred FIFO in defer.c, completion.c's
     * completed-ahead list, inline.c's hand-back); held is filled by
     * record.c and released by batch_life.c or inline.c. */
    struct devq_queue *q;
    uint64_t seq; /* 1-based number on its queue */
    struct batch_record rec;
    struct batch_value_waits vw;
    struct batch_issue issue;
    struct batch_defer defer;
    uint32_t parked_uses; /* buffer uses registered; written by hazard.c only */
    /* Host callbacks that still point into this batch, plus one for its
     * completion: the last to let go recycles it, so a batch completed
     * early (its end callback could not be queued) outlives the
     * callbacks already queued for its ops. */
    _Atomic uint32_t cb_refs;
    struct batch *next; /* deferred FIFO / free list */
    /* One reference to each buffer and kernel the ops use (record.c);
     * dropped when the batch completes. */
    struct devq_ref_set held;
    /* Recording only, written by record.c (out of rec to keep it off the
     * lines every batch resets). */
    struct use_memo use_memo[DEVQ_USE_MEMO];
    /* Written on failure only, but reset with their first bytes. */
    struct batch_walk_state walk;
    struct batch_failure fail;
    /* Graph replays only, after the lines one-shot batches use: replay
     * is set by graph_submit.c and cleared by batch_life.c when the pool
     * hands the batch out (its record is a private copy, so issue.c may
     * send runs of its launches as one launch_list). */
    int replay;
    struct batch_lists lists;
    struct batch_plan plan;
};

/* Op o joins a launch list of a replay (issue.c, graph_plan.c). */
static inline int devq__op_list_joins(const struct op *o)
{
    return o->kind == OP_EXEC && o->u.exec.nargs <= DEVQ_PL_LIST_ARGS_MAX;
}


/* An op the stream runs with no host callback: a fill, copy, transfer
 * or launch (straight.c; record.c: such a batch never completes at
 * submit, inline.c).  One test of a mask. */
static inline int devq__op_stream_work(uint8_t kind)
{
    return kind < 32 && ((1u << kind) & ((1u << OP_FILL) | (1u << OP_COPY) | (1u << OP_WRITE) |
                                         (1u << OP_READ) | (1u << OP_EXEC)));
}

/* The write generation use u of b reads (struct buffer_use). */
static inline uint32_t devq__use_gen(const struct batch *b, const struct buffer_use *u)
{
    if (__builtin_expect(!u->run_buf, 1) || !b->replay || u->run_buf > b->plan.nbuf)
        return u->gen;
    return b->plan.buf[u->run_buf - 1].base + u->gen;
}

/* The buffers op o of b uses (o->nuses of them). */
static inline const struct buffer_use *devq__op_uses(const struct batch *b, const struct op *o)
{
    return o->nuses ? &b->rec.uses[o->first_use] : NULL; /* an op of no buffer: uses may be NULL */
}

/* The group flags of OP_WORK op o (DEVQ_WORK_MORE/CONT) and its group's
 * first op. */
static inline unsigned devq__work_group(const struct batch *b, const struct op *o, const struct op **head)
{
    unsigned group = 0;
    const struct op *next = (uint32_t)(o - b->rec.ops) + 1 < b->rec.nops ? o + 1 : NULL;
    if (next && next->kind == OP_WORK && next->u.work.run == o->u.work.run &&
        next->u.work.key == o->u.work.key)
        group |= DEVQ_WORK_MORE;
    const struct op *h = o;
    while (h > b->rec.ops && h[-1].kind == OP_WORK && h[-1].u.work.run == o->u.work.run &&
           h[-1].u.work.key == o->u.work.key)
        h--;
    if (h != o)
        group |= DEVQ_WORK_CONT;
    *head = h;
    return group;
}

#endif
