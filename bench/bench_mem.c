/* SPDX-License-Identifier: MIT */
/* bench_mem: allocation/free pairs per second on one stream for the devq
 * pool, the direct base and glibc malloc, in one run.
 *
 * Patterns: fixed 256 B, 64 KiB and 4 MiB pairs, and 64 live blocks of
 * random size (1 KiB .. 1 MiB) where each step frees one and allocates
 * another.  Every allocator sees the same sequence.  Runs on the real cpu
 * device when it opens (its mem_alloc is an aligned malloc), else on the
 * fake device of the memory tests.  Prints medians of 5 runs and ratios;
 * targets: pool >= malloc on every pattern and >= 5x direct.  Every
 * allocator is called through the public entry points a user calls
 * (devq_resource_allocate/deallocate; malloc/free).  The pool-sync column
 * (synchronous frees: the block is idle at once) shows what the
 * stream-ordered free itself costs over a plain one; since fences are
 * lazy (recorded only when a block crosses streams) the two should be
 * close.  BENCH_MEM_ONLY=<name> and BENCH_MEM_PATTERN=<0..3> restrict a
 * run, for profiling.
 *
 * Then the whole public path (issue #33): devq_buffer_alloc +
 * devq_buffer_free pairs on a queue and with no queue (an immediate
 * free), 256 B to 4 MiB, each beside glibc malloc + free of the same
 * size, alternately run by run.  Targets: at most 2x malloc's time on a
 * queue, 4x without one.  BENCH_MEM_API=q:BYTES or noq:BYTES runs only
 * api_pairs() once (10^5 pairs), for callgrind:
 *   valgrind --tool=callgrind --toggle-collect=api_pairs ... */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq_resource.h>
#include "device.h"
#include "stream.h"
#include "test_mem_fake.h"

#define RUNS 5
#define LIVE 64

/* pool-sync: the pool with synchronous frees, to show what the
 * stream-ordered free itself costs. */
/* stats+pool: the default stack on a device without a native pool (the
 * stats decorator is always there), what devq_buffer_alloc goes through. */
enum kind { K_POOL, K_DIRECT, K_POOL_SYNC, K_STACK, K_MALLOC, NKIND };
static const char *kind_name[NKIND] = { "pool", "direct", "pool-sync", "stats+pool", "malloc" };

struct pattern {
    const char *name;
    size_t fixed; /* 0: random live set */
    size_t pairs;
};

static devq_resource *res[K_MALLOC];
static struct devq_stream *stream;
static size_t *sizes; /* random pattern: size per step */
static int *slots;    /* random pattern: slot per step */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *get(enum kind k, size_t n)
{
    if (k == K_MALLOC)
        return malloc(n);
    void *d, *h;
    if (devq_resource_allocate(res[k], n, k == K_POOL_SYNC ? NULL : stream, 0, &d, &h) < 0) {
        fprintf(stderr, "bench_mem: %s: %s\n", kind_name[k], devq_errmsg());
        exit(1);
    }
    return d;
}

static void put(enum kind k, void *p, size_t n)
{
    if (k == K_MALLOC) {
        free(p);
        return;
    }
    if (devq_resource_deallocate(res[k], p, n, k == K_POOL_SYNC ? NULL : stream, 0) < 0) {
        fprintf(stderr, "bench_mem: %s: %s\n", kind_name[k], devq_errmsg());
        exit(1);
    }
}

/* Pairs per second for one run. */
static double run(enum kind k, const struct pattern *pt)
{
    double t0 = now_s();
    if (pt->fixed) {
        for (size_t i = 0; i < pt->pairs; i++) {
            void *p = get(k, pt->fixed);
            /* Keep the compiler from pairing malloc/free away. */
            __asm__ volatile("" : : "r"(p) : "memory");
            put(k, p, pt->fixed);
        }
    } else {
        void *live[LIVE];
        size_t sz[LIVE];
        for (int i = 0; i < LIVE; i++) {
            sz[i] = sizes[i];
            live[i] = get(k, sz[i]);
        }
        for (size_t i = 0; i < pt->pairs; i++) {
            int s = slots[i];
            put(k, live[s], sz[s]);
            sz[s] = sizes[i];
            live[s] = get(k, sz[s]);
        }
        for (int i = 0; i < LIVE; i++)
            put(k, live[i], sz[i]);
    }
    double t = now_s() - t0;
    if (k != K_MALLOC)
        devq_resource_reap(res[k]);
    return (double)pt->pairs / t;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n public alloc/free pairs of `bytes` on q (NULL: no queue).  Out of
 * line so that callgrind can count it alone. */
static __attribute__((noinline)) void api_pairs(devq_device *dev, devq_queue *q, size_t bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        devq_buffer *b;
        if (devq_buffer_alloc(dev, bytes, q, 0, &b) < 0 || devq_buffer_free(b, q) < 0) {
            fprintf(stderr, "bench_mem: public pair: %s\n", devq_errmsg());
            exit(1);
        }
    }
}

