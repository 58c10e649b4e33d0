/* SPDX-License-Identifier: MIT */
/* devq-bench: devq's benchmark suite through the public API, each case side
 * by side with the obvious baseline measured in the same run (a mutex +
 * condvar signal, a raw futex, a mutex+condvar work queue, a pthread loop,
 * malloc).  Prints medians and ratios; --json for scripts; --plot draws the
 * ratios as an SVG bar chart.  See devq-bench(1).
 *
 * The benchmarks are the rows of one table, `cases` (near main): a new one
 * is one function and one entry there, and --list, --filter and the
 * progress line pick it up. */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <devq/devq.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define REPS 7

/* One convention everywhere (table, JSON, plot): "better" is how many
 * times better devq did than the baseline, whatever the unit's direction
 * (base/devq for times, devq/base for rates): above 1 devq wins.  A
 * target is a floor on it (0: none). */
struct result {
    const char *name, *unit, *baseline;
    double devq, base, target;
    int higher_is_better;
};

static struct result results[48];
static int nresults;
static int quick;
static const char *backend = "cpu";

/* Under a sanitizer (make check's ASan and TSan builds run
 * tests/scripts/test_devq_bench.sh), every malloc and free is 10-1000x
 * slower, the large ones most: --quick's allocation rows would take
 * minutes, so they run 1/40 of their pairs there.  Such numbers measure
 * the sanitizer, never devq. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif
#ifdef BENCH_SANITIZED
#define ALLOC_QUICK_DIV 40
#else
#define ALLOC_QUICK_DIV 1
#endif

#define CHECK(x)                                                               \
    do {                                                                       \
        int r_ = (x);                                                          \
        if (r_ < 0) {                                                          \
            fprintf(stderr, "devq-bench: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void add(const char *name, double devq, double base, const char *unit, int higher,
                const char *baseline, double target)
{
    if (nresults == (int)(sizeof results / sizeof results[0])) {
        fprintf(stderr, "devq-bench: more than %d rows: '%s' dropped\n", nresults, name);
        return;
    }
    results[nresults++] = (struct result){ name, unit, baseline, devq, base, target, higher };
}

/* ---- 1. signal ping-pong: devq vs mutex+condvar vs raw futex ---- */

struct cv_signal {
    pthread_mutex_t m;
    pthread_cond_t c;
    _Atomic uint64_t v;
};

static void cv_set(struct cv_signal *s, uint64_t v)
{
    pthread_mutex_lock(&s->m);
    uint64_t cur = atomic_load(&s->v);
    if (v > cur)
        atomic_store(&s->v, v);
    pthread_cond_broadcast(&s->c);
    pthread_mutex_unlock(&s->m);
}

static void cv_wait(struct cv_signal *s, uint64_t v)
{
    pthread_mutex_lock(&s->m);
    while (atomic_load(&s->v) < v)
        pthread_cond_wait(&s->c, &s->m);
    pthread_mutex_unlock(&s->m);
}

static _Atomic uint32_t fx[2];

