/* SPDX-License-Identifier: MIT */
/* Emulator engine: in-order streams run by host worker threads, the ops
 * they run, and events that mark stream positions. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "emu_engine.h"

#define STREAM_MAGIC 0x454d5553u
#define EVENT_MAGIC 0x454d5645u

enum op_kind {
    OP_COPY,
    OP_FILL,
    OP_HOST,
    OP_KERNEL,
    OP_WAIT_VALUE,
    OP_WRITE_VALUE,
    OP_FREE,
    OP_RECORD,
    OP_WAIT_EVENT,
    OP_GRAPH
};

struct op {
    struct op *next;
    uint64_t seq; /* position in its stream, for traces */
    enum op_kind kind;
    struct emu_fail fail; /* injected error raised when the op runs */
    union {
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            uint8_t byte;
            size_t n;
        } fill;
        struct {
            emu_host_fn fn;
            void *arg;
            bool run_on_error;
        } host;
        struct {
            emu_kernel_fn fn;
            uint32_t grid[3], block[3];
            void **params;
        } kernel;
        struct {
            uint64_t *addr;
            uint64_t value;
        } value;
        struct {
            void *ptr;
        } free;
        struct {
            struct emu_mark *mark;
        } ev;
        struct {
            int (*run)(void *arg);
            void (*release)(void *arg);
            void *arg;
        } call;
    } u;
};

struct emu_stream {
    uint32_t magic;
    unsigned id; /* for DEVQ_EMU_TRACE */
    emu_ctx *ctx;
    uint64_t gen; /* the context generation it belongs to */
    int priority;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* ops queued or dying */
    pthread_cond_t done_cv; /* an op completed (or a poison) */
    struct op *head, *tail;
    uint64_t enqueued, completed;
    int sync_waiters;
    bool dying;
    unsigned rng; /* worker-only: random delays */
};

/* One record of an event: the stream position it marks.  A stream wait
 * captures the event's latest mark when it is queued, as
 * cuStreamWaitEvent does, so re-recording the event (on any stream)
 * never changes what an earlier wait waits for. */
struct emu_mark {
    emu_ctx *ctx;
    uint64_t gen; /* the context generation of its event */
    /* under ctx's event lock */
    int refs;          /* the event, its record op, waits on it */
    bool done;         /* the record op ran */
    uint64_t stamp_ns; /* when */
};

struct emu_event {
    uint32_t magic;
    emu_ctx *ctx;
    uint64_t gen;
    bool timing;
    bool destroyed;
    struct emu_mark *last; /* under ctx's event lock; NULL: never recorded */
};

/* Wait-value ops poll host memory as a device does; writes made by the
 * emulator itself wake them at once through this condvar. */
static pthread_mutex_t value_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t value_cv = PTHREAD_COND_INITIALIZER;
static uint64_t value_epoch;

void emu__wake_value_waiters(void)
{
    pthread_mutex_lock(&value_mu);
    value_epoch++;
    pthread_cond_broadcast(&value_cv);
    pthread_mutex_unlock(&value_mu);
}

static const char *const op_names[] = {
    [OP_COPY] = "copy",
    [OP_FILL] = "fill",
    [OP_HOST] = "host_fn",
    [OP_KERNEL] = "kernel",
    [OP_WAIT_VALUE] = "wait_value",
    [OP_WRITE_VALUE] = "write_value",
    [OP_FREE] = "free",
    [OP_RECORD] = "record",
    [OP_WAIT_EVENT] = "wait_event",
    [OP_GRAPH] = "graph",
};

/* DEVQ_EMU_TRACE: one stderr line per op queued ("+") and run ("="). */
static void trace(char what, const emu_stream *s, const struct op *op, uint64_t seq)
{
    if (!emu__trace())
        return;
    char extra[96] = "";
    if (op->kind == OP_RECORD || op->kind == OP_WAIT_EVENT)
        snprintf(extra, sizeof extra, " mark %p", (void *)op->u.ev.mark);
    else if (op->kind == OP_COPY)
        snprintf(extra, sizeof extra, " %p <- %p %zu", op->u.copy.dst, op->u.copy.src, op->u.copy.n);
    fprintf(stderr, "emu %c s%u #%llu %s%s\n", what, s->id, (unsigned long long)seq, op_names[op->kind],
            extra);
}

/* 0, the context's sticky error, or EMU_E_INVALID_CONTEXT when the
 * context was destroyed since the object was made. */
