/* SPDX-License-Identifier: MIT */
/* bench_graph: the cost of one graph submission (devq_graph_submit(3))
 * of 1, 64 and 1024 tiny launches (3 buffers each) on the cpu backend:
 * ns per submission and per op, and the heap calls made while
 * submitting (malloc, calloc, realloc, aligned allocations and free,
 * counted on every thread by the wrappers below): issue 30 asks for a
 * cost flat per op and no allocation on the submission path.
 *
 *   bench_graph [SUBMISSIONS_OF_64 [OPS]]   (default 100000; OPS: one size only)
 *
 * Under valgrind --tool=callgrind --toggle-collect=devq_graph_submit
 * each size's measured submissions are dumped as one part ("N ops x
 * S"): its instructions on the submitting thread over S are the
 * instructions per submission (bench/graph-callgrind.sh does that).
 * Callgrind counts each byte a `rep movsb` copies as an instruction, so
 * the record's memcpy weighs more there than on the machine. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include "bench_util.h"
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(what)
#endif

#define CHECK(x)                                                                \
    do {                                                                        \
        int r_ = (x);                                                           \
        if (r_ < 0) {                                                           \
            fprintf(stderr, "bench_graph: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

/* Every heap call of the process goes through these (the program's
 * definitions take precedence over libc's for libdevq too). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static _Atomic long heap_calls;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n)
{
    atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    return __libc_memalign(a, n);
}
int posix_memalign(void **p, size_t a, size_t n)
{
    atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12; /* ENOMEM */
}
void free(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
    __libc_free(p);
}

int bench_graph_tiny(void *const *args, const devq_cpu_group *g);
int bench_graph_tiny(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[2] += *(const uint32_t *)args[0] + *(const uint32_t *)args[1];
    return 0;
}

struct row {
    int ops;
    double ns_sub, ns_op, heap_per_sub;
};

/* On a queue of its own: batches a queue recycles keep the size of the
 * graph they last carried. */
static struct row run(devq_device *dev, devq_kernel *k, int ops, long subs)
{
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    devq_buffer *buf[3];
    const uint32_t init[3] = { 1, 2, 0 };
    for (int i = 0; i < 3; i++) {
        CHECK(devq_buffer_alloc(dev, 4, NULL, 0, &buf[i]));
        CHECK(devq_queue_write(q, buf[i], 0, &init[i], 4));
    }
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    devq_arg a[3] = { DEVQ_ARG_BUF(buf[0], DEVQ_READ), DEVQ_ARG_BUF(buf[1], DEVQ_READ),
                      DEVQ_ARG_BUF(buf[2], DEVQ_READ_WRITE) };
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    devq_graph *g;
    devq_graph_exec *ge;
    CHECK(devq_queue_begin_capture(q));
    for (int i = 0; i < ops; i++)
        CHECK(devq_queue_exec(q, k, a, 3, &l));
    CHECK(devq_queue_end_capture(q, &g));
    CHECK(devq_graph_instantiate(g, &ge));
    devq_graph_destroy(g);
    /* Warm: the queue's pool of batches has grown to what a busy queue
     * keeps in flight (the cpu ring lets a producer run 4096 launches
     * ahead, a 1-op graph is two ring ops). */
    int warm = 8192 / ops < 256 ? 256 : 8192 / ops;
    for (int i = 0; i < warm; i++)
        CHECK(devq_graph_submit(q, ge));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    long h0 = atomic_load(&heap_calls);
    CALLGRIND_ZERO_STATS; /* under callgrind: count the submissions below only */
    uint64_t t0 = bench_now();
    for (long i = 0; i < subs; i++)
        CHECK(devq_graph_submit(q, ge));
    char what[32];
    snprintf(what, sizeof what, "%d ops x %ld", ops, subs);
    CALLGRIND_DUMP_STATS_AT(what);
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    uint64_t t1 = bench_now();
    long h1 = atomic_load(&heap_calls);
    uint32_t got = 0;
    CHECK(devq_queue_read(q, &got, buf[2], 0, 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    uint32_t want = 3u * (uint32_t)ops * (uint32_t)(subs + warm);
    if (got != want)
        fprintf(stderr, "bench_graph: %d ops computed %u, expected %u\n", ops, got, want);
    devq_graph_exec_destroy(ge);
    for (int i = 0; i < 3; i++)
        CHECK(devq_buffer_free(buf[i], NULL));
    devq_queue_destroy(q);
    double ns = (double)(t1 - t0) / (double)subs;
    return (struct row){ ops, ns, ns / ops, (double)(h1 - h0) / (double)subs };
}

int main(int argc, char **argv)
{
    long subs64 = argc > 1 ? atol(argv[1]) : 100000;
    if (subs64 < 1)
        subs64 = 1;
    int only = argc > 2 ? atoi(argv[2]) : 0;
    devq_device *dev;
    devq_kernel *k;
    CHECK(devq_device_open("cpu:0", &dev));
    CHECK(devq_kernel_load(dev, NULL, 0, "bench_graph_tiny", &k));
    static const int sizes[] = { 1, 64, 1024 };
    printf("graph submission cost on cpu (tiny launches, 3 buffers each; %ld submissions of 64 ops)\n",
           subs64);
    printf("%8s %14s %10s %18s\n", "ops", "ns/submission", "ns/op", "heap calls/submit");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        long subs = subs64 * 64 / sizes[i];
        if (subs < 16)
            subs = 16;
        if (subs > 4 * subs64)
            subs = 4 * subs64; /* 1-op graphs: as many submissions as launches is too slow */
        if (only && sizes[i] != only)
            continue;
        struct row r = run(dev, k, sizes[i], subs);
        printf("%8d %14.0f %10.1f %18.4f\n", r.ops, r.ns_sub, r.ns_op, r.heap_per_sub);
    }
    devq_kernel_destroy(k);
    devq_device_close(dev);
    return 0;
}