static void fx_set(int i, uint32_t v)
{
    atomic_store(&fx[i], v);
    syscall(SYS_futex, &fx[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void fx_wait(int i, uint32_t v)
{
    uint32_t cur;
    while ((cur = atomic_load(&fx[i])) < v)
        syscall(SYS_futex, &fx[i], FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
}

/* A spinning futex, written plainly: the waiter spins devq's starting
 * budget (2 us, SPIN_DEFAULT_NS in lib/signal/signal.c; the clock read
 * every 32 pauses, as devq does), then counts itself a sleeper and
 * sleeps; the setter makes the syscall only for a sleeper.  What a
 * hand-off costs when both sides run on their own core: the limit of the
 * signal and device round-trip rows. */
#define SFX_SPIN_NS 2000u
struct sfx {
    _Alignas(64) _Atomic uint32_t v;
    _Atomic uint32_t sleepers;
};
static struct sfx sfx[2];

static void sfx_set(int i, uint32_t v)
{
    atomic_store(&sfx[i].v, v);
    if (atomic_load(&sfx[i].sleepers))
        syscall(SYS_futex, &sfx[i].v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void sfx_wait(int i, uint32_t v)
{
    uint64_t end = now_ns() + SFX_SPIN_NS;
    for (;;) {
        for (int n = 0; n < 32; n++) {
            if (atomic_load_explicit(&sfx[i].v, memory_order_acquire) >= v)
                return;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        if (now_ns() >= end)
            break;
    }
    atomic_fetch_add(&sfx[i].sleepers, 1);
    uint32_t cur;
    while ((cur = atomic_load(&sfx[i].v)) < v)
        syscall(SYS_futex, &sfx[i].v, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
    atomic_fetch_sub(&sfx[i].sleepers, 1);
}

enum pp_kind { PP_DEVQ, PP_CV, PP_FUTEX, PP_SPINFUTEX };
struct pp {
    enum pp_kind kind;
    int rounds;
    int pin; /* >= 0: both threads on this CPU */
    devq_signal *ds[2];
    struct cv_signal cs[2];
};

static void pp_set(struct pp *p, int i, uint64_t v)
{
    if (p->kind == PP_DEVQ)
        devq_signal_set(p->ds[i], v);
    else if (p->kind == PP_CV)
        cv_set(&p->cs[i], v);
    else if (p->kind == PP_SPINFUTEX)
        sfx_set(i, (uint32_t)v);
    else
        fx_set(i, (uint32_t)v);
}

static void pp_wait(struct pp *p, int i, uint64_t v)
{
    if (p->kind == PP_DEVQ)
        devq_signal_wait(p->ds[i], v, DEVQ_TIMEOUT_INFINITE);
    else if (p->kind == PP_CV)
        cv_wait(&p->cs[i], v);
    else if (p->kind == PP_SPINFUTEX)
        sfx_wait(i, (uint32_t)v);
    else
        fx_wait(i, (uint32_t)v);
}

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *pp_echo(void *arg)
{
    struct pp *p = arg;
    if (p->pin >= 0)
        pin_to(p->pin);
    for (int r = 1; r <= p->rounds; r++) {
        pp_wait(p, 0, (uint64_t)r);
        pp_set(p, 1, (uint64_t)r);
    }
    return NULL;
}

static double pingpong_ns(enum pp_kind kind, int rounds, int pin)
{
    struct pp p = { .kind = kind, .rounds = rounds, .pin = pin };
    cpu_set_t saved;
    if (pin >= 0) {
        pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
        pin_to(pin);
    }
    for (int i = 0; i < 2; i++) {
        atomic_store(&sfx[i].v, 0);
        atomic_store(&sfx[i].sleepers, 0);
        CHECK(devq_signal_create(0, &p.ds[i]));
        pthread_mutex_init(&p.cs[i].m, NULL);
        pthread_cond_init(&p.cs[i].c, NULL);
        atomic_store(&p.cs[i].v, 0);
        atomic_store(&fx[i], 0);
    }
    pthread_t t;
    pthread_create(&t, NULL, pp_echo, &p);
    uint64_t t0 = now_ns();
    for (int r = 1; r <= rounds; r++) {
        pp_set(&p, 0, (uint64_t)r);
        pp_wait(&p, 1, (uint64_t)r);
    }
    double ns = (double)(now_ns() - t0) / rounds;
    pthread_join(t, NULL);
    for (int i = 0; i < 2; i++) {
        devq_signal_destroy(p.ds[i]);
        pthread_mutex_destroy(&p.cs[i].m);
        pthread_cond_destroy(&p.cs[i].c);
    }
    if (pin >= 0)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return ns;
}

static double spin_futex_rt_ns; /* the spinning futex round trip, for the queue latency row */

static void bench_signals(void)
{
    int rounds = quick ? 5000 : 50000;
    double d[REPS], c[REPS], f[REPS], sf[REPS];
    for (int r = 0; r < REPS; r++) {
        d[r] = pingpong_ns(PP_DEVQ, rounds, -1);
        c[r] = pingpong_ns(PP_CV, rounds, -1);
        f[r] = pingpong_ns(PP_FUTEX, rounds, -1);
        sf[r] = pingpong_ns(PP_SPINFUTEX, rounds, -1);
    }
    double dm = median(d, REPS);
    spin_futex_rt_ns = median(sf, REPS);
    add("signal ping-pong round trip", dm, median(c, REPS), "ns", 0, "atomic u64 + mutex/condvar signal",
        2.0);
    add("signal ping-pong round trip", dm, median(f, REPS), "ns", 0, "raw futex ping-pong", 0.77);
    add("signal ping-pong round trip", dm, spin_futex_rt_ns, "ns", 0, "spin-then-futex ping-pong (2 us spin)",
        1 / 1.2);
    /* Both threads on one CPU: the setter cannot run while the waiter
     * spins, so spinning must stop when it cannot help. */
    int cpu = sched_getcpu();
    if (cpu < 0)
        cpu = 0;
    int prounds = quick ? 2000 : 20000;
    for (int r = 0; r < REPS; r++) {
        d[r] = pingpong_ns(PP_DEVQ, prounds, cpu);
        f[r] = pingpong_ns(PP_FUTEX, prounds, cpu);
    }
    add("signal ping-pong, both threads on one CPU", median(d, REPS), median(f, REPS), "ns", 0,
        "raw futex ping-pong on one CPU", 1.0);
}

static double callq_per_s(int n, int call);

/* ---- 2. queues: latency vs a mutex+condvar work queue; empty batches ---- */

struct wq {
    pthread_mutex_t m;
    pthread_cond_t job, done;
    uint64_t posted, finished;
    int stop;
};

static void *wq_worker(void *arg)
{
    struct wq *w = arg;
    pthread_mutex_lock(&w->m);
    for (;;) {
        while (w->finished == w->posted && !w->stop)
            pthread_cond_wait(&w->job, &w->m);
        if (w->stop)
            break;
        w->finished++;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

static double wq_latency_ns(int rounds)
{
    struct wq w = { .m = PTHREAD_MUTEX_INITIALIZER,
                    .job = PTHREAD_COND_INITIALIZER,
                    .done = PTHREAD_COND_INITIALIZER };
    pthread_t t;
    pthread_create(&t, NULL, wq_worker, &w);
    uint64_t t0 = now_ns();
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&w.m);
        uint64_t want = ++w.posted;
        pthread_cond_signal(&w.job);
        while (w.finished < want)
            pthread_cond_wait(&w.done, &w.m);
        pthread_mutex_unlock(&w.m);
    }
    double ns = (double)(now_ns() - t0) / rounds;
    pthread_mutex_lock(&w.m);
    w.stop = 1;
    pthread_cond_signal(&w.job);
    pthread_mutex_unlock(&w.m);
    pthread_join(t, NULL);
    return ns;
}

static double devq_latency_ns(devq_queue *q, int rounds)
{
    devq_signal *s;
    CHECK(devq_signal_create(0, &s));
    uint64_t t0 = now_ns();
    for (int i = 1; i <= rounds; i++) {
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
        CHECK(devq_signal_wait(s, (uint64_t)i, DEVQ_TIMEOUT_INFINITE));
    }
    double ns = (double)(now_ns() - t0) / rounds;
    devq_signal_destroy(s);
    return ns;
}

/* A batch the stream must run: a 4-byte fill and a signal, submit ->
 * the host sees the signal (issue #33's device round trip). */
static double fill_latency_ns(devq_device *dev, devq_queue *q, int rounds)
{
    devq_signal *s;
    devq_buffer *buf;
    CHECK(devq_signal_create(0, &s));
    CHECK(devq_buffer_alloc(dev, 4096, NULL, 0, &buf));
    uint64_t t0 = now_ns();
    for (int i = 1; i <= rounds; i++) {
        CHECK(devq_queue_fill(q, buf, 0, 4, (uint8_t)i));
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
        CHECK(devq_signal_wait(s, (uint64_t)i, DEVQ_TIMEOUT_INFINITE));
    }
    double ns = (double)(now_ns() - t0) / rounds;
    CHECK(devq_buffer_free(buf, NULL));
    devq_signal_destroy(s);
    return ns;
}

static double empty_batches_per_s(devq_queue *q, int n)
{
    devq_signal *s;
    CHECK(devq_signal_create(0, &s));
    uint64_t t0 = now_ns();
    for (int i = 1; i <= n; i++) {
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
    }
    CHECK(devq_signal_wait(s, (uint64_t)n, DEVQ_TIMEOUT_INFINITE));
    double secs = (double)(now_ns() - t0) / 1e9;
    devq_signal_destroy(s);
    return n / secs;
}

static void bench_queues(devq_device *dev)
{
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    double d[REPS], b[REPS];
    int rounds = quick ? 2000 : 20000;
    for (int r = 0; r < REPS; r++) {
        d[r] = devq_latency_ns(q, rounds);
        b[r] = wq_latency_ns(rounds);
    }
    double lat = median(d, REPS);
    add("batch submit -> completion latency", lat, median(b, REPS), "ns", 0, "mutex+condvar work queue",
        0.67);
    if (!spin_futex_rt_ns) { /* the signals case did not run (--filter) */
        for (int r = 0; r < REPS; r++)
            d[r] = pingpong_ns(PP_SPINFUTEX, rounds, -1);
        spin_futex_rt_ns = median(d, REPS);
    }
    add("batch submit -> completion latency", lat, spin_futex_rt_ns, "ns", 0,
        "spinning futex ping-pong round trip", 0.33);
    for (int r = 0; r < REPS; r++)
        d[r] = fill_latency_ns(dev, q, rounds);
    add("fill + signal submit -> host sees it", median(d, REPS), spin_futex_rt_ns, "ns", 0,
        "spin-then-futex ping-pong round trip", 0.5);
    int n = quick ? 100000 : 1000000;
    for (int r = 0; r < REPS; r++) {
        d[r] = empty_batches_per_s(q, n);
        b[r] = callq_per_s(n, 0);
    }
    add("empty batches per second", median(d, REPS), median(b, REPS), "batch/s", 1,
        "mutex+condvar work queue of empty items", 1.0);
    devq_queue_destroy(q);
}

/* ---- small kernels: per-launch cost vs a work queue of function calls (cpu) ---- */

/* Three buffer arguments, almost no work: what is measured is recording,
 * tracking, issuing and running one launch. */
int devq_bench_tiny(void *const *args, const devq_cpu_group *g);
int devq_bench_tiny(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[2] += *(const uint32_t *)args[0] + *(const uint32_t *)args[1];
    return 0;
}

struct call {
    void *const *args;
}; /* args NULL: an empty item */

struct callq {
    pthread_mutex_t m;
    pthread_cond_t job, done;
    struct call *ring;
    uint64_t posted, finished, cap;
    int stop;
};

static void *callq_worker(void *arg)
{
    struct callq *w = arg;
    devq_cpu_group g = { .local_size = { 1, 1, 1 }, .global_size = { 1, 1, 1 }, .num_groups = { 1, 1, 1 } };
    pthread_mutex_lock(&w->m);
    for (;;) {
        while (w->finished == w->posted && !w->stop)
            pthread_cond_wait(&w->job, &w->m);
        if (w->finished == w->posted)
            break;
        struct call c = w->ring[w->finished % w->cap];
        pthread_mutex_unlock(&w->m);
        if (c.args)
            devq_bench_tiny(c.args, &g);
        pthread_mutex_lock(&w->m);
        w->finished++;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

/* The baseline: post n calls (or, without `call`, n empty items) to a
 * worker thread through a mutex+condvar ring, then wait for all of them. */
static double callq_per_s(int n, int call)
{
    uint32_t a = 1, b = 2, c = 0;
    void *args[3] = { &a, &b, &c };
    struct callq w = { .m = PTHREAD_MUTEX_INITIALIZER,
                       .job = PTHREAD_COND_INITIALIZER,
                       .done = PTHREAD_COND_INITIALIZER,
                       .cap = 1024 };
    w.ring = calloc(w.cap, sizeof *w.ring);
    pthread_t t;
    pthread_create(&t, NULL, callq_worker, &w);
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&w.m);
        while (w.posted - w.finished == w.cap)
            pthread_cond_wait(&w.done, &w.m);
        w.ring[w.posted++ % w.cap] = (struct call){ call ? args : NULL };
        pthread_cond_signal(&w.job);
        pthread_mutex_unlock(&w.m);
    }
    pthread_mutex_lock(&w.m);
    while (w.finished < w.posted)
        pthread_cond_wait(&w.done, &w.m);
    w.stop = 1;
    pthread_cond_signal(&w.job);
    pthread_mutex_unlock(&w.m);
    double secs = (double)(now_ns() - t0) / 1e9;
    pthread_join(t, NULL);
    free(w.ring);
    if (call && c != 3u * (uint32_t)n)
        fprintf(stderr, "devq-bench: work queue baseline computed %u, expected %u\n", c, 3u * (uint32_t)n);
    return n / secs;
}

static double launches_per_s(devq_device *dev, devq_queue *q, devq_kernel *k, int n)
{
    devq_buffer *buf[3];
    for (int i = 0; i < 3; i++)
        CHECK(devq_buffer_alloc(dev, 4, NULL, 0, &buf[i]));
    const uint32_t init[3] = { 1, 2, 0 };
    for (int i = 0; i < 3; i++)
        CHECK(devq_queue_write(q, buf[i], 0, &init[i], 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    devq_arg a[3] = { DEVQ_ARG_BUF(buf[0], DEVQ_READ), DEVQ_ARG_BUF(buf[1], DEVQ_READ),
                      DEVQ_ARG_BUF(buf[2], DEVQ_READ_WRITE) };
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    uint64_t t0 = now_ns();
    for (int i = 1; i <= n; i++) {
        CHECK(devq_queue_exec(q, k, a, 3, &l));
        if (i % 64 == 0 || i == n)
            CHECK(devq_queue_submit(q));
    }
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    double secs = (double)(now_ns() - t0) / 1e9;
    uint32_t got = 0;
    CHECK(devq_queue_read(q, &got, buf[2], 0, 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    if (got != 3u * (uint32_t)n)
        fprintf(stderr, "devq-bench: launches computed %u, expected %u\n", got, 3u * (uint32_t)n);
    for (int i = 0; i < 3; i++)
        CHECK(devq_buffer_free(buf[i], NULL));
    return n / secs;
}

static void bench_launches(devq_device *dev)
{
    devq_queue *q;
    devq_kernel *k;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_kernel_load(dev, NULL, 0, "devq_bench_tiny", &k));
    int n = quick ? 50000 : 500000;
    double d[REPS], b[REPS];
    for (int r = 0; r < REPS; r++) {
        d[r] = launches_per_s(dev, q, k, n);
        b[r] = callq_per_s(n, 1);
    }
    add("tiny kernel launches (3 buffers, 64/batch)", median(d, REPS), median(b, REPS), "launch/s", 1,
        "mutex+condvar queue of function calls", 0.7);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
}

/* The same 64 tiny launches recorded once as a graph and submitted
 * n / 64 times (devq_graph_submit(3)): recording, argument building and
 * checks are paid once. */
static double graph_launches_per_s(devq_device *dev, devq_queue *q, devq_kernel *k, int n)
{
    devq_buffer *buf[3];
    for (int i = 0; i < 3; i++)
        CHECK(devq_buffer_alloc(dev, 4, NULL, 0, &buf[i]));
    const uint32_t init[3] = { 1, 2, 0 };
    for (int i = 0; i < 3; i++)
        CHECK(devq_queue_write(q, buf[i], 0, &init[i], 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    devq_arg a[3] = { DEVQ_ARG_BUF(buf[0], DEVQ_READ), DEVQ_ARG_BUF(buf[1], DEVQ_READ),
                      DEVQ_ARG_BUF(buf[2], DEVQ_READ_WRITE) };
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    devq_graph *g;
    devq_graph_exec *ge;
    CHECK(devq_queue_begin_capture(q));
    for (int i = 0; i < 64; i++)
        CHECK(devq_queue_exec(q, k, a, 3, &l));
    CHECK(devq_queue_end_capture(q, &g));
    CHECK(devq_graph_instantiate(g, &ge));
    devq_graph_destroy(g);
    int subs = n / 64;
    uint64_t t0 = now_ns();
    for (int i = 0; i < subs; i++)
        CHECK(devq_graph_submit(q, ge));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    double secs = (double)(now_ns() - t0) / 1e9;
    devq_graph_exec_destroy(ge);
    uint32_t got = 0;
    CHECK(devq_queue_read(q, &got, buf[2], 0, 4));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    if (got != 3u * 64u * (uint32_t)subs)
        fprintf(stderr, "devq-bench: graph launches computed %u, expected %u\n", got,
                3u * 64u * (uint32_t)subs);
    for (int i = 0; i < 3; i++)
        CHECK(devq_buffer_free(buf[i], NULL));
    return subs * 64.0 / secs;
}

/* Graph replay against the work queue and against devq's own one-shot
 * path, all three in the same run. */
static void bench_graph(devq_device *dev)
{
    devq_queue *q;
    devq_kernel *k;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_kernel_load(dev, NULL, 0, "devq_bench_tiny", &k));
    int n = quick ? 64 * 1000 : 64 * 100000;
    double gr[REPS], one[REPS], b[REPS];
    for (int r = 0; r < REPS; r++) {
        gr[r] = graph_launches_per_s(dev, q, k, n);
        one[r] = launches_per_s(dev, q, k, quick ? n : n / 10);
        b[r] = callq_per_s(quick ? n : n / 10, 1);
    }
    double g = median(gr, REPS);
    add("graph replay, tiny launches (64/graph)", g, median(b, REPS), "launch/s", 1,
        "mutex+condvar queue of function calls", 3.0);
    add("graph replay vs one-shot batches (64 launches)", g, median(one, REPS), "launch/s", 1,
        "devq one-shot batches of 64 launches", 4.0);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
}

/* ---- 3. SAXPY: a devq kernel vs a hand-written pthread loop (cpu) ---- */

int devq_bench_saxpy(void *const *args, const devq_cpu_group *g);
int devq_bench_saxpy(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0];
    float *y = args[1];
    float a = *(const float *)args[2];
    size_t n = *(const uint64_t *)args[3];
    size_t lo = (size_t)g->group_id[0] * g->local_size[0];
    size_t hi = lo + g->local_size[0] < n ? lo + g->local_size[0] : n;
    for (size_t i = lo; i < hi; i++)
        y[i] = a * x[i] + y[i];
    return 0;
}

struct slice {
    const float *x;
    float *y;
    size_t lo, hi;
};

static void *saxpy_slice(void *arg)
{
    struct slice *s = arg;
    for (size_t i = s->lo; i < s->hi; i++)
        s->y[i] = 2.0f * s->x[i] + s->y[i];
    return NULL;
}

static void bench_saxpy(devq_device *dev)
{
    size_t n = (quick ? 32u : 256u) << 20 >> 2;
    devq_queue *q;
    devq_buffer *x, *y;
    devq_kernel *k;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &x));
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &y));
    CHECK(devq_kernel_load(dev, NULL, 0, "devq_bench_saxpy", &k));
    float *hx = devq_buffer_host_ptr(x), *hy = devq_buffer_host_ptr(y);
    float *px = malloc(n * 4), *py = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        hx[i] = px[i] = (float)(i & 1023);
        hy[i] = py[i] = 1.0f;
    }
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    threads = threads < 2 ? 2 : threads > 16 ? 16 : threads;
    float a = 2.0f;
    uint64_t nn = n;
    devq_arg args[4] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&a),
                         DEVQ_ARG_VAL(&nn) };
    devq_launch l = { { (uint32_t)n, 1, 1 }, { 1 << 16, 1, 1 }, 0 };
    double d[5], b[5];
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = now_ns();
        CHECK(devq_queue_exec(q, k, args, 4, &l));
        CHECK(devq_queue_submit(q));
        CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
        d[r] = 12.0 * n / (double)(now_ns() - t0);
        pthread_t t[16];
        struct slice s[16];
        t0 = now_ns();
        for (int i = 0; i < threads; i++) {
            s[i] = (struct slice){ px, py, n * (size_t)i / (size_t)threads,
                                   n * (size_t)(i + 1) / (size_t)threads };
            pthread_create(&t[i], NULL, saxpy_slice, &s[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        b[r] = 12.0 * n / (double)(now_ns() - t0);
    }
    for (size_t i = 0; i < n; i += 4099)
        if (hy[i] != py[i]) {
            fprintf(stderr, "devq-bench: SAXPY result differs from the pthread loop at %zu\n", i);
            exit(1);
        }
    add(quick ? "SAXPY 32 MiB bandwidth" : "SAXPY 256 MiB bandwidth", median(d, 5), median(b, 5), "GB/s", 1,
        "hand-written pthread loop", 0.8);
    free(px);
    free(py);
    devq_kernel_destroy(k);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_queue_destroy(q);
}

/* ---- compute-bound kernel over every core vs OpenMP (cpu) ---- */

/* ~200 flops per item (100 multiply-adds), items independent: the same
 * function is what both devq's groups and OpenMP's loop run. */
#define COMPUTE_CHUNK 4096
static void compute_chunk(float *y, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        y[i] = (float)(i & 1023) * 0.001f;
    for (int k = 0; k < 100; k++)
        for (size_t i = lo; i < hi; i++)
            y[i] = y[i] * 0.999f + 0.0005f;
}

int devq_bench_compute(void *const *args, const devq_cpu_group *g);
int devq_bench_compute(void *const *args, const devq_cpu_group *g)
{
    size_t n = *(const uint64_t *)args[1];
    size_t lo = (size_t)g->group_id[0] * g->local_size[0];
    size_t hi = lo + g->local_size[0] < n ? lo + g->local_size[0] : n;
    compute_chunk(args[0], lo, hi);
    return 0;
}

static void bench_compute(devq_device *dev)
{
#ifdef _OPENMP
    size_t n = (size_t)1 << (quick ? 20 : 24);
    devq_queue *q;
    devq_buffer *y;
    devq_kernel *k;
    CHECK(devq_queue_create(dev, NULL, &q));
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &y));
    CHECK(devq_kernel_load(dev, NULL, 0, "devq_bench_compute", &k));
    float *hy = devq_buffer_host_ptr(y), *py = malloc(n * 4);
    uint64_t nn = n;
    devq_arg args[2] = { DEVQ_ARG_BUF(y, DEVQ_WRITE), DEVQ_ARG_VAL(&nn) };
    devq_launch l = { { (uint32_t)n, 1, 1 }, { COMPUTE_CHUNK, 1, 1 }, 0 };
    double d[5], b[5];
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = now_ns();
        CHECK(devq_queue_exec(q, k, args, 2, &l));
        CHECK(devq_queue_submit(q));
        CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
        d[r] = 200.0 * n / (double)(now_ns() - t0);
        t0 = now_ns();
#pragma omp parallel for schedule(static)
        for (size_t c = 0; c < n / COMPUTE_CHUNK; c++)
            compute_chunk(py, c * COMPUTE_CHUNK, (c + 1) * COMPUTE_CHUNK);
        b[r] = 200.0 * n / (double)(now_ns() - t0);
    }
    if (memcmp(hy, py, n * 4)) {
        fprintf(stderr, "devq-bench: compute kernel result differs from OpenMP's\n");
        exit(1);
    }
    add("compute-bound kernel, all cores", median(d, 5), median(b, 5), "GFLOP/s", 1,
        "OpenMP parallel for (gcc -fopenmp)", 0.9);
    free(py);
    devq_kernel_destroy(k);
    devq_buffer_free(y, NULL);
    devq_queue_destroy(q);
#else
    (void)dev;
#endif
}

/* ---- 4. buffers: alloc/free pairs vs malloc/free ---- */

/* Pairs per second of devq_buffer_alloc + devq_buffer_free of `size` on
 * q (NULL: no queue, the free is immediate), and of glibc malloc + free
 * of the same size, alternately run by run, so that both see the same
 * load.  Targets (issue #33): at most 2x malloc's time on a queue, 4x
 * without one, i.e. >= 0.5x and >= 0.25x "better". */
static void bench_pairs(devq_device *dev, devq_queue *q, size_t size, const char *name, double target)
{
    int pairs = quick ? 20000 / ALLOC_QUICK_DIV : 200000;
    double d[REPS], b[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < pairs; i++) {
            devq_buffer *buf;
            CHECK(devq_buffer_alloc(dev, size, q, 0, &buf));
            CHECK(devq_buffer_free(buf, q));
        }
        d[r] = pairs / ((double)(now_ns() - t0) / 1e9);
        t0 = now_ns();
        for (int i = 0; i < pairs; i++) {
            void *volatile p = malloc(size);
            free(p);
        }
        b[r] = pairs / ((double)(now_ns() - t0) / 1e9);
    }
    add(name, median(d, REPS), median(b, REPS), "pairs/s", 1, "glibc malloc/free", target);
}

static void bench_buffers(devq_device *dev)
{
    static const size_t sizes[] = { 256, 4 << 10, 64 << 10, 1 << 20, 4 << 20 };
    static const char *on_q[] = { "alloc/free pairs, 256 B", "alloc/free pairs, 4 KiB",
                                  "alloc/free pairs, 64 KiB", "alloc/free pairs, 1 MiB",
                                  "alloc/free pairs, 4 MiB" };
    static const char *no_q[] = { "alloc/free pairs, no queue, 256 B", "alloc/free pairs, no queue, 4 KiB",
                                  "alloc/free pairs, no queue, 64 KiB", "alloc/free pairs, no queue, 1 MiB",
                                  "alloc/free pairs, no queue, 4 MiB" };
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    for (int s = 0; s < 5; s++)
        bench_pairs(dev, q, sizes[s], on_q[s], 0.5);
    for (int s = 0; s < 5; s++)
        bench_pairs(dev, NULL, sizes[s], no_q[s], 0.25);
    /* 64 live buffers of random size (1 KiB .. 1 MiB): each step frees a
     * random one and allocates a new random size in its place. */
    enum { LIVE = 64 };
    int steps = quick ? 20000 / ALLOC_QUICK_DIV : 200000;
    size_t *sz = malloc((size_t)steps * sizeof *sz);
    int *slot = malloc((size_t)steps * sizeof *slot);
    unsigned seed = 12345;
    for (int i = 0; i < steps; i++) {
        sz[i] = 1024 + (size_t)rand_r(&seed) % ((1 << 20) - 1024 + 1);
        slot[i] = rand_r(&seed) % LIVE;
    }
    double d[REPS], b[REPS];
    for (int r = 0; r < REPS; r++) {
        devq_buffer *live[LIVE];
        void *mlive[LIVE];
        for (int i = 0; i < LIVE; i++)
            CHECK(devq_buffer_alloc(dev, sz[i], q, 0, &live[i]));
        uint64_t t0 = now_ns();
        for (int i = LIVE; i < steps; i++) {
            CHECK(devq_buffer_free(live[slot[i]], q));
            CHECK(devq_buffer_alloc(dev, sz[i], q, 0, &live[slot[i]]));
        }
        d[r] = (steps - LIVE) / ((double)(now_ns() - t0) / 1e9);
        for (int i = 0; i < LIVE; i++)
            CHECK(devq_buffer_free(live[i], q));
        for (int i = 0; i < LIVE; i++)
            mlive[i] = malloc(sz[i]);
        t0 = now_ns();
        for (int i = LIVE; i < steps; i++) {
            free(mlive[slot[i]]);
            mlive[slot[i]] = malloc(sz[i]);
            *(volatile char *)mlive[slot[i]] = 0;
        }
        b[r] = (steps - LIVE) / ((double)(now_ns() - t0) / 1e9);
        for (int i = 0; i < LIVE; i++)
            free(mlive[i]);
    }
    free(sz);
    free(slot);
    add("64 live buffers, random 1 KiB-1 MiB, free+alloc", median(d, REPS), median(b, REPS), "pairs/s", 1,
        "glibc free+malloc", 2.5);
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    devq_queue_destroy(q);
}

/* ---- output ---- */

static double better_ratio(const struct result *r)
{
    if (r->base <= 0 || r->devq <= 0)
        return 0;
    return r->higher_is_better ? r->devq / r->base : r->base / r->devq;
}

#define BETTER_IS "x better: how many times better devq did than the baseline (>1: devq wins)"

static void target_text(const struct result *r, char *buf, size_t len)
{
    if (r->target > 0)
        snprintf(buf, len, ">= %.2fx %s", r->target, better_ratio(r) >= r->target ? "met" : "MISSED");
    else
        snprintf(buf, len, "-");
}

static void print_table(const devq_device_info *info)
{
    printf("devq-bench: devq %s on %s:%d (%s), %ld cpus%s\n", devq_version(), info->backend, info->ordinal,
           info->name, sysconf(_SC_NPROCESSORS_ONLN), quick ? ", --quick" : "");
    int wname = (int)strlen("benchmark"), wunit = (int)strlen("unit");
    for (int i = 0; i < nresults; i++) {
        if ((int)strlen(results[i].name) > wname)
            wname = (int)strlen(results[i].name);
        if ((int)strlen(results[i].unit) > wunit)
            wunit = (int)strlen(results[i].unit);
    }
    printf("%-*s  %14s  %14s  %-*s  %9s  %-17s  %s\n", wname, "benchmark", "devq", "baseline", wunit, "unit",
           "x better", "target", "baseline is");
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        char target[32];
        target_text(r, target, sizeof target);
        printf("%-*s  %14.1f  %14.1f  %-*s  %8.2fx  %-17s  %s (%s is better)\n", wname, r->name, r->devq,
               r->base, wunit, r->unit, better_ratio(r), target, r->baseline,
               r->higher_is_better ? "higher" : "lower");
    }
    printf("(medians of %d runs; " BETTER_IS ")\n", REPS);
}

static void json_str(const char *v)
{
    putchar('"');
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            putchar('\\');
        putchar(*v);
    }
    putchar('"');
}

