/* SPDX-License-Identifier: MIT */
/* cpu backend: streams.  One worker thread per stream drains an op ring
 * in order.
 *
 * The ring is single-producer (lib serialises calls on a stream) and
 * single-consumer (the worker).  Publishing an op is a store of its
 * slot's `ready` word; the worker waits on the slot it runs next, runs
 * it and stores `completed` after each op.  Neither side makes a system
 * call while the other is busy:
 *  - the worker spins briefly when the ring is empty, then sets
 *    `sleeping` and sleeps on it; the producer wakes it only when it
 *    sees that flag;
 *  - host threads waiting for a sequence post the smallest sequence they
 *    sleep for in `wake_at`; the worker wakes them only when it gets
 *    there.
 * Both handshakes are Dekker-style (store mine, then load theirs, both
 * sequentially consistent), so one side always sees the other. */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cpu.h"

/* How long an idle worker or a waiter spins before sleeping: long enough
 * to catch the next op of a busy producer, short enough not to burn a
 * core for an idle queue. */
#define CPU_WORKER_SPIN_NS 50000u
#define CPU_WAITER_SPIN_NS 20000u

/* How far the worker catches up before a paused producer resumes
 * (CPU_BACKLOG_OPS, in cpu.h, is how far ahead it may run).  A few
 * chunks, not half the backlog: the producer's pause is one futex
 * sleep, and it comes back while the worker still has plenty to do. */
#define CPU_BACKLOG_SWING (4u * CPU_CHUNK_OPS)
#define CPU_BACKLOG_PAUSE_NS 100000000ull

static _Atomic unsigned cpu_stream_counter;

/* The producer's half of the sleep handshake would need a full fence
 * per published op (a locked instruction on every launch).  With
 * membarrier(2) the worker pays for both sides instead, once per sleep:
 * after it sets `sleeping`, MEMBARRIER_CMD_PRIVATE_EXPEDITED runs a
 * full barrier on every running thread of the process, so a producer
 * either published before that (the worker sees it and does not sleep)
 * or loads `sleeping` after it (and wakes the worker).  Without it
 * (old kernel, a sandbox refusing the call) both sides keep their
 * sequentially consistent accesses.  Set once, before any stream. */
int cpu_asym_fence;
static pthread_once_t cpu_asym_once = PTHREAD_ONCE_INIT;

static void cpu_asym_init(void)
{
#ifdef SYS_membarrier
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        cpu_asym_fence = 1;
#endif
}

