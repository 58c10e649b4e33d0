/* Queue benchmarks on the cpu backend (issue 4), each against the obvious
 * baseline in the same run:
 *  (a) submit-to-completion latency of a batch that signals once, the host
 *      waiting on the signal, vs a minimal mutex+condvar work queue;
 *  (b) throughput of empty batches, each signalling the next value;
 *  (c) a 256 MiB SAXPY as a devq kernel vs a hand-written 2-thread loop.
 * Medians of repeated runs; ratios are devq / baseline. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <devq/devq.h>
#include "bench_util.h"

#define CHECK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s: %d %s\n", #x, r_, devq_errmsg()); exit(1); } } while (0)

/* ---- baseline: a mutex+condvar work queue with one worker ---- */
struct wq {
    pthread_mutex_t m;
    pthread_cond_t cv_job, cv_done;
    uint64_t posted, done;
    int stop;
};

static void *wq_worker(void *arg)
{
    struct wq *w = arg;
    pthread_mutex_lock(&w->m);
    for (;;) {
        while (w->done == w->posted && !w->stop)
            pthread_cond_wait(&w->cv_job, &w->m);
        if (w->stop)
            break;
        w->done++;                       /* the "job": complete it */
        pthread_cond_broadcast(&w->cv_done);
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

static double wq_latency_ns(int rounds)
{
    struct wq w = { .m = PTHREAD_MUTEX_INITIALIZER, .cv_job = PTHREAD_COND_INITIALIZER,
                    .cv_done = PTHREAD_COND_INITIALIZER };
    pthread_t t;
    pthread_create(&t, NULL, wq_worker, &w);
    uint64_t t0 = bench_now();
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&w.m);
        uint64_t want = ++w.posted;
        pthread_cond_signal(&w.cv_job);
        while (w.done < want)
            pthread_cond_wait(&w.cv_done, &w.m);
        pthread_mutex_unlock(&w.m);
    }
    double ns = (double)(bench_now() - t0) / rounds;
    pthread_mutex_lock(&w.m);
    w.stop = 1;
    pthread_cond_signal(&w.cv_job);
    pthread_mutex_unlock(&w.m);
    pthread_join(t, NULL);
    return ns;
}

static double devq_latency_ns(devq_queue *q, int rounds)
{
    devq_signal *s;
    CHECK(devq_signal_create(0, &s));
    uint64_t t0 = bench_now();
    for (int i = 1; i <= rounds; i++) {
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
        CHECK(devq_signal_wait(s, (uint64_t)i, DEVQ_TIMEOUT_INFINITE));
    }
    double ns = (double)(bench_now() - t0) / rounds;
    devq_signal_destroy(s);
    return ns;
}

static double devq_empty_batches_per_s(devq_queue *q, int n)
{
    devq_signal *s;
    CHECK(devq_signal_create(0, &s));
    uint64_t t0 = bench_now();
    for (int i = 1; i <= n; i++) {
        CHECK(devq_queue_signal(q, s, (uint64_t)i));
        CHECK(devq_queue_submit(q));
    }
    CHECK(devq_signal_wait(s, (uint64_t)n, DEVQ_TIMEOUT_INFINITE));
    double secs = (double)(bench_now() - t0) / 1e9;
    devq_signal_destroy(s);
    return n / secs;
}

/* ---- SAXPY ---- */
int bench_saxpy(void *const *args, const devq_cpu_group *g);
int bench_saxpy(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0];
    float *y = args[1];
    float a = *(const float *)args[2];
    size_t n = *(const uint64_t *)args[3];
    size_t per = g->local_size[0];
    size_t lo = (size_t)g->group_id[0] * per, hi = lo + per < n ? lo + per : n;
    for (size_t i = lo; i < hi; i++)
        y[i] = a * x[i] + y[i];
    return 0;
}

struct slice {
    const float *x;
    float *y;
    float a;
    size_t lo, hi;
};

