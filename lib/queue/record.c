/* SPDX-License-Identifier: MIT */
/* Recording: each call appends one op to the queue's open batch.
 *
 * Errors are sticky: the first failing call's error is kept, later calls
 * return it without recording, and submit returns it and discards the
 * whole batch, so a caller may check once.  A queue records from one
 * thread at a time; a concurrent recorder gets -EBUSY and changes nothing. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"
#include "batch_life.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "defer.h"
#include "error.h"
#include "inline.h"
#include "kernel.h"
#include "kernel_args.h"
#include "queue.h"
#include "record.h"
#include "signal_int.h"

/* A batch from the pool with nothing recorded: the record is written
 * here only (batch.h), so this file empties it, not the pool. */
static struct batch *fresh_batch(struct devq_queue *q)
{
    struct batch *b = devq__batch_get(q);
    if (b) {
        b->rec.nops = b->rec.nargs = b->rec.nuses = 0;
        b->rec.nbytes = 0;
    }
    return b;
}

struct batch *devq__record_fresh_batch(struct devq_queue *q)
{
    return fresh_batch(q);
}

/* The device was lost: one load in the common case, the message (and
 * the call) only when it was. */
static inline int lost_check(struct devq_device *dev)
{
    return __builtin_expect(atomic_load(&dev->lost) != 0, 0) ? devq__device_lost_check(dev) : 0;
}

/* Enter/leave the recorder role.  enter_inline is enter in the line of
 * the two calls of every one-shot batch (fill, signal): a call less,
 * and its frame merged with theirs. */
static inline __attribute__((always_inline)) int enter_inline(devq_queue *q, const char *fn)
{
    int r = devq__queue_check(q, fn);
    if (r < 0)
        return r;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&q->recording, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return devq__err(-EBUSY,
                         "%s: %s is being recorded by another thread; "
                         "record each queue from one thread at a time",
                         fn, devq__queue_label(q).s);
    if (q->sticky) {
        atomic_store_explicit(&q->recording, 0, memory_order_release);
        return devq__err_str(q->sticky, q->sticky_msg);
    }
    if ((r = lost_check(q->dev)) < 0) {
        atomic_store_explicit(&q->recording, 0, memory_order_release);
        return r;
    }
    if (!q->open && !(q->open = fresh_batch(q))) {
        atomic_store_explicit(&q->recording, 0, memory_order_release);
        return devq__err(-ENOMEM, "%s: out of memory for a batch", fn);
    }
    return 0;
}

static int enter(devq_queue *q, const char *fn)
{
    return enter_inline(q, fn);
}

static int leave(devq_queue *q, int r)
{
    if (r < 0 && !q->sticky) {
        q->sticky = r;
        snprintf(q->sticky_msg, sizeof q->sticky_msg, "%s", devq_errmsg());
    }
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    return r;
}

static struct op *push_op(struct batch *b);
static struct op *push_op_holding(struct batch *b, uint32_t nheld);

/* Recording one op from outside this file (timestamps, devq_barrier):
 * begin takes the recorder role, append adds a zeroed op to the open
 * batch, the caller fills it in, and commit gives the role back (making
 * an error sticky).  The op must be complete before commit: once the
 * role is given up, a submit in another thread may take the batch.  The
 * entry points in this file use the same role (enter/leave) directly. */
int devq__record_begin(devq_queue *q, const char *fn)
{
    return enter(q, fn);
}

int devq__record_append(devq_queue *q, uint32_t nheld, const char *fn, struct op **out)
{
    if (!(*out = push_op_holding(q->open, nheld)))
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    return 0;
}

int devq__record_commit(devq_queue *q, int r)
{
    return leave(q, r);
}