static int ctx_status(emu_ctx *c, uint64_t gen)
{
    if (emu_ctx_generation(c) != gen)
        return EMU_E_INVALID_CONTEXT;
    return emu_ctx_status(c);
}

static int stream_status(emu_stream *s)
{
    return ctx_status(s->ctx, s->gen);
}

/* ---- events ---- */

static void mark_unref(struct emu_mark *m)
{
    emu__ctx_event_lock(m->ctx);
    bool free_it = --m->refs == 0;
    emu__ctx_event_unlock(m->ctx);
    if (free_it)
        free(m);
}

/* The event's latest mark with a reference for the caller, or NULL. */
static struct emu_mark *last_mark(emu_event *e)
{
    emu__ctx_event_lock(e->ctx);
    struct emu_mark *m = e->last;
    if (m)
        m->refs++;
    emu__ctx_event_unlock(e->ctx);
    return m;
}

int emu_event_create(emu_ctx *c, bool timing, emu_event **out)
{
    int st = emu_ctx_status(c);
    if (st)
        return st;
    emu_event *e = calloc(1, sizeof *e);
    if (!e)
        return EMU_E_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    e->ctx = c;
    e->gen = emu_ctx_generation(c);
    e->timing = timing;
    *out = e;
    return 0;
}

bool emu_event_valid(const emu_event *e)
{
    return e && e->magic == EVENT_MAGIC && !e->destroyed;
}

/* Queued ops hold marks, not the event: it can go at once. */
int emu_event_destroy(emu_event *e)
{
    if (!emu_event_valid(e))
        return EMU_E_INVALID_HANDLE;
    emu__ctx_event_lock(e->ctx);
    struct emu_mark *m = e->last;
    e->last = NULL;
    e->destroyed = true;
    emu__ctx_event_unlock(e->ctx);
    if (m)
        mark_unref(m);
    e->magic = 0;
    free(e);
    return 0;
}

int emu_event_query(emu_event *e)
{
    if (!emu_event_valid(e))
        return EMU_E_INVALID_HANDLE;
    int st = ctx_status(e->ctx, e->gen);
    if (st)
        return st;
    emu__ctx_event_lock(e->ctx);
    bool done = !e->last || e->last->done;
    emu__ctx_event_unlock(e->ctx);
    return done ? 0 : EMU_E_NOT_READY;
}

int emu_event_synchronize(emu_event *e)
{
    if (!emu_event_valid(e))
        return EMU_E_INVALID_HANDLE;
    struct emu_mark *m = last_mark(e);
    if (!m)
        return ctx_status(e->ctx, e->gen);
    emu__ctx_event_lock(e->ctx);
    while (!m->done && !ctx_status(e->ctx, e->gen))
        emu__ctx_event_wait(e->ctx);
    emu__ctx_event_unlock(e->ctx);
    mark_unref(m);
    return ctx_status(e->ctx, e->gen);
}

int emu_event_elapsed_ms(emu_event *a, emu_event *b, float *ms)
{
    if (!emu_event_valid(a) || !emu_event_valid(b) || !a->timing || !b->timing)
        return EMU_E_INVALID_HANDLE;
    int st = ctx_status(a->ctx, a->gen);
    if (st)
        return st;
    emu__ctx_event_lock(a->ctx);
    if (b->ctx != a->ctx)
        emu__ctx_event_lock(b->ctx);
    if (!a->last || !b->last)
        st = EMU_E_INVALID_HANDLE;
    else if (!a->last->done || !b->last->done)
        st = EMU_E_NOT_READY;
    else
        *ms = (float)((double)((int64_t)(b->last->stamp_ns - a->last->stamp_ns)) / 1e6);
    if (b->ctx != a->ctx)
        emu__ctx_event_unlock(b->ctx);
    emu__ctx_event_unlock(a->ctx);
    return st;
}

/* ---- streams ---- */

bool emu_stream_valid(const emu_stream *s)
{
    return s && s->magic == STREAM_MAGIC;
}

emu_ctx *emu_stream_ctx(emu_stream *s)
{
    return s->ctx;
}

void emu__stream_kick(emu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->done_cv);
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
}

