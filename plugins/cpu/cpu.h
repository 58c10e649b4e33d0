/* SPDX-License-Identifier: MIT */
/* cpu backend internals, shared by the files of plugins/cpu.
 *
 * The backend talks to libdevq only through <devq/devq_plugin.h> and the
 * host table handed to init (cpu_host): errors, logging, futexes, clock
 * and environment all go through it, so this code could be built as an
 * ordinary plugin unchanged. */
#ifndef DEVQ_CPU_H
#define DEVQ_CPU_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <devq/devq_plugin.h>
#include "../plugin_ref.h"
#include "../analyzer.h"

#define CPU_CACHELINE 64
#define CPU_NO_DEADLINE UINT64_MAX

/* The host table given to init; every module reports through it. */
extern const struct devq_host *cpu_host;

int devq__cpu_plugin_init(const struct devq_host *host, uint32_t host_abi,
                          const struct devq_backend_ops **ops);

/* ---- device (device.c) ---- */

/* Intrusive list node: every object a device owns is linked so that
 * device_close can free what lib left behind. */
struct cpu_link {
    struct cpu_link *prev, *next;
};

struct devq_pl_device {
    uint32_t ordinal;
    pthread_mutex_t lock;        /* the lists below */
    struct cpu_link allocations; /* struct cpu_alloc */
    struct cpu_link kernels;     /* struct devq_pl_kernel */
    struct cpu_link streams;     /* struct devq_pl_stream */
    struct cpu_link events;      /* struct devq_pl_event */
};

void cpu_list_init(struct cpu_link *head);
void cpu_list_add(struct devq_pl_device *dev, struct cpu_link *head, struct cpu_link *node);
void cpu_list_del(struct devq_pl_device *dev, struct cpu_link *node);

int cpu_device_count(uint32_t *count);
int cpu_device_open(uint32_t ordinal, devq_pl_device **out);
void cpu_device_close(devq_pl_device *dev);
int cpu_device_info(devq_pl_device *dev, devq_device_info *info);

/* ---- stream (stream.c): a worker thread draining an op ring ---- */

enum cpu_op_kind {
    CPU_OP_HOST_FN,
    CPU_OP_COPY,
    CPU_OP_FILL,
    CPU_OP_LAUNCH,
    CPU_OP_WAIT,        /* wait until another stream completes a sequence */
    CPU_OP_TIMESTAMP,   /* stamp a timing event */
    CPU_OP_LAUNCH_LIST, /* launches in order, one op (launch_list) */
    CPU_OP_GRAPH,       /* a native graph's launches, one op (graph.c) */
    CPU_OP_TAIL,        /* lib's tail function, unless an error is latched (hostfn.c) */
};

struct cpu_launch;
struct cpu_graph_body;

struct cpu_op {
    uint32_t kind;
    /* 1 once the op is published (cpu_stream_publish), 0 in a chunk the
     * producer took (cpu_chunk_get).  The worker waits on the slot it
     * runs next, not on a counter elsewhere: the op and the word that
     * publishes it come to the worker's core in one cache-line transfer
     * (a counter on its own line cost a second, dependent one). */
    _Atomic uint32_t ready;
    union {
        struct {
            devq_pl_host_fn fn;
            void *arg;
        } host;
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            size_t n;
            uint8_t byte;
        } fill;
        struct {
            struct cpu_launch *l;
        } launch;
        struct {
            const struct devq_pl_launch_entry *e;
            size_t n;
            const struct devq_pl_launch_entry **failed; /* lib's: the launch that failed */
        } list;
        struct {
            struct cpu_graph_body *body; /* a reference, dropped once it ran */
            uint32_t *failed;            /* lib's: the index of the launch that failed */
        } graph;
        struct {
            devq_pl_tail_fn fn; /* in the slot itself: the worker reads no other line */
            void *arg;
            uint64_t value;
        } tail;
        struct {
            struct devq_pl_stream *other;
            uint64_t seq;
        } wait;
        struct {
            struct devq_pl_event *e;
            uint64_t seq;
        } stamp;
    } u;
};