static void print_json(const devq_device_info *info)
{
    printf("{\"devq\":\"%s\",\"backend\":\"%s\",\"device\":", devq_version(), info->backend);
    json_str(info->name);
    printf(",\"quick\":%s,\"better_is\":\"%s\",\"results\":[", quick ? "true" : "false", BETTER_IS);
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        printf("%s\n{\"name\":", i ? "," : "");
        json_str(r->name);
        printf(",\"unit\":\"%s\",\"devq\":%.3f,\"baseline\":%.3f,\"baseline_is\":", r->unit, r->devq,
               r->base);
        json_str(r->baseline);
        printf(",\"higher_is_better\":%s,\"better\":%.4f,\"target\":%.2f}",
               r->higher_is_better ? "true" : "false", better_ratio(r), r->target);
    }
    printf("\n]}\n");
}

/* ---- --compare a.json b.json: two runs' "better" side by side ---- */

struct cmp_row {
    char name[160];
    double better;
    int found;
};

/* Our own --json output: one result per line, keys in a fixed order. */
static int read_run(const char *path, struct cmp_row *rows, int cap, char *label, size_t label_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "devq-bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int n = 0, ok = 0;
    snprintf(label, label_len, "%s", path);
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"better_is\""))
            ok = 1;
        /* A benchmark is its name and its baseline: one name may be
         * measured against two. */
        const char *nm = strstr(line, "{\"name\":\""), *bt = strstr(line, "\"better\":"),
                   *bl = strstr(line, "\"baseline_is\":\"");
        if (!nm || !bt || !bl || n == cap)
            continue;
        nm += 9;
        bl += 15;
        const char *end = strchr(nm, '"'), *blend = strchr(bl, '"');
        if (!end || !blend)
            continue;
        snprintf(rows[n].name, sizeof rows[n].name, "%.*s, vs %.*s", (int)(end - nm), nm, (int)(blend - bl),
                 bl);
        rows[n].better = strtod(bt + 9, NULL);
        rows[n].found = 0;
        n++;
    }
    fclose(f);
    if (!ok) {
        fprintf(stderr, "devq-bench: %s: not a devq-bench --json file of this version (no \"better_is\")\n",
                path);
        return -1;
    }
    return n;
}