static void random_delay(emu_stream *s)
{
    unsigned max = emu__delay_max_us();
    if (!max)
        return;
    unsigned us = (unsigned)rand_r(&s->rng) % (max + 1);
    struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

static bool value_reached(const uint64_t *addr, uint64_t value)
{
    return (int64_t)(__atomic_load_n(addr, __ATOMIC_ACQUIRE) - value) >= 0;
}

/* A device polls the word; so does the emulator, backing off up to
 * 500 us, and emulator writes wake it at once. */
static void wait_value(emu_stream *s, uint64_t *addr, uint64_t value)
{
    long backoff_ns = 20000;
    pthread_mutex_lock(&value_mu);
    while (!value_reached(addr, value) && !stream_status(s)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += backoff_ns;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&value_cv, &value_mu, &ts);
        if (backoff_ns < 500000)
            backoff_ns *= 2;
    }
    pthread_mutex_unlock(&value_mu);
}

static void wait_mark(emu_stream *s, struct emu_mark *m)
{
    emu__ctx_event_lock(m->ctx);
    while (!m->done && !ctx_status(m->ctx, m->gen) && !stream_status(s))
        emu__ctx_event_wait(m->ctx);
    emu__ctx_event_unlock(m->ctx);
}

static void mark_done(struct emu_mark *m)
{
    uint64_t now = emu__now_ns();
    emu__ctx_event_lock(m->ctx);
    m->done = true;
    m->stamp_ns = now;
    emu__ctx_event_broadcast(m->ctx);
    emu__ctx_event_unlock(m->ctx);
}

int emu__kernel_run(emu_kernel_fn fn, const uint32_t grid[3], const uint32_t block[3], void **params)
{
    devq_cpu_group g;
    for (int d = 0; d < 3; d++) {
        g.local_size[d] = block[d];
        g.num_groups[d] = grid[d];
        g.global_size[d] = grid[d] * block[d];
    }
    for (uint32_t z = 0; z < g.num_groups[2]; z++)
        for (uint32_t y = 0; y < g.num_groups[1]; y++)
            for (uint32_t x = 0; x < g.num_groups[0]; x++) {
                g.group_id[0] = x;
                g.group_id[1] = y;
                g.group_id[2] = z;
                if (fn(params, &g) != 0)
                    return EMU_E_LAUNCH_FAILED;
            }
    return 0;
}

/* Run one op; returns a sticky error to poison the context with, or 0. */
static int run_op(emu_stream *s, struct op *op)
{
    int st = stream_status(s);
    if (st) {
        if (op->kind == OP_HOST && op->u.host.run_on_error)
            op->u.host.fn(op->u.host.arg, st);
        return 0;
    }
    if (op->fail.code)
        return op->fail.sticky ? op->fail.code : 0;
    switch (op->kind) {
    case OP_COPY:
        memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
        break;
    case OP_FILL:
        memset(op->u.fill.dst, op->u.fill.byte, op->u.fill.n);
        break;
    case OP_HOST:
        op->u.host.fn(op->u.host.arg, 0);
        break;
    case OP_KERNEL:
        return emu__kernel_run(op->u.kernel.fn, op->u.kernel.grid, op->u.kernel.block, op->u.kernel.params);
    case OP_GRAPH:
        return op->u.call.run(op->u.call.arg);
    case OP_WAIT_VALUE:
        wait_value(s, op->u.value.addr, op->u.value.value);
        break;
    case OP_WRITE_VALUE:
        __atomic_store_n(op->u.value.addr, op->u.value.value, __ATOMIC_RELEASE);
        emu__wake_value_waiters();
        break;
    case OP_FREE: /* release_op gives the memory back, poisoned or not */
        break;
    case OP_RECORD:
        mark_done(op->u.ev.mark);
        break;
    case OP_WAIT_EVENT:
        wait_mark(s, op->u.ev.mark);
        break;
    }
    return 0;
}

static void release_op(struct op *op)
{
    if (op->kind == OP_KERNEL)
        free(op->u.kernel.params);
    if (op->kind == OP_RECORD || op->kind == OP_WAIT_EVENT)
        mark_unref(op->u.ev.mark);
    if (op->kind == OP_FREE)
        emu_mem_free(op->u.free.ptr);
    if (op->kind == OP_GRAPH)
        op->u.call.release(op->u.call.arg);
    free(op);
}