/* The batch holds one reference to each buffer and kernel its ops use
 * (object.h's reference set), taken the first time as far as its small
 * memo of recent ones tells (a miss only costs a second reference).  A
 * batch of 64 launches over 3 buffers takes 3 references, not 192: these
 * counters are shared with the stream thread that drops them at
 * completion, and every touch moves their cache line between the two.
 * Room is reserved before an op is pushed, so holding never fails and a
 * failed recording call leaves the batch unchanged. */
static struct op *push_op_holding(struct batch *b, uint32_t nheld)
{
    if (!nheld)
        return push_op(b); /* signal ops, barriers, timestamps */
    if (devq__ref_set_reserve(&b->held, nheld) < 0)
        return NULL;
    /* And room in the flat list of buffer uses (at most one per held). */
    if (b->rec.nuses + nheld > b->rec.capuses) {
        uint32_t cap = b->rec.capuses ? b->rec.capuses : 16;
        while (cap < b->rec.nuses + nheld)
            cap *= 2;
        struct buffer_use *u = realloc(b->rec.uses, cap * sizeof *u);
        if (!u)
            return NULL;
        b->rec.uses = u;
        b->rec.capuses = cap;
    }
    return push_op(b);
}

static struct op *push_op(struct batch *b)
{
    if (b->rec.nops == b->rec.capops) {
        uint32_t cap = b->rec.capops ? b->rec.capops * 2 : 8;
        struct op *o = realloc(b->rec.ops, cap * sizeof *o);
        if (!o)
            return NULL;
        b->rec.ops = o;
        b->rec.capops = cap;
    }
    struct op *o = &b->rec.ops[b->rec.nops++];
    *o = (struct op){ .first_use = b->rec.nuses }; /* stores, not a memset call */
    return o;
}

static __attribute__((noinline, cold)) int bad_range(const char *fn, const char *what, const devq_buffer *b,
                                                     size_t off, size_t n)
{
    if (n == 0)
        return devq__err(-EINVAL, "%s: %s size is 0", fn, what);
    return devq__err(-EINVAL, "%s: %s range [%zu, +%zu) is outside %s, which has %zu bytes", fn, what, off, n,
                     devq__buffer_label(b).s, b->size);
}

/* Inline, the message out of line: every recorded transfer checks one. */
static inline int check_range(const char *fn, const char *what, const devq_buffer *b, size_t off, size_t n)
{
    if (__builtin_expect(n == 0 || off > b->size || n > b->size - off, 0))
        return bad_range(fn, what, b, off, n);
    return 0;
}

/* Out of line: its labels would give every check_buffer a large frame. */
static __attribute__((noinline, cold)) int foreign_buffer(devq_queue *q, const devq_buffer *b, const char *fn,
                                                          const char *what)
{
    return devq__err(-EINVAL, "%s: %s %s belongs to %s:%d but %s is on %s:%d", fn, what,
                     devq__buffer_label(b).s, b->dev->info.backend, b->dev->info.ordinal,
                     devq__queue_label(q).s, q->dev->info.backend, q->dev->info.ordinal);
}

static inline int check_buffer(devq_queue *q, const devq_buffer *b, const char *fn, const char *what)
{
    /* The common answer without a call: a live buffer of this device. */
    if (__builtin_expect(b && b->obj.magic == DEVQ_MAGIC_BUFFER && !b->freed && b->dev == q->dev, 1))
        return 0;
    int r = devq__buffer_check(b, fn);
    if (r < 0)
        return r;
    if (b->dev != q->dev)   // NOLINT(clang-analyzer-core.NullDereference): devq__buffer_check refuses NULL
        return foreign_buffer(q, b, fn, what);
    return 0;
}

/* A buffer used by a recorded op: keep it alive and make a free wait.
 * No device lock: a free that must see this use happens after the
 * recording call returned (else the program frees a buffer it is still
 * recording with), and the counter is atomic.
 *
 * Once per batch and buffer, as far as the memo tells: a buffer the
 * batch used already is held already, and its `unissued` count moves to
 * this use (the latest), so it drops only when the last use of the
 * batch is issued, exactly as one count per use did.  64 launches over
 * the same three buffers take three references and three counts, not
 * 192 locked adds and 192 locked subtracts.  A memo miss (evicted)
 * only costs a second count, held by this use.
 *
 * The memo is not emptied per batch: an entry counts only when the use
 * it names is one of this batch's (below nuses) and of its buffer.  Every
 * use of a batch is recorded here, which rewrites the buffer's entry, so
 * an entry left by an earlier batch can never pass that test. */