#define CPU_CHUNK_OPS 256
/* Ops a producer may run ahead of the worker before it pauses (politely,
 * and only for a while: stream.c).  It bounds the launch records in
 * flight, which the stream's record cache (kernel.c) is sized to hold,
 * so a busy stream runs with no malloc or free at all.  16 chunks keep
 * a worker busy for thousands of ops; more would only hold memory. */
#define CPU_BACKLOG_OPS (16u * CPU_CHUNK_OPS)
/* Ring storage: a list of fixed chunks.  The producer links a new chunk
 * when the current one is full, so enqueue never drops and never blocks;
 * the worker frees (or recycles) a chunk once it has run all its ops. */
struct cpu_chunk {
    struct cpu_op ops[CPU_CHUNK_OPS];
    _Atomic(struct cpu_chunk *) next;
};

struct devq_pl_stream {
    struct cpu_link link;
    struct devq_pl_device *dev;
    int priority;
    unsigned index;     /* for thread names */
    struct pl_ref refs; /* 1 while alive + events/waits naming it */
    pthread_t thread;

    /* Producer side (lib's calling thread). */
    _Alignas(CPU_CACHELINE) struct cpu_chunk *tail_chunk;
    uint64_t enqueued_local;   /* producer's copy of enqueued */
    uint64_t tail_base;        /* sequence before tail_chunk's first op */
    _Atomic uint64_t enqueued; /* ops published so far (= last sequence); the
                                  * worker does not read it (ready, above) */

    /* Shared: spare chunk for recycling, sleep word, stop.  Not on the
     * producer's line: the idle worker reads stop on every spin. */
    _Alignas(CPU_CACHELINE) _Atomic(struct cpu_chunk *) spare;
    _Atomic uint32_t sleeping; /* futex: 1 while the worker sleeps */
    _Atomic int stop;

    /* Consumer side (worker). */
    _Alignas(CPU_CACHELINE) struct cpu_chunk *head_chunk;
    int error;                   /* latched error, worker-only */
    char error_msg[192];         /* its detail, reported to the next host callback */
    _Atomic uint64_t completed;  /* ops finished (= last completed sequence) */
    _Atomic uint64_t clean_upto; /* last sequence after which no error was latched */
    _Atomic uint32_t done_word;  /* futex for waiters of `completed` */

    /* Waiters: the smallest sequence somebody sleeps for. */
    _Alignas(CPU_CACHELINE) _Atomic uint64_t wake_at;

    /* Recycled launch records (kernel.c): the worker pushes what it ran
     * onto launch_shared (lock-free, bounded by the depth its top record
     * carries); the producer takes the whole stack into launch_private at
     * once, so neither side takes a lock and there is no ABA. */
    _Alignas(CPU_CACHELINE) _Atomic(struct cpu_launch *) launch_shared;
    struct cpu_launch *launch_private; /* producer-only */
    devq_pl_kernel *launch_k;          /* producer: the last kernel launched, one
                                            * reference held (kernel.c) */
};

/* Free the stream's recycled launch records and drop the reference to the
 * kernel it launched last (after its worker stopped). */
void cpu_launch_cache_free(devq_pl_stream *s);

int cpu_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out);
void cpu_stream_destroy(devq_pl_stream *s);
/* Reserve the next op slot; fill it, then cpu_stream_publish().  Returns
 * NULL only when a new chunk cannot be allocated.  Inline: every op pays
 * it; a full chunk goes out of line. */
struct cpu_op *cpu_stream_reserve_chunk(devq_pl_stream *s);
static inline struct cpu_op *cpu_stream_reserve(devq_pl_stream *s)
{
    uint64_t at = s->enqueued_local - s->tail_base;
    if (__builtin_expect(at == CPU_CHUNK_OPS, 0))
        return cpu_stream_reserve_chunk(s);
    return &s->tail_chunk->ops[at];
}
/* cpu_stream_reserve with the op's kind set; NULL reported as "out of
 * memory queueing <what>". */