static void *worker(void *arg)
{
    emu_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->dying)
            pthread_cond_wait(&s->work_cv, &s->mu);
        struct op *op = s->head;
        if (!op)
            break;
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);

        random_delay(s);
        trace('=', s, op, op->seq);
        int sticky = run_op(s, op);
        if (sticky)
            emu_ctx_poison(s->ctx, sticky);
        release_op(op);

        pthread_mutex_lock(&s->mu);
        s->completed++;
        if (s->sync_waiters)
            pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    emu__ctx_detach_stream(s->ctx, s);
    s->magic = 0;
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
}

int emu_stream_create(emu_ctx *c, int priority, emu_stream **out)
{
    int st = emu_ctx_status(c);
    if (st)
        return st;
    emu_stream *s = calloc(1, sizeof *s);
    if (!s)
        return EMU_E_OUT_OF_MEMORY;
    static atomic_uint next_id;
    s->magic = STREAM_MAGIC;
    s->id = atomic_fetch_add(&next_id, 1);
    s->ctx = c;
    s->gen = emu_ctx_generation(c);
    s->priority = priority;
    s->rng = emu__seed() ^ (s->id * 2654435761u);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    emu__ctx_attach_stream(c, s);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thr;
    int rc = pthread_create(&thr, &attr, worker, s);
    pthread_attr_destroy(&attr);
    if (rc) {
        emu__ctx_detach_stream(c, s);
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return EMU_E_OUT_OF_MEMORY;
    }
    *out = s;
    return 0;
}

int emu_stream_destroy(emu_stream *s)
{
    if (!emu_stream_valid(s))
        return EMU_E_INVALID_HANDLE;
    pthread_mutex_lock(&s->mu);
    s->dying = true;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int emu_stream_synchronize(emu_stream *s)
{
    if (!emu_stream_valid(s))
        return EMU_E_INVALID_HANDLE;
    pthread_mutex_lock(&s->mu);
    s->sync_waiters++;
    while (s->completed < s->enqueued)
        pthread_cond_wait(&s->done_cv, &s->mu);
    s->sync_waiters--;
    pthread_mutex_unlock(&s->mu);
    return stream_status(s);
}

int emu_stream_query(emu_stream *s)
{
    if (!emu_stream_valid(s))
        return EMU_E_INVALID_HANDLE;
    int st = stream_status(s);
    if (st)
        return st;
    pthread_mutex_lock(&s->mu);
    bool idle = s->completed == s->enqueued;
    pthread_mutex_unlock(&s->mu);
    return idle ? 0 : EMU_E_NOT_READY;
}

static struct op *op_new(enum op_kind kind, struct emu_fail f)
{
    struct op *op = calloc(1, sizeof *op);
    if (op) {
        op->kind = kind;
        op->fail = f;
    }
    return op;
}

static int enqueue(emu_stream *s, struct op *op)
{
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    op->seq = ++s->enqueued;
    trace('+', s, op, op->seq);
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Common checks of every enqueue: a live stream in a healthy context. */
static int enqueue_check(emu_stream *s)
{
    if (!emu_stream_valid(s))
        return EMU_E_INVALID_HANDLE;
    return stream_status(s);
}

static const struct emu_fail no_fail;

int emu_enqueue_copy(emu_stream *s, void *dst, const void *src, size_t n, struct emu_fail f)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (n && (!dst || !src))
        return EMU_E_INVALID_VALUE;
    struct op *op = op_new(OP_COPY, f);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.n = n;
    return enqueue(s, op);
}

int emu_enqueue_fill(emu_stream *s, void *dst, uint8_t byte, size_t n, struct emu_fail f)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (n && !dst)
        return EMU_E_INVALID_VALUE;
    struct op *op = op_new(OP_FILL, f);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.fill.dst = dst;
    op->u.fill.byte = byte;
    op->u.fill.n = n;
    return enqueue(s, op);
}

int emu_enqueue_host_fn(emu_stream *s, emu_host_fn fn, void *arg, bool run_on_error)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (!fn)
        return EMU_E_INVALID_VALUE;
    struct op *op = op_new(OP_HOST, no_fail);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.host.fn = fn;
    op->u.host.arg = arg;
    op->u.host.run_on_error = run_on_error;
    return enqueue(s, op);
}