static __attribute__((noinline)) void first_use(struct batch *batch, devq_buffer *b, struct use_memo *m)
{
    devq__ref_set_add(&batch->held, &b->obj);
    atomic_fetch_add_explicit(&b->unissued, 1, memory_order_relaxed);
    m->buf = b;
}

static inline __attribute__((always_inline)) void use_buffer(struct batch *batch, struct op *o,
                                                             devq_buffer *b, enum devq_access access)
{
    uint32_t at = batch->rec.nuses++; /* room was reserved */
    struct use_memo *m = &batch->use_memo[((uintptr_t)b >> 6) % DEVQ_USE_MEMO];
    if (m->buf == b && m->use < at && batch->rec.uses[m->use].buf == b)
        batch->rec.uses[m->use].counted = 0; /* the count moves to this use */
    else
        first_use(batch, b, m);
    m->use = at;
    batch->rec.uses[at] = (struct buffer_use){ .buf = b, .access = (uint8_t)access, .counted = 1 };
    o->nuses++;
}

/* A signal recorded after the batch went bad (a sticky error, a lost
 * device) is still kept, so the discard at submit or destroy fails it:
 * its waiters learn why instead of timing out.  Returns err. */
static __attribute__((noinline, cold)) int keep_for_discard(devq_queue *q, devq_signal *s, uint64_t v,
                                                            int err)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&q->recording, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return err;
    struct op *o;
    if (devq__signal_check(s, "devq_queue_signal") == 0 && (q->open || (q->open = fresh_batch(q))) &&
        (o = push_op(q->open))) {
        o->kind = OP_SIGNAL;
        o->u.sig.s = s;
        o->u.sig.v = v;
        o->u.sig.owner = q->open;
        devq__signal_retain(s);
    }
    char msg[DEVQ_CAUSE_MAX];
    snprintf(msg, sizeof msg, "%s", q->sticky ? q->sticky_msg : devq_errmsg());
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    return devq__err_str(err, msg);
}

/* Append a wait or signal op; the caller holds the recorder role. */
static inline __attribute__((always_inline)) int record_signal(devq_queue *q, devq_signal *s, uint64_t v,
                                                               enum op_kind kind, const char *fn)
{
    int r = devq__signal_check(s, fn);
    if (r < 0)
        return r;
    struct op *o = push_op(q->open); /* holds no buffer */
    if (!o)
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    o->kind = (uint8_t)kind;
    o->u.sig.s = s;
    o->u.sig.v = v;
    o->u.sig.owner = q->open;
    devq__signal_retain(s);
    return 0;
}

int devq__record_signal(devq_queue *q, devq_signal *s, uint64_t v, enum op_kind kind, const char *fn)
{
    return record_signal(q, s, v, kind, fn);
}

static int record_signal_op(devq_queue *q, devq_signal *s, uint64_t v, enum op_kind kind, const char *fn)
{
    int r = enter_inline(q, fn);
    if (r < 0)
        return kind == OP_SIGNAL && r != -EBUSY && devq__queue_check(q, fn) == 0
                   ? keep_for_discard(q, s, v, r)
                   : r;
    return leave(q, record_signal(q, s, v, kind, fn));
}

DEVQ_API int devq_queue_wait(devq_queue *q, devq_signal *s, uint64_t value)
{
    return record_signal_op(q, s, value, OP_WAIT, "devq_queue_wait");
}