static int compare(const char *a, const char *b)
{
    struct cmp_row ra[32], rb[32];
    char la[256], lb[256];
    int na = read_run(a, ra, 32, la, sizeof la), nb = read_run(b, rb, 32, lb, sizeof lb);
    if (na < 0 || nb < 0)
        return 1;
    int wname = (int)strlen("benchmark");
    for (int i = 0; i < na; i++)
        if ((int)strlen(ra[i].name) > wname)
            wname = (int)strlen(ra[i].name);
    printf("A = %s\nB = %s\n", la, lb);
    printf("%-*s  %10s  %10s  %10s\n", wname, "benchmark", "A x better", "B x better", "B/A");
    for (int i = 0; i < na; i++) {
        int j = 0;
        while (j < nb && strcmp(ra[i].name, rb[j].name))
            j++;
        if (j == nb) {
            printf("%-*s  %9.2fx  %10s  %10s\n", wname, ra[i].name, ra[i].better, "-", "-");
            continue;
        }
        rb[j].found = 1;
        printf("%-*s  %9.2fx  %9.2fx  %9.2fx\n", wname, ra[i].name, ra[i].better, rb[j].better,
               ra[i].better > 0 ? rb[j].better / ra[i].better : 0.0);
    }
    for (int j = 0; j < nb; j++)
        if (!rb[j].found)
            printf("%-*s  %10s  %9.2fx  %10s\n", wname, rb[j].name, "-", rb[j].better, "-");
    printf("(x better: devq against the baseline measured in the same run, >1: devq wins;\n"
           " B/A > 1: devq did better relative to its baseline in B than in A)\n");
    return 0;
}