static __attribute__((noinline)) void malloc_pairs(size_t bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = malloc(bytes);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
}

/* The public path against malloc; 0 when a target is missed. */
static int api_table(devq_device *dev, double scale)
{
    static const size_t api_sizes[] = { 256, 4 << 10, 64 << 10, 1 << 20, 4 << 20 };
    devq_queue *q;
    if (devq_queue_create(dev, NULL, &q) < 0) {
        fprintf(stderr, "bench_mem: %s\n", devq_errmsg());
        exit(1);
    }
    size_t n = (size_t)(200000 * scale);
    int ok = 1;
    printf("\npublic API: devq_buffer_alloc + devq_buffer_free against malloc + free, ns per pair, "
           "median of %d runs\n",
           RUNS);
    printf("%-9s %9s %9s %9s %11s %11s\n", "size", "queue", "no queue", "malloc", "queue/mall", "noq/malloc");
    for (size_t s = 0; s < sizeof api_sizes / sizeof api_sizes[0]; s++) {
        double v[3][RUNS];
        api_pairs(dev, q, api_sizes[s], n / 10); /* warm up */
        api_pairs(dev, NULL, api_sizes[s], n / 10);
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            api_pairs(dev, q, api_sizes[s], n);
            double t1 = now_s();
            api_pairs(dev, NULL, api_sizes[s], n);
            double t2 = now_s();
            malloc_pairs(api_sizes[s], n);
            double t3 = now_s();
            v[0][r] = (t1 - t0) * 1e9 / (double)n;
            v[1][r] = (t2 - t1) * 1e9 / (double)n;
            v[2][r] = (t3 - t2) * 1e9 / (double)n;
        }
        double m[3];
        for (int k = 0; k < 3; k++) {
            qsort(v[k], RUNS, sizeof v[k][0], cmp);
            m[k] = v[k][RUNS / 2];
        }
        printf("%-9zu %9.1f %9.1f %9.1f %10.2fx %10.2fx\n", api_sizes[s], m[0], m[1], m[2], m[0] / m[2],
               m[1] / m[2]);
        if (m[0] > 2 * m[2] || m[1] > 4 * m[2])
            ok = 0;
    }
    printf("targets (queue <= 2x malloc, no queue <= 4x malloc): %s\n", ok ? "met" : "NOT met");
    devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE);
    devq_queue_destroy(q);
    return ok;
}