int emu__kernel_pack(void *const *params, const size_t *sizes, const bool *deref, size_t nparams, void ***out)
{
    /* One block: the pointer array, then each value on a 16-byte slot. */
    size_t bytes = nparams * sizeof(void *);
    for (size_t i = 0; i < nparams; i++)
        bytes += (sizes[i] + 15) & ~(size_t)15;
    void **blk = malloc(bytes ? bytes : 1);
    if (!blk)
        return EMU_E_OUT_OF_MEMORY;
    unsigned char *val = (unsigned char *)(blk + nparams);
    for (size_t i = 0; i < nparams; i++) {
        if ((!params[i] && sizes[i]) || (deref && deref[i] && sizes[i] != sizeof(void *))) {
            free(blk);
            return EMU_E_INVALID_VALUE;
        }
        memcpy(val, params[i], sizes[i]);
        if (deref && deref[i])
            memcpy(&blk[i], val, sizeof(void *));
        else
            blk[i] = val;
        val += (sizes[i] + 15) & ~(size_t)15;
    }
    *out = blk;
    return 0;
}

int emu_enqueue_kernel(emu_stream *s, emu_kernel_fn fn, const uint32_t grid[3], const uint32_t block[3],
                       void *const *params, const size_t *sizes, const bool *deref, size_t nparams,
                       struct emu_fail f)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    for (int d = 0; d < 3; d++)
        if (grid[d] == 0 || block[d] == 0)
            return EMU_E_INVALID_VALUE;
    void **blk;
    if ((st = emu__kernel_pack(params, sizes, deref, nparams, &blk)))
        return st;
    struct op *op = op_new(OP_KERNEL, f);
    if (!op) {
        free(blk);
        return EMU_E_OUT_OF_MEMORY;
    }
    op->u.kernel.fn = fn;
    op->u.kernel.params = blk;
    memcpy(op->u.kernel.grid, grid, sizeof op->u.kernel.grid);
    memcpy(op->u.kernel.block, block, sizeof op->u.kernel.block);
    return enqueue(s, op);
}

int emu__enqueue_call(emu_stream *s, int (*run)(void *arg), void (*release)(void *arg), void *arg,
                      struct emu_fail f)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    struct op *op = op_new(OP_GRAPH, f);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.call.run = run;
    op->u.call.release = release;
    op->u.call.arg = arg;
    return enqueue(s, op);
}

static int enqueue_value(emu_stream *s, enum op_kind kind, uint64_t *addr, uint64_t value)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (!addr || ((uintptr_t)addr & 7))
        return EMU_E_INVALID_VALUE;
    struct op *op = op_new(kind, no_fail);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.value.addr = addr;
    op->u.value.value = value;
    return enqueue(s, op);
}

int emu_enqueue_wait_value(emu_stream *s, uint64_t *addr, uint64_t value)
{
    return enqueue_value(s, OP_WAIT_VALUE, addr, value);
}

int emu_enqueue_write_value(emu_stream *s, uint64_t *addr, uint64_t value)
{
    return enqueue_value(s, OP_WRITE_VALUE, addr, value);
}

int emu_enqueue_free(emu_stream *s, void *ptr)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (!emu_mem_known(ptr))
        return EMU_E_INVALID_VALUE;
    struct op *op = op_new(OP_FREE, no_fail);
    if (!op)
        return EMU_E_OUT_OF_MEMORY;
    op->u.free.ptr = ptr;
    return enqueue(s, op);
}

int emu_event_record(emu_event *e, emu_stream *s)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (!emu_event_valid(e))
        return EMU_E_INVALID_HANDLE;
    struct op *op = op_new(OP_RECORD, no_fail);
    struct emu_mark *m = calloc(1, sizeof *m);
    if (!op || !m) {
        free(op);
        free(m);
        return EMU_E_OUT_OF_MEMORY;
    }
    m->ctx = e->ctx;
    m->gen = e->gen;
    m->refs = 2; /* the event and the record op */
    emu__ctx_event_lock(e->ctx);
    struct emu_mark *old = e->last;
    e->last = m;
    emu__ctx_event_unlock(e->ctx);
    if (old)
        mark_unref(old);
    op->u.ev.mark = m;
    return enqueue(s, op);
}

int emu_stream_wait_event(emu_stream *s, emu_event *e)
{
    int st = enqueue_check(s);
    if (st)
        return st;
    if (!emu_event_valid(e))
        return EMU_E_INVALID_HANDLE;
    struct emu_mark *m = last_mark(e);
    if (!m)
        return 0; /* never recorded: nothing to wait for */
    struct op *op = op_new(OP_WAIT_EVENT, no_fail);
    if (!op) {
        mark_unref(m);
        return EMU_E_OUT_OF_MEMORY;
    }
    op->u.ev.mark = m;
    return enqueue(s, op);
}