/* The verdict the table prints, as the plot colours it. */
enum verdict { NO_TARGET, MET, MISSED };
static enum verdict verdict_of(const struct result *r)
{
    return r->target <= 0 ? NO_TARGET : better_ratio(r) >= r->target ? MET : MISSED;
}
static const char *const verdict_colour[] = { "#4e79a7", "#59a14f", "#e15759" };
static const char *const verdict_label[] = { "no target", "target met", "target MISSED" };

#define PLOT_CLIP 8.0

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        default:
            fputc(*s, f);
        }
}

/* Bars of "how many times better than the baseline" (>1: devq wins),
 * coloured by the table's verdict (met, MISSED, no target).  The scale
 * stops at PLOT_CLIP x: a longer bar ends in a jagged edge and an arrow,
 * and its value is printed in bold with "clipped", so 151x and 63x do not
 * look the same. */
static int write_plot(const char *path, const char *label)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "devq-bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    double maxr = 1;
    for (int i = 0; i < nresults; i++)
        if (better_ratio(&results[i]) > maxr)
            maxr = better_ratio(&results[i]);
    maxr = maxr > PLOT_CLIP ? PLOT_CLIP : maxr * 1.1;
    const double left = 300, width = 900, bar = 26, top = 60;
    double h = top + nresults * (bar + 10) + 70;
    fprintf(
        f,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
        "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        width, h);
    fprintf(
        f,
        "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">devq-bench: x better than the baseline (right of 1.0: devq wins)</text>\n");
    fprintf(f, "<text x=\"10\" y=\"42\" fill=\"#555\">");
    xml_text(f, label);
    fprintf(f, "</text>\n");
    double scale = (width - left - 110) / maxr;
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        double y = top + i * (bar + 10), ratio = better_ratio(r);
        int clipped = ratio > maxr;
        double w = (clipped ? maxr : ratio) * scale;
        enum verdict v = verdict_of(r);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + 11);
        xml_text(f, r->name);
        fprintf(f,
                "</text>\n<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\" fill=\"#666\">vs ",
                left - 8, y + 24);
        xml_text(f, r->baseline);
        fprintf(f, "</text>\n");
        fprintf(
            f,
            "<rect class=\"bar %s\" x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\"><title>%.2fx, %s</title></rect>\n",
            v == MET      ? "met"
            : v == MISSED ? "missed"
                          : "none",
            left, y, w, bar, verdict_colour[v], ratio, verdict_label[v]);
        if (clipped) {
            /* A white zigzag cut near the end, then an arrow past it. */
            double x = left + w - 14;
            fprintf(f,
                    "<polyline class=\"clip\" fill=\"none\" stroke=\"white\" stroke-width=\"2.5\" points=\""
                    "%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                    x, y, x + 5, y + bar * 0.25, x, y + bar * 0.5, x + 5, y + bar * 0.75, x, y + bar);
            fprintf(f, "<path d=\"M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f z\" fill=\"%s\"/>\n", left + w, y,
                    left + w + 10, y + bar / 2, left + w, y + bar, verdict_colour[v]);
            fprintf(
                f,
                "<text class=\"value clipped\" x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">%.2fx (clipped)</text>\n",
                left + w + 14, y + bar * 0.7, ratio);
        } else {
            fprintf(f, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">%.2fx</text>\n", left + w + 5,
                    y + bar * 0.7, ratio);
        }
        if (r->target > 0 && r->target <= maxr) {
            double tx = left + r->target * scale;
            fprintf(
                f,
                "<line class=\"target\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" stroke-width=\"2\"><title>target %.2fx</title></line>\n",
                tx, y - 2, tx, y + bar + 2, r->target);
        }
    }
    double x1 = left + scale, ly = h - 40;
    fprintf(
        f,
        "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"4,3\"/>\n"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#333\">1.0 (baseline)</text>\n",
        x1, top - 8, x1, ly - 10, x1, ly + 4);
    double lx = 10;
    ly += 24;
    for (int v = 0; v < 3; v++) {
        fprintf(f,
                "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text></g>\n",
                lx, ly - 9, verdict_colour[v], lx + 18, ly, verdict_label[v]);
        lx += 130;
    }
    fprintf(
        f,
        "<g class=\"legend\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" stroke-width=\"2\"/>"
        "<text x=\"%.1f\" y=\"%.1f\">target</text></g>\n",
        lx + 6, ly - 11, lx + 6, ly + 1, lx + 14, ly);
    lx += 90;
    fprintf(
        f,
        "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">bars past %.0fx are cut, end in an arrow and print their value</text>\n",
        lx, ly, PLOT_CLIP);
    fprintf(f, "</svg>\n");
    return fclose(f) ? -1 : 0;
}