/* BENCH_MEM_API=q:BYTES | noq:BYTES: one api_pairs run, for callgrind. */
static int api_only(devq_device *dev, const char *spec)
{
    size_t bytes = (size_t)strtoull(strchr(spec, ':') ? strchr(spec, ':') + 1 : "256", NULL, 0);
    devq_queue *q = NULL;
    if (!strncmp(spec, "q:", 2) && devq_queue_create(dev, NULL, &q) < 0)
        return 1;
    api_pairs(dev, q, bytes, 1000); /* warm: caches filled */
    api_pairs(dev, q, bytes, 100000);
    if (q)
        devq_queue_destroy(q);
    return 0;
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (scale <= 0)
        scale = 1.0;
    const struct pattern patterns[] = {
        { "256 B", 256, (size_t)(300000 * scale) },
        { "64 KiB", 64 << 10, (size_t)(200000 * scale) },
        { "4 MiB", 4 << 20, (size_t)(20000 * scale) },
        { "64 live 1K-1M", 0, (size_t)(100000 * scale) },
    };
    size_t maxpairs = 0;
    for (size_t i = 0; i < 4; i++)
        if (patterns[i].pairs > maxpairs)
            maxpairs = patterns[i].pairs;
    sizes = malloc((maxpairs + LIVE) * sizeof *sizes);
    slots = malloc(maxpairs * sizeof *slots);
    unsigned seed = 42;
    for (size_t i = 0; i < maxpairs + LIVE; i++)
        sizes[i] = 1024 + (size_t)rand_r(&seed) % ((1 << 20) - 1024 + 1);
    for (size_t i = 0; i < maxpairs; i++)
        slots[i] = rand_r(&seed) % LIVE;

    devq_device *dev = NULL;
    devq_pl_stream *pl = NULL;
    struct devq_stream real_stream = { 0 };
    const char *where = "cpu device";
    if (devq_device_open("cpu", &dev) == 0 && dev->ops->stream_create(dev->pl, NULL, &pl) == 0) {
        real_stream = (struct devq_stream){ .dev = dev, .pl = pl, .id = 60 };
        stream = &real_stream;
    } else {
        if (dev)
            devq_device_close(dev);
        struct fake_config cfg = { .caps = DEVQ_CAP_HOST_VISIBLE };
        dev = fake_device_open(&cfg);
        stream = fake_stream(dev, 0);
        where = "fake device";
    }
    const char *api = getenv("BENCH_MEM_API");
    if (api && pl)
        return api_only(dev, api);
    devq_resource *stack_pool = NULL;
    if (devq_resource_pool(dev, &res[K_POOL]) < 0 || devq_resource_direct(dev, &res[K_DIRECT]) < 0 ||
        devq_resource_pool(dev, &res[K_POOL_SYNC]) < 0 || devq_resource_pool(dev, &stack_pool) < 0 ||
        devq_resource_stats(stack_pool, &res[K_STACK]) < 0) {
        fprintf(stderr, "bench_mem: %s\n", devq_errmsg());
        return 1;
    }

    printf("bench_mem: alloc/free pairs per second on one stream (%s), median of %d runs\n", where, RUNS);
    printf("%-15s %11s %11s %11s %11s %11s %12s %12s\n", "pattern", "pool", "direct", "pool-sync",
           "stats+pool", "malloc", "pool/malloc", "pool/direct");
    int ok = 1;
    const char *only_pattern = getenv("BENCH_MEM_PATTERN"); /* "0".."3", for profiling */
    for (size_t p = 0; p < 4; p++) {
        double med[NKIND];
        if (only_pattern && (size_t)atoi(only_pattern) != p)
            continue;
        for (int k = 0; k < NKIND; k++) {
            double v[RUNS];
            const char *only = getenv("BENCH_MEM_ONLY"); /* for profiling one allocator */
            if (only && strcmp(only, kind_name[k])) {
                med[k] = 1;
                continue;
            }
            run((enum kind)k, &patterns[p]); /* warm up: caches, chunks, mmap threshold */
            for (int r = 0; r < RUNS; r++)
                v[r] = run((enum kind)k, &patterns[p]);
            qsort(v, RUNS, sizeof *v, cmp);
            med[k] = v[RUNS / 2];
        }
        double rm = med[K_POOL] / med[K_MALLOC], rd = med[K_POOL] / med[K_DIRECT];
        printf("%-15s %11.0f %11.0f %11.0f %11.0f %11.0f %11.2fx %11.2fx\n", patterns[p].name, med[K_POOL],
               med[K_DIRECT], med[K_POOL_SYNC], med[K_STACK], med[K_MALLOC], rm, rd);
        if (rm < 1.0 || rd < 5.0)
            ok = 0;
    }
    printf("targets (pool >= malloc, pool >= 5x direct): %s\n", ok ? "met" : "NOT met");
    if (pl)
        api_table(dev, scale);

    devq_resource_destroy(res[K_POOL]);
    devq_resource_destroy(res[K_DIRECT]);
    devq_resource_destroy(res[K_POOL_SYNC]);
    devq_resource_destroy(res[K_STACK]);
    if (pl) {
        dev->ops->stream_destroy(pl);
        devq_device_close(dev);
    } else {
        fake_device_close(dev);
    }
    free(sizes);
    free(slots);
    return 0;
}