DEVQ_API int devq_queue_signal(devq_queue *q, devq_signal *s, uint64_t value)
{
    return record_signal_op(q, s, value, OP_SIGNAL, "devq_queue_signal");
}

static int check_launch(const devq_launch *l, const char *fn)
{
    if (!l)
        return devq__err(-EINVAL, "%s: launch is NULL", fn);
    if (l->global[0] == 0)
        return devq__err(-EINVAL, "%s: launch.global[0] is 0; give the number of work-items", fn);
    return 0;
}

/* 1-D and 2-D launches leave the rest 0, and a local size of 0 is 1.
 * Normalised in registers and stored once: a copy written whole and then
 * fixed field by field (or the reverse) makes the next wide load of it
 * wait for the narrow stores (store forwarding fails), and this runs for
 * every launch. */
static inline devq_launch normalize_launch(const devq_launch *l)
{
    uint32_t g1 = l->global[1], g2 = l->global[2], l0 = l->local[0], l1 = l->local[1], l2 = l->local[2];
    return (devq_launch){ { l->global[0], g1 + (g1 == 0), g2 + (g2 == 0) },
                          { l0 + (l0 == 0), l1 + (l1 == 0), l2 + (l2 == 0) },
                          l->shared_bytes };
}

DEVQ_API int devq_queue_exec(devq_queue *q, devq_kernel *k, const devq_arg *args, size_t nargs,
                             const devq_launch *l)
{
    const char *fn = "devq_queue_exec";
    int r = enter(q, fn);
    if (r < 0)
        return r;
    struct batch *b = q->open;
    if ((r = devq__kernel_check(k, fn)) < 0)
        return leave(q, r);
    if (k->dev != q->dev)
        return leave(q, devq__err(-EINVAL, "%s: %s was loaded on %s:%d, not on %s's device", fn,
                                  devq__kernel_label(k).s, k->dev->info.backend, k->dev->info.ordinal,
                                  devq__queue_label(q).s));
    if (nargs && !args)
        return leave(
            q, devq__err(-EINVAL, "%s: %s: args is NULL with nargs %zu", fn, devq__kernel_label(k).s, nargs));
    if (nargs > 4096)
        return leave(q, devq__err(-EINVAL, "%s: %zu arguments; at most 4096", fn, nargs));
    if ((r = check_launch(l, fn)) < 0)
        return leave(q, r);
    size_t bytes = 0;
    for (size_t i = 0; i < nargs; i++) {
        const devq_arg *a = &args[i];
        if (a->buf) {
            if ((r = check_buffer(q, a->buf, fn, "argument")) < 0)
                return leave(q, r);
            if (a->access < DEVQ_READ || a->access > DEVQ_READ_WRITE)
                return leave(
                    q, devq__err(
                           -EINVAL,
                           "%s: %s: argument %zu: access %d is not DEVQ_READ, DEVQ_WRITE or DEVQ_READ_WRITE",
                           fn, devq__kernel_label(k).s, i, (int)a->access));
        } else {
            if (!a->value || a->size == 0 || a->size > 4096)
                return leave(
                    q,
                    devq__err(
                        -EINVAL,
                        "%s: %s: argument %zu: a value argument needs a pointer and 1..4096 bytes (got %p, %zu)",
                        fn, devq__kernel_label(k).s, i, a->value, a->size));
            bytes += (a->size + 15) & ~(size_t)15;
        }
    }
    /* Against what the kernel declares (kernel_args.c): a mismatch is a
     * sticky recording error here, never undefined results on the device. */
    if ((r = devq__kernel_args_check(k, args, nargs, fn)) < 0)
        return leave(q, r);
    /* Reserve everything first so a failure leaves the batch unchanged. */
    if (b->rec.nargs + nargs > b->rec.capargs) {
        uint32_t cap = b->rec.capargs ? b->rec.capargs : 8;
        while (cap < b->rec.nargs + nargs)
            cap *= 2;
        struct devq_pl_arg *na = realloc(b->rec.args, cap * sizeof *na);
        if (!na)
            return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
        b->rec.args = na;
        b->rec.capargs = cap;
    }
    if (b->rec.nbytes + bytes > b->rec.capbytes) {
        size_t cap = b->rec.capbytes ? b->rec.capbytes : 256;
        while (cap < b->rec.nbytes + bytes)
            cap *= 2;
        unsigned char *nb = realloc(b->rec.bytes, cap);
        if (!nb)
            return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
        b->rec.bytes = nb;
        b->rec.capbytes = cap;
    }
    struct op *o = push_op_holding(b, (uint32_t)nargs + 1);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
    o->kind = OP_EXEC;
    o->u.exec.k = k;
    o->u.exec.l = normalize_launch(l);
    o->u.exec.first_arg = b->rec.nargs;
    o->u.exec.nargs = (uint32_t)nargs;
    devq__ref_set_add(&b->held, &k->obj);
    for (size_t i = 0; i < nargs; i++) {
        struct devq_pl_arg *pa = &b->rec.args[b->rec.nargs++];
        if (args[i].buf) {
            *pa = (struct devq_pl_arg){ .is_buffer = 1, .device_ptr = args[i].buf->dptr };
            use_buffer(b, o, args[i].buf, args[i].access);
        } else {
            /* Values are copied now: the caller's bytes may be gone by
             * submit.  Their address is known only then (bytes grows). */
            *pa =
                (struct devq_pl_arg){ .value = (const void *)(uintptr_t)b->rec.nbytes, .size = args[i].size };
            o->u.exec.values++;
            memcpy(b->rec.bytes + b->rec.nbytes, args[i].value, args[i].size);
            b->rec.nbytes += (args[i].size + 15) & ~(size_t)15;
        }
    }
    return leave(q, 0);
}