struct cpu_op *cpu_stream_queue(devq_pl_stream *s, int kind, const char *what);
/* Publish the reserved op (the last cpu_stream_reserve returned);
 * returns its sequence number.  The slot's ready store and the load of
 * `sleeping` are the producer's half of the handshake in stream.c:
 * sequentially consistent, or, when the worker fences for both sides
 * with membarrier (cpu_asym_fence), plain (release, then a load the
 * compiler may not hoist).  `enqueued` is for the other readers
 * (stream_idle, the backlog): stored first, so whoever sees an op run
 * sees it counted. */
extern int cpu_asym_fence;
void cpu_worker_wake_slow(devq_pl_stream *s);
static inline uint64_t cpu_stream_publish(devq_pl_stream *s)
{
    uint64_t n = ++s->enqueued_local;
    struct cpu_op *op = &s->tail_chunk->ops[n - 1 - s->tail_base];
    atomic_store_explicit(&s->enqueued, n, memory_order_relaxed);
    if (__builtin_expect(cpu_asym_fence, 1)) {
        atomic_store_explicit(&op->ready, 1, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&s->sleeping, memory_order_relaxed))
            cpu_worker_wake_slow(s);
        return n;
    }
    atomic_store_explicit(&op->ready, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&s->sleeping, memory_order_seq_cst))
        cpu_worker_wake_slow(s);
    return n;
}
/* Wait until s completed `seq`: spin briefly, then futex.  0 or -ETIMEDOUT. */
int cpu_stream_wait_seq(devq_pl_stream *s, uint64_t seq, uint64_t deadline_ns);
/* The stream_idle op: everything queued ran and no error is latched. */
int cpu_stream_idle(devq_pl_stream *s);
void cpu_stream_ref(devq_pl_stream *s);
void cpu_stream_unref(devq_pl_stream *s);
static inline uint64_t cpu_stream_completed(devq_pl_stream *s)
{
    return atomic_load_explicit(&s->completed, memory_order_acquire);
}

/* ---- events (event.c) ---- */

struct devq_pl_event {
    struct cpu_link link;
    struct devq_pl_device *dev;
    uint32_t flags;
    struct pl_ref refs;            /* 1 until destroyed + pending timestamp ops */
    pthread_mutex_t lock;          /* stream, seq, stamp */
    struct devq_pl_stream *stream; /* NULL: never recorded */
    uint64_t seq;
    uint64_t stamp_ns;    /* timing events: CLOCK_MONOTONIC when reached */
    uint64_t stamped_seq; /* the sequence stamp_ns belongs to */
};

int cpu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out);
void cpu_event_destroy(devq_pl_event *e);
void cpu_event_free(devq_pl_event *e); /* device_close: unconditional */
int cpu_event_record(devq_pl_event *e, devq_pl_stream *s);
int cpu_event_query(devq_pl_event *e);
int cpu_event_wait(devq_pl_event *e, uint64_t timeout_ns);
int cpu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e);
int cpu_event_elapsed(devq_pl_event *start, devq_pl_event *end, uint64_t *ns);
/* Worker side of CPU_OP_TIMESTAMP / CPU_OP_WAIT. */
void cpu_event_run_stamp(devq_pl_stream *s, struct cpu_op *op);
void cpu_event_run_wait(devq_pl_stream *s, struct cpu_op *op);

/* ---- host callbacks (hostfn.c) ---- */

int cpu_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg);
void cpu_host_fn_run(devq_pl_stream *s, struct cpu_op *op);
/* The signal_tail op: fn(arg, value) on the worker unless an error is
 * latched (the latch is left for the next host callback). */
int cpu_signal_tail(devq_pl_stream *s, devq_pl_tail_fn fn, void *arg, uint64_t value);
static inline void cpu_tail_run(devq_pl_stream *s, struct cpu_op *op)
{
    if (__builtin_expect(!s->error, 1))
        op->u.tail.fn(op->u.tail.arg, op->u.tail.value);
}