/* The worker's side: make every producer's earlier publish visible. */
static void cpu_asym_barrier(void)
{
#ifdef SYS_membarrier
    if (cpu_asym_fence && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}

/* A chunk for the producer: every slot unpublished.  A recycled one
 * still says ready from its last round; clearing it here, before it is
 * linked (a release store), is one store per op. */
static struct cpu_chunk *cpu_chunk_get(devq_pl_stream *s)
{
    struct cpu_chunk *c = atomic_exchange_explicit(&s->spare, NULL, memory_order_acquire);
    if (!c)
        c = cpu_aligned_alloc(CPU_CACHELINE, sizeof *c);
    if (c) {
        for (unsigned i = 0; i < CPU_CHUNK_OPS; i++)
            atomic_store_explicit(&c->ops[i].ready, 0, memory_order_relaxed);
        atomic_store_explicit(&c->next, NULL, memory_order_relaxed);
    }
    return c;
}

/* Worker: keep one finished chunk for the producer to reuse, so a busy
 * stream does not call malloc every CPU_CHUNK_OPS ops. */
static void cpu_chunk_put(devq_pl_stream *s, struct cpu_chunk *c)
{
    struct cpu_chunk *old = atomic_exchange_explicit(&s->spare, c, memory_order_acq_rel);
    free(old);
}

void cpu_stream_ref(devq_pl_stream *s)
{
    pl_ref_get(&s->refs);
}

void cpu_stream_unref(devq_pl_stream *s)
{
    if (pl_ref_put(&s->refs))
        free(s);
}

static void cpu_op_run(devq_pl_stream *s, struct cpu_op *op)
{
    switch (op->kind) {
    case CPU_OP_HOST_FN:
        cpu_host_fn_run(s, op);
        break;
    case CPU_OP_COPY:
        cpu_copy_run(s, op);
        break;
    case CPU_OP_FILL:
        cpu_fill_run(s, op);
        break;
    case CPU_OP_LAUNCH:
        cpu_launch_run(s, op);
        break;
    case CPU_OP_LAUNCH_LIST:
        cpu_launch_list_run(s, op);
        break;
    case CPU_OP_GRAPH:
        cpu_graph_run(s, op);
        break;
    case CPU_OP_WAIT:
        cpu_event_run_wait(s, op);
        break;
    case CPU_OP_TIMESTAMP:
        cpu_event_run_stamp(s, op);
        break;
    case CPU_OP_TAIL:
        cpu_tail_run(s, op);
        break;
    }
}

static void cpu_stream_complete(devq_pl_stream *s, uint64_t done)
{
    /* `error` is the worker's; stream_idle reads this instead. */
    if (!s->error)
        atomic_store_explicit(&s->clean_upto, done, memory_order_release);
    atomic_store_explicit(&s->completed, done, memory_order_seq_cst);
    if (atomic_load_explicit(&s->wake_at, memory_order_seq_cst) > done)
        return;
    /* Reset first: a waiter that registers after this sees `completed`
     * or a changed done_word, never a lost wake-up. */
    atomic_store_explicit(&s->wake_at, UINT64_MAX, memory_order_seq_cst);
    atomic_fetch_add_explicit(&s->done_word, 1, memory_order_seq_cst);
    cpu_host->futex_wake((const uint32_t *)&s->done_word, INT_MAX);
}

/* The op the worker runs next is published: slot `pos` of the head
 * chunk, or the first of the next one once the head is used up (the
 * producer links a chunk before it publishes an op in it). */
static int cpu_next_ready(devq_pl_stream *s, unsigned pos, memory_order mo)
{
    if (__builtin_expect(pos < CPU_CHUNK_OPS, 1))
        return atomic_load_explicit(&s->head_chunk->ops[pos].ready, mo) != 0;
    struct cpu_chunk *next = atomic_load_explicit(&s->head_chunk->next, memory_order_acquire);
    return next && atomic_load_explicit(&next->ops[0].ready, mo) != 0;
}

/* A signal tail is published right after the op that ran: it runs at
 * once and never blocks (devq-plugin(7)), so the op's completion can
 * wait for the tail's; the host waiter it sets then sees its signal one
 * completion sooner. */
static int cpu_tail_next(devq_pl_stream *s, unsigned pos)
{
    return pos < CPU_CHUNK_OPS &&
           atomic_load_explicit(&s->head_chunk->ops[pos].ready, memory_order_acquire) &&
           s->head_chunk->ops[pos].kind == CPU_OP_TAIL;
}

/* Nothing is published past what ran: spin, then sleep.  Returns 1 when
 * the stream is being destroyed and everything has run. */
static int cpu_worker_idle(devq_pl_stream *s, unsigned pos)
{
    uint64_t start = 0;
    for (unsigned i = 0;; i++) {
        if (cpu_next_ready(s, pos, memory_order_acquire))
            return 0;
        if (atomic_load_explicit(&s->stop, memory_order_acquire))
            return !cpu_next_ready(s, pos, memory_order_acquire);
        if ((i & 63) == 0) {
            uint64_t now = cpu_host->now_ns();
            if (!start)
                start = now;
            else if (now - start > CPU_WORKER_SPIN_NS)
                break;
        }
        cpu_spin_step(i);
    }
    atomic_store_explicit(&s->sleeping, 1, memory_order_seq_cst);
    cpu_asym_barrier();
    if (!cpu_next_ready(s, pos, memory_order_seq_cst) &&
        !atomic_load_explicit(&s->stop, memory_order_seq_cst))
        cpu_host->futex_wait((const uint32_t *)&s->sleeping, 1, CPU_NO_DEADLINE);
    atomic_store_explicit(&s->sleeping, 0, memory_order_relaxed);
    return 0;
}

static void *cpu_worker(void *arg)
{
    devq_pl_stream *s = arg;
    uint64_t done = 0;
    unsigned pos = 0;
    for (;;) {
        while (cpu_next_ready(s, pos, memory_order_acquire)) {
            if (pos == CPU_CHUNK_OPS) {
                struct cpu_chunk *next = atomic_load_explicit(&s->head_chunk->next, memory_order_acquire);
                cpu_chunk_put(s, s->head_chunk);
                s->head_chunk = next;
                pos = 0;
            }
            cpu_op_run(s, &s->head_chunk->ops[pos++]);
            done++;
            if (cpu_tail_next(s, pos))
                continue; /* its completion covers this op's */
            cpu_stream_complete(s, done);
        }
        if (cpu_worker_idle(s, pos))
            break;
    }
    return NULL;
}

/* Any thread, lock-free: `enqueued` is published by the producer, and
 * clean_upto reaches it only once the worker has run every op up to it
 * and none of them left an error latched for the next host callback. */
int cpu_stream_idle(devq_pl_stream *s)
{
    uint64_t n = atomic_load_explicit(&s->enqueued, memory_order_acquire);
    return atomic_load_explicit(&s->clean_upto, memory_order_acquire) == n;
}

/* The worker was seen asleep (cpu_stream_publish checked). */
void cpu_worker_wake_slow(devq_pl_stream *s)
{
    if (atomic_exchange_explicit(&s->sleeping, 0, memory_order_seq_cst))
        cpu_host->futex_wake((const uint32_t *)&s->sleeping, 1);
}

static void cpu_worker_wake(devq_pl_stream *s)
{
    if (atomic_load_explicit(&s->sleeping, memory_order_seq_cst))
        cpu_worker_wake_slow(s);
}

/* The current chunk is full (cpu_stream_reserve checked). */
struct cpu_op *cpu_stream_reserve_chunk(devq_pl_stream *s)
{
    uint64_t n = s->enqueued_local;
    /* A producer far ahead of the worker waits for it to catch up
     * (politely, on the futex), but only for a while: the worker may be
     * waiting on something this thread has yet to do, so after the pause
     * the ring grows instead, never drops, never hangs. */
    if (n - cpu_stream_completed(s) > CPU_BACKLOG_OPS)
        cpu_stream_wait_seq(s, n - CPU_BACKLOG_OPS + CPU_BACKLOG_SWING, cpu_deadline(CPU_BACKLOG_PAUSE_NS));
    struct cpu_chunk *c = cpu_chunk_get(s);
    if (!c)
        return NULL;
    atomic_store_explicit(&s->tail_chunk->next, c, memory_order_release);
    s->tail_chunk = c;
    s->tail_base = n;
    return &s->tail_chunk->ops[0];
}

struct cpu_op *cpu_stream_queue(devq_pl_stream *s, int kind, const char *what)
{
    struct cpu_op *op = cpu_stream_reserve(s);
    if (!op) {
        cpu_host->error(-ENOMEM, "cpu: out of memory queueing %s", what);
        return NULL;
    }
    op->kind = kind;
    return op;
}

static void cpu_atomic_min(_Atomic uint64_t *v, uint64_t x)
{
    uint64_t cur = atomic_load_explicit(v, memory_order_seq_cst);
    while (x < cur &&
           !atomic_compare_exchange_weak_explicit(v, &cur, x, memory_order_seq_cst, memory_order_seq_cst))
        ;
}

int cpu_stream_wait_seq(devq_pl_stream *s, uint64_t seq, uint64_t deadline_ns)
{
    if (cpu_stream_completed(s) >= seq)
        return 0;
    if (deadline_ns == 0)
        return -ETIMEDOUT;
    /* A short spin catches the common case of work that is about to
     * finish without two context switches. */
    uint64_t start = cpu_host->now_ns(), spin_end = start + CPU_WAITER_SPIN_NS;
    if (spin_end > deadline_ns)
        spin_end = deadline_ns;
    for (unsigned i = 1;; i++) {
        if (cpu_stream_completed(s) >= seq)
            return 0;
        if ((i & 63) == 0 && cpu_host->now_ns() >= spin_end)
            break;
        cpu_spin_step(i);
    }
    for (;;) {
        uint32_t word = atomic_load_explicit(&s->done_word, memory_order_seq_cst);
        cpu_atomic_min(&s->wake_at, seq);
        if (atomic_load_explicit(&s->completed, memory_order_seq_cst) >= seq)
            return 0;
        if (cpu_host->futex_wait((const uint32_t *)&s->done_word, word, deadline_ns) == -ETIMEDOUT)
            return cpu_stream_completed(s) >= seq ? 0 : -ETIMEDOUT;
    }
}

int cpu_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out)
{
    pthread_once(&cpu_asym_once, cpu_asym_init);
    devq_pl_stream *s = cpu_aligned_alloc(CPU_CACHELINE, sizeof *s);
    if (!s)
        return cpu_host->error(-ENOMEM, "cpu: out of memory creating a stream");
    memset(s, 0, sizeof *s);
    s->dev = dev;
    s->priority = desc ? desc->priority : 0;
    s->index = atomic_fetch_add(&cpu_stream_counter, 1);
    pl_ref_init(&s->refs, 1);
    atomic_init(&s->wake_at, UINT64_MAX);
    s->tail_chunk = s->head_chunk = cpu_chunk_get(s);
    if (!s->tail_chunk) {
        free(s);
        return cpu_host->error(-ENOMEM, "cpu: out of memory creating a stream");
    }

    /* The worker must not take the application's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, cpu_worker, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        free(s->head_chunk);
        free(s);
        return cpu_host->error(-rc,
                               "cpu: cannot start a stream worker thread: %s "
                               "(check RLIMIT_NPROC / threads-max)",
                               strerror(rc));
    }
    char name[32]; /* the kernel keeps 15 characters */
    snprintf(name, sizeof name, "devq-cpu-s%u", s->index);
    name[15] = '\0';
    pthread_setname_np(s->thread, name);
    cpu_list_add(dev, &dev->streams, &s->link);
    *out = s;
    return 0;
}

void cpu_stream_destroy(devq_pl_stream *s)
{
    if (!s)
        return;
    atomic_store_explicit(&s->stop, 1, memory_order_seq_cst);
    cpu_worker_wake(s);
    pthread_join(s->thread, NULL);
    cpu_list_del(s->dev, &s->link);
    /* Normally one chunk is left; walk the chain anyway, so a chunk that
     * was linked for an op that never got published is not leaked. */
    for (struct cpu_chunk *c = s->head_chunk, *next; c; c = next) {
        next = atomic_load_explicit(&c->next, memory_order_relaxed);
        free(c);
    }
    free(atomic_exchange(&s->spare, NULL));
    cpu_launch_cache_free(s);
    s->head_chunk = s->tail_chunk = NULL;
    cpu_stream_unref(s);
}