DEVQ_API int devq_queue_copy(devq_queue *q, devq_buffer *dst, size_t dst_off, devq_buffer *src,
                             size_t src_off, size_t n)
{
    const char *fn = "devq_queue_copy";
    int r = enter(q, fn);
    if (r < 0)
        return r;
    if ((r = check_buffer(q, dst, fn, "destination")) < 0 || (r = check_buffer(q, src, fn, "source")) < 0 ||
        (r = check_range(fn, "destination", dst, dst_off, n)) < 0 ||
        (r = check_range(fn, "source", src, src_off, n)) < 0)
        return leave(q, r);
    if (dst == src && dst_off < src_off + n && src_off < dst_off + n)
        return leave(q, devq__err(-EINVAL, "%s: source and destination ranges overlap in one buffer", fn));
    struct op *o = push_op_holding(q->open, 2);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
    o->kind = OP_COPY;
    o->u.copy.dst = dst;
    o->u.copy.src = src;
    o->u.copy.dst_off = dst_off;
    o->u.copy.src_off = src_off;
    o->u.copy.n = n;
    use_buffer(q->open, o, src, DEVQ_READ);
    use_buffer(q->open, o, dst, DEVQ_WRITE);
    return leave(q, 0);
}

DEVQ_API int devq_queue_fill(devq_queue *q, devq_buffer *dst, size_t off, size_t n, uint8_t byte)
{
    const char *fn = "devq_queue_fill";
    int r = enter_inline(q, fn);
    if (r < 0)
        return r;
    if ((r = check_buffer(q, dst, fn, "destination")) < 0 || (r = check_range(fn, "fill", dst, off, n)) < 0)
        return leave(q, r);
    struct op *o = push_op_holding(q->open, 1);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
    o->kind = OP_FILL;
    o->u.fill.dst = dst;
    o->u.fill.off = off;
    o->u.fill.n = n;
    o->u.fill.byte = byte;
    use_buffer(q->open, o, dst, DEVQ_WRITE);
    return leave(q, 0);
}