/* ---- memory (memory.c) ---- */

int cpu_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr);
void cpu_mem_free(devq_pl_device *dev, void *device_ptr);
void cpu_mem_free_all(devq_pl_device *dev);
int cpu_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir);
int cpu_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n);
void cpu_copy_run(devq_pl_stream *s, struct cpu_op *op);
void cpu_fill_run(devq_pl_stream *s, struct cpu_op *op);

/* ---- kernels (kernel.c) ---- */

int cpu_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                    devq_pl_kernel **out);
/* A kernel given by pointer (devq_kernel_load_fn), sig NULL or checked. */
int cpu_kernel_load_fn(devq_pl_device *dev, devq_cpu_kernel_fn fn, const struct devq_cpu_signature *sig,
                       const char *name, devq_pl_kernel **out);
void cpu_kernel_destroy(devq_pl_kernel *k);
/* The kernel's DEVQ_CPU_KERNEL_SIGNATURE, or -ENOTSUP when it has none. */
int cpu_kernel_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *out);
void cpu_kernel_free_all(devq_pl_device *dev);
int cpu_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l, const struct devq_pl_arg *args,
               size_t nargs);
void cpu_launch_run(devq_pl_stream *s, struct cpu_op *op);
/* launch_list: one op for n launches (lib keeps e alive until it ran). */
int cpu_launch_list(devq_pl_stream *s, const struct devq_pl_launch_entry *e, size_t n,
                    const struct devq_pl_launch_entry **failed);
void cpu_launch_list_run(devq_pl_stream *s, struct cpu_op *op);

/* ---- native graphs (graph.c): prebuilt launch records ---- */

int cpu_graph_create(devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t n,
                     devq_pl_graph **out);
int cpu_graph_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e);
int cpu_graph_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed);
void cpu_graph_destroy(devq_pl_graph *g);
void cpu_graph_run(devq_pl_stream *s, struct cpu_op *op);

/* ---- shared work-group pool (pool.c) ---- */

/* A piece of parallel work: `total` items run by `run(job, index)`,
 * handed out one at a time to the pool threads and the owner. */
struct cpu_job {
    struct cpu_job *next; /* pool queue, under the pool lock */
    int priority;         /* higher is taken first */
    int queued;           /* in the pool queue (pool lock) */
    uint64_t total;
    int (*run)(struct cpu_job *job, uint64_t index);
    void *ctx;
    _Alignas(CPU_CACHELINE) _Atomic uint64_t next_index;
    _Atomic int error;      /* first failure */
    _Atomic uint32_t users; /* pool threads holding the job */
};

/* Run every item of job, using the pool and the calling thread; returns
 * the first item failure (0 when all succeeded).  After a failure no
 * further items are handed out. */
int cpu_pool_run(struct cpu_job *job);
/* Threads in the pool (created on first use, by this call). */
unsigned cpu_pool_threads(void);
/* Threads the pool has or will have, without starting it. */
unsigned cpu_pool_size(void);
void cpu_pool_shutdown(void);
/* Parse DEVQ_CPU_THREADS now, so a malformed value fails device_open. */
int cpu_pool_config(void);

/* aligned_alloc wants size % align == 0; posix_memalign does not. */
static inline void *cpu_aligned_alloc(size_t align, size_t size)
{
    void *p;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

/* Time helpers. */
static inline uint64_t cpu_deadline(uint64_t timeout_ns)
{
    if (timeout_ns == UINT64_MAX)
        return CPU_NO_DEADLINE;
    uint64_t now = cpu_host->now_ns();
    return timeout_ns > CPU_NO_DEADLINE - 1 - now ? CPU_NO_DEADLINE - 1 : now + timeout_ns;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One step of a spin-wait.  The first steps only pause; later ones
 * yield, because a thread we just woke may have been queued on this very
 * CPU and would otherwise wait for the whole spin to end. */
static inline void cpu_spin_step(unsigned i)
{
    if (i < 64)
        cpu_relax();
    else
        sched_yield();
}


#endif