/* --plot OUT --from RUN.json: the plot of a saved --json run. */
static int plot_saved_run(const char *from, const char *out)
{
    FILE *f = fopen(from, "r");
    if (!f) {
        fprintf(stderr, "devq-bench: %s: %s\n", from, strerror(errno));
        return -1;
    }
    static char names[32][160], units[32][32], bases[32][160];
    char line[2048], label[300] = "";
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p;
        if ((p = strstr(line, "\"better_is\""))) {
            ok = 1;
            char devq[32] = "", be[32] = "", dev[160] = "";
            const char *v = strstr(line, "{\"devq\":\""), *b = strstr(line, "\"backend\":\""),
                       *d = strstr(line, "\"device\":\"");
            if (v)
                sscanf(v + 9, "%31[^\"]", devq);
            if (b)
                sscanf(b + 11, "%31[^\"]", be);
            if (d)
                sscanf(d + 10, "%159[^\"]", dev);
            snprintf(label, sizeof label, "devq %s, %s %s, medians of %d runs (from %s)", devq, be, dev, REPS,
                     from);
        }
        const char *nm = strstr(line, "{\"name\":\""), *un = strstr(line, "\"unit\":\""),
                   *dq = strstr(line, "\"devq\":"), *bl = strstr(line, "\"baseline\":"),
                   *bi = strstr(line, "\"baseline_is\":\""), *hb = strstr(line, "\"higher_is_better\":"),
                   *tg = strstr(line, "\"target\":");
        if (!nm || !un || !dq || !bl || !bi || !hb || !tg || nresults == 32)
            continue;
        int i = nresults;
        if (sscanf(nm + 9, "%159[^\"]", names[i]) != 1 || sscanf(un + 8, "%31[^\"]", units[i]) != 1 ||
            sscanf(bi + 15, "%159[^\"]", bases[i]) != 1)
            continue;
        add(names[i], strtod(dq + 7, NULL), strtod(bl + 11, NULL), units[i], !strncmp(hb + 19, "true", 4),
            bases[i], strtod(tg + 9, NULL));
    }
    fclose(f);
    if (!ok || !nresults) {
        fprintf(stderr, "devq-bench: %s: not a devq-bench --json file of this version\n", from);
        return -1;
    }
    return write_plot(out, label);
}