static int record_xfer(devq_queue *q, enum op_kind kind, devq_buffer *buf, size_t off, void *host, size_t n,
                       const char *fn)
{
    int r = enter(q, fn);
    if (r < 0)
        return r;
    if ((r = check_buffer(q, buf, fn, "device")) < 0 || (r = check_range(fn, "transfer", buf, off, n)) < 0)
        return leave(q, r);
    if (!host)
        return leave(q, devq__err(-EINVAL, "%s: host pointer is NULL", fn));
    struct op *o = push_op_holding(q->open, 1);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "%s: out of memory", fn));
    o->kind = (uint8_t)kind;
    o->u.xfer.buf = buf;
    o->u.xfer.off = off;
    o->u.xfer.n = n;
    o->u.xfer.host = host;
    use_buffer(q->open, o, buf, kind == OP_WRITE ? DEVQ_WRITE : DEVQ_READ);
    return leave(q, 0);
}

DEVQ_API int devq_queue_write(devq_queue *q, devq_buffer *dst, size_t off, const void *src, size_t n)
{
    return record_xfer(q, OP_WRITE, dst, off, (void *)src, n, "devq_queue_write");
}

DEVQ_API int devq_queue_read(devq_queue *q, void *dst, devq_buffer *src, size_t off, size_t n)
{
    return record_xfer(q, OP_READ, src, off, dst, n, "devq_queue_read");
}

DEVQ_API int devq_queue_barrier(devq_queue *q)
{
    int r = enter(q, "devq_queue_barrier");
    if (r < 0)
        return r;
    /* A stream runs its ops in order, so a barrier inside one queue only
     * marks the point (for traces); it is kept so code written for
     * hardware queues that overlap ops stays correct here. */
    struct op *o = push_op(q->open);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "devq_queue_barrier: out of memory"));
    o->kind = OP_BARRIER;
    return leave(q, 0);
}

DEVQ_API int devq_queue_host_fn(devq_queue *q, void (*fn)(void *arg), void *arg)
{
    int r = enter(q, "devq_queue_host_fn");
    if (r < 0)
        return r;
    if (!fn)
        return leave(q, devq__err(-EINVAL, "devq_queue_host_fn: fn is NULL"));
    struct op *o = push_op(q->open);
    if (!o)
        return leave(q, devq__err(-ENOMEM, "devq_queue_host_fn: out of memory"));
    o->kind = OP_HOST_FN;
    o->u.host.fn = fn;
    o->u.host.arg = arg;
    o->u.host.owner = q->open;
    return leave(q, 0);
}

int devq__record_work(devq_queue *q, devq_work_fn run, devq_work_issue_fn issue, const void *key,
                      const void *data, size_t size, const struct buffer_use *uses, uint32_t nuses,
                      struct devq_object *hold, int writes_whole, const char *fn)
{
    struct batch *b = q->open;
    size_t need = (size + 15) & ~(size_t)15;
    if (b->rec.nbytes + need > b->rec.capbytes) {
        size_t cap = b->rec.capbytes ? b->rec.capbytes : 256;
        while (cap < b->rec.nbytes + need)
            cap *= 2;
        unsigned char *nb = realloc(b->rec.bytes, cap);
        if (!nb)
            return devq__err(-ENOMEM, "%s: out of memory", fn);
        b->rec.bytes = nb;
        b->rec.capbytes = cap;
    }
    struct op *o = push_op_holding(b, nuses + (hold != NULL));
    if (!o)
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    o->kind = OP_WORK;
    o->u.work.run = run;
    o->u.work.issue = issue;
    o->u.work.key = key;
    o->u.work.off = b->rec.nbytes;
    o->u.work.owner = b;
    o->u.work.whole = writes_whole;
    memcpy(b->rec.bytes + b->rec.nbytes, data, size);
    b->rec.nbytes += need;
    for (uint32_t i = 0; i < nuses; i++)
        use_buffer(b, o, uses[i].buf, uses[i].access);
    if (hold)
        devq__ref_set_add(&b->held, hold);
    return 0;
}