static void *saxpy_thread(void *arg)
{
    struct slice *s = arg;
    for (size_t i = s->lo; i < s->hi; i++)
        s->y[i] = s->a * s->x[i] + s->y[i];
    return NULL;
}

static double pthread_saxpy_gbs(const float *x, float *y, size_t n, int nthreads)
{
    pthread_t t[16];
    struct slice s[16];
    uint64_t t0 = bench_now();
    for (int i = 0; i < nthreads; i++) {
        s[i] = (struct slice){ x, y, 2.0f, n * i / nthreads, n * (i + 1) / nthreads };
        pthread_create(&t[i], NULL, saxpy_thread, &s[i]);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    double secs = (double)(bench_now() - t0) / 1e9;
    return 3.0 * n * sizeof(float) / secs / 1e9;
}

static double devq_saxpy_gbs(devq_queue *q, devq_kernel *k, devq_buffer *x, devq_buffer *y, size_t n)
{
    float a = 2.0f;
    uint64_t nn = n;
    devq_arg args[4] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&a),
                         DEVQ_ARG_VAL(&nn) };
    uint32_t local = 1 << 16;
    devq_launch l = { { (uint32_t)n, 1, 1 }, { local, 1, 1 }, 0 };
    uint64_t t0 = bench_now();
    CHECK(devq_queue_exec(q, k, args, 4, &l));
    CHECK(devq_queue_submit(q));
    CHECK(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE));
    double secs = (double)(bench_now() - t0) / 1e9;
    return 3.0 * n * sizeof(float) / secs / 1e9;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    devq_device *dev;
    CHECK(devq_device_open("cpu", &dev));
    devq_queue *q;
    CHECK(devq_queue_create(dev, NULL, &q));
    enum { REPS = 7 };
    double a[REPS], b[REPS];

    bench_header("queues (cpu backend)");
    int rounds = quick ? 2000 : 20000;
    for (int r = 0; r < REPS; r++) {
        a[r] = devq_latency_ns(q, rounds);
        b[r] = wq_latency_ns(rounds);
    }
    bench_row("submit->complete latency, 1 signal (ns)", bench_median(a, REPS), bench_median(b, REPS), "ns",
              "<= 1.5x mutex+condvar work queue");

    int nb = quick ? 100000 : 1000000;
    for (int r = 0; r < REPS; r++)
        a[r] = devq_empty_batches_per_s(q, nb);
    bench_row("empty batches per second", bench_median(a, REPS), 1e6, "batch/s", ">= 1,000,000/s");

    size_t n = (quick ? 16u : 256u) << 20 >> 2;       /* floats in 256 MiB */
    devq_buffer *x, *y;
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &x));
    CHECK(devq_buffer_alloc(dev, n * 4, NULL, 0, &y));
    float *hx = devq_buffer_host_ptr(x), *hy = devq_buffer_host_ptr(y);
    for (size_t i = 0; i < n; i++) {
        hx[i] = (float)(i & 1023);
        hy[i] = 1.0f;
    }
    float *px = malloc(n * 4), *py = malloc(n * 4);
    memcpy(px, hx, n * 4);
    memcpy(py, hy, n * 4);
    devq_kernel *k;
    CHECK(devq_kernel_load(dev, NULL, 0, "bench_saxpy", &k));
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int r = 0; r < 5; r++) {
        a[r] = devq_saxpy_gbs(q, k, x, y, n);
        b[r] = pthread_saxpy_gbs(px, py, n, ncpu < 2 ? 2 : ncpu > 16 ? 16 : ncpu);
    }
    char name[64];
    snprintf(name, sizeof name, "SAXPY %zu MiB (GB/s)", n * 4 >> 20);
    bench_row(name, bench_median(a, 5), bench_median(b, 5), "GB/s", ">= 0.8x hand-written pthread loop");
    /* The result must be right, not only fast. */
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i += 4097)
        bad = hy[i] != py[i];
    if (bad) {
        fprintf(stderr, "SAXPY result differs from the pthread reference\n");
        return 1;
    }
    free(px);
    free(py);
    devq_kernel_destroy(k);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
    return 0;
}