/* ---- the cases: one entry per benchmark function ---- */

static void run_signals(devq_device *dev)
{
    (void)dev;
    bench_signals();
}

static const struct bench_case {
    const char *name; /* for --list and --filter */
    const char *what; /* one line for --list */
    int cpu_only;     /* its kernels are C functions */
    void (*run)(devq_device *dev);
} cases[] = {
    { "signals", "signal ping-pong, free and with both threads on one CPU", 0, run_signals },
    { "queues", "batch submit -> completion latency, fill + signal round trip, empty batches per second", 0,
      bench_queues },
    { "launches", "tiny kernel launches", 1, bench_launches },
    { "graph", "tiny launches replayed as a graph vs one-shot and a work queue", 1, bench_graph },
    { "saxpy", "SAXPY bandwidth", 1, bench_saxpy },
    { "compute", "compute-bound kernel, all cores", 1, bench_compute },
    { "buffers", "alloc/free pairs, 64 live buffers of random size", 0, bench_buffers },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* A glob (fnmatch) when PATTERN has * ? or [, else a substring. */
static int case_matches(const struct bench_case *c, const char *pattern)
{
    if (!pattern)
        return 1;
    if (strpbrk(pattern, "*?["))
        return fnmatch(pattern, c->name, 0) == 0;
    return strstr(c->name, pattern) != NULL;
}

static void list_cases(void)
{
    for (size_t i = 0; i < NCASES; i++)
        printf("%-9s %s%s\n", cases[i].name, cases[i].what, cases[i].cpu_only ? " (cpu backend only)" : "");
}

/* ---- progress on stderr: which case, n of N, elapsed ----
 * On a terminal one line is redrawn in place every half second (as
 * hyperfine and fio do); with --progress on something else (a log), one
 * line per case.  Nothing with -q, or when stderr is not a terminal. */

enum { PROGRESS_AUTO, PROGRESS_OFF, PROGRESS_ON };
static struct {
    int mode, tty, stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t t0, case_t0;
    const char *name;
    size_t n, total;
    int started;
} progress = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void progress_draw(int final)
{
    double all = (double)(now_ns() - progress.t0) / 1e9;
    if (final) {
        fprintf(stderr,
                progress.tty ? "\r\033[Kdevq-bench: %zu case%s done in %.1f s\n"
                             : "devq-bench: %zu case%s done in %.1f s\n",
                progress.total, progress.total == 1 ? "" : "s", all);
        return;
    }
    double in_case = (double)(now_ns() - progress.case_t0) / 1e9;
    fprintf(stderr,
            progress.tty ? "\r\033[Kdevq-bench: [%zu/%zu] %s: %.1f s (%.1f s elapsed)"
                         : "devq-bench: [%zu/%zu] %s (%.1f s elapsed when it started)\n",
            progress.n, progress.total, progress.name, progress.tty ? in_case : all, all);
    fflush(stderr);
}

static void *progress_ticker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&progress.lock);
    while (!progress.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&progress.cond, &progress.lock, &ts);
        if (!progress.stop && progress.name)
            progress_draw(0);
    }
    pthread_mutex_unlock(&progress.lock);
    return NULL;
}