/* The two ways submit drops a batch, out of line: their message
 * buffers would give every submit a large frame. */
static __attribute__((noinline, cold)) int discard_sticky(devq_queue *q, struct batch *b, int sticky)
{
    char msg[DEVQ_CAUSE_MAX + DEVQ_LABEL_MAX + 32];
    snprintf(msg, sizeof msg, "%s: batch discarded at submit: %s", devq__queue_label(q).s, q->sticky_msg);
    if (b)
        devq__batch_discard(b, sticky, msg);
    atomic_store(&q->recording, 0);
    devq__queue_record_failure(q, sticky, msg); /* finish reports it once */
    return devq__err(sticky, "devq_queue_submit: %s", msg);
}

static __attribute__((noinline, cold)) int discard_lost(devq_queue *q, struct batch *b, int r)
{
    atomic_store(&q->recording, 0);
    char msg[DEVQ_CAUSE_MAX + 48];
    snprintf(msg, sizeof msg, "%s: batch discarded at submit: %s", devq__queue_label(q).s, devq_errmsg());
    devq__batch_discard(b, r, msg);
    devq__queue_record_failure(q, r, msg);
    return devq__err(r, "devq_queue_submit: %s", msg);
}

/* Take the open batch out for submission; a sticky error discards it. */
DEVQ_API int devq_queue_submit(devq_queue *q)
{
    int r = devq__queue_check(q, "devq_queue_submit");
    if (r < 0)
        return r;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&q->recording, &expected, 1))
        return devq__err(-EBUSY, "devq_queue_submit: %s is being recorded by another thread",
                         devq__queue_label(q).s);
    if (atomic_load_explicit(&q->capturing, memory_order_relaxed)) {
        atomic_store(&q->recording, 0);
        return devq__err(-EBUSY,
                         "devq_queue_submit: %s is capturing a graph; call devq_queue_end_capture first",
                         devq__queue_label(q).s);
    }
    struct batch *b = q->open;
    q->open = NULL;
    int sticky = q->sticky;
    q->sticky = 0;
    if (sticky)
        return discard_sticky(q, b, sticky);
    if (!b) {
        /* An empty submit still gets a batch: its completion orders
         * everything before it, which finish and barriers rely on. */
        if (!(b = fresh_batch(q))) {
            atomic_store(&q->recording, 0);
            return devq__err(-ENOMEM, "devq_queue_submit: out of memory");
        }
    }
    return devq__record_submit(q, b);
}

int devq__record_submit(devq_queue *q, struct batch *b)
{
    int r;
    if ((r = lost_check(q->dev)) < 0)
        return discard_lost(q, b, r);
    /* Signals only, or host work then signals, nothing before it pending;
     * a batch that starts with stream work is neither (one test). */
    if (!(b->rec.nops && devq__op_stream_work(b->rec.ops[0].kind)) && devq__submit_inline(q, b))
        return 0;
    /* The recorder role is held: nobody else numbers batches (as in
     * inline.c), so a load and a release store, not a locked add. */
    b->seq = atomic_load_explicit(&q->submitted, memory_order_relaxed) + 1;
    atomic_store_explicit(&q->submitted, b->seq, memory_order_release);
    atomic_fetch_add_explicit(&q->dev->stats.batches_submitted, 1, memory_order_relaxed);
    pthread_mutex_lock(&q->dev->lock);
    r = devq__submit_locked(q, b);
    pthread_mutex_unlock(&q->dev->lock);
    /* The role is given back last (a release store, as leave() gives it
     * back): a submit racing in another thread (misuse, but it must not
     * corrupt; devq_queue_submit(3) EBUSY) takes the next batch after
     * this one is issued, and the pool's private list, which the warm
     * refills, is the role's. */
    devq__batch_pool_warm(q);
    atomic_store_explicit(&q->recording, 0, memory_order_release);
    return r;
}