static void progress_begin(size_t total)
{
    progress.tty = isatty(STDERR_FILENO);
    if (progress.mode == PROGRESS_OFF || (progress.mode == PROGRESS_AUTO && !progress.tty))
        return;
    progress.total = total;
    progress.t0 = now_ns();
    progress.started = 1;
    if (progress.tty && pthread_create(&progress.thread, NULL, progress_ticker, NULL) != 0)
        progress.tty = 0; /* no ticker: one line per case */
}

static void progress_case(const char *name, size_t n)
{
    if (!progress.started)
        return;
    pthread_mutex_lock(&progress.lock);
    progress.name = name;
    progress.n = n;
    progress.case_t0 = now_ns();
    progress_draw(0);
    pthread_mutex_unlock(&progress.lock);
}

static void progress_end(void)
{
    if (!progress.started)
        return;
    pthread_mutex_lock(&progress.lock);
    progress.stop = 1;
    pthread_cond_signal(&progress.cond);
    pthread_mutex_unlock(&progress.lock);
    if (progress.tty)
        pthread_join(progress.thread, NULL);
    progress_draw(1);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: devq-bench [-b BACKEND] [--quick] [--filter PATTERN] [--json] [--plot OUT.svg]\n"
                 "                  [-q | --progress]\n"
                 "       devq-bench --list | --version | --help\n"
                 "       devq-bench --compare A.json B.json\n"
                 "       devq-bench --plot OUT.svg --from RUN.json\n"
                 "Run devq's benchmarks side by side with their baselines, or compare two\n"
                 "--json runs; see devq-bench(1).\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = { { "backend", required_argument, 0, 'b' },
                                          { "quick", no_argument, 0, 'Q' },
                                          { "json", no_argument, 0, 'j' },
                                          { "plot", required_argument, 0, 'p' },
                                          { "help", no_argument, 0, 'h' },
                                          { "compare", no_argument, 0, 'c' },
                                          { "version", no_argument, 0, 'V' },
                                          { "list", no_argument, 0, 'l' },
                                          { "filter", required_argument, 0, 'f' },
                                          { "quiet", no_argument, 0, 'q' },
                                          { "progress", no_argument, 0, 'P' },
                                          { "from", required_argument, 0, 'F' },
                                          { 0, 0, 0, 0 } };
    int json = 0, cmp_runs = 0, c;
    const char *plot = NULL, *filter = NULL, *from = NULL;
    while ((c = getopt_long(argc, argv, "b:qjp:hVlf:", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            backend = optarg;
            break;
        case 'Q':
            quick = 1;
            break;
        case 'q':
            progress.mode = PROGRESS_OFF;
            break;
        case 'P':
            progress.mode = PROGRESS_ON;
            break;
        case 'j':
            json = 1;
            break;
        case 'p':
            plot = optarg;
            break;
        case 'f':
            filter = optarg;
            break;
        case 'F':
            from = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("devq-bench %s (libdevq %s)\n", PACKAGE_VERSION, devq_version());
            return 0;
        case 'l':
            list_cases();
            return 0;
        case 'c':
            cmp_runs = 1;
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (cmp_runs) {
        if (argc - optind != 2) {
            usage(stderr);
            return 2;
        }
        return compare(argv[optind], argv[optind + 1]);
    }
    if (optind < argc || (from && !plot)) {
        if (from && !plot)
            fprintf(stderr, "devq-bench: --from draws a saved run: give --plot OUT.svg too\n");
        usage(stderr);
        return 2;
    }
    if (from)
        return plot_saved_run(from, plot) < 0 ? 1 : 0;
    size_t chosen = 0;
    for (size_t i = 0; i < NCASES; i++)
        chosen += case_matches(&cases[i], filter);
    if (!chosen) {
        fprintf(stderr, "devq-bench: --filter '%s' matches no benchmark; the benchmarks are:\n", filter);
        for (size_t i = 0; i < NCASES; i++)
            fprintf(stderr, "  %s\n", cases[i].name);
        return 2;
    }
    devq_device *dev;
    if (devq_device_open(backend, &dev) < 0) {
        fprintf(stderr, "devq-bench: cannot open '%s': %s\n", backend, devq_errmsg());
        return 1;
    }
    devq_device_info info;
    CHECK(devq_device_info_get(dev, &info));
    int is_cpu = !strcmp(info.backend, "cpu");
    size_t total = 0, n = 0;
    for (size_t i = 0; i < NCASES; i++)
        total += case_matches(&cases[i], filter) && (is_cpu || !cases[i].cpu_only);
    progress_begin(total);
    for (size_t i = 0; i < NCASES; i++) {
        if (!case_matches(&cases[i], filter) || (!is_cpu && cases[i].cpu_only))
            continue;
        progress_case(cases[i].name, ++n);
        cases[i].run(dev);
    }
    progress_end();
    if (json)
        print_json(&info);
    else
        print_table(&info);
    int r = 0;
    if (plot) {
        char label[300];
        snprintf(label, sizeof label, "devq %s, %s:%d %s, medians of %d runs", devq_version(), info.backend,
                 info.ordinal, info.name, REPS);
        r = write_plot(plot, label);
    }
    devq_device_close(dev);
    return r < 0 ? 1 : 0;
}
