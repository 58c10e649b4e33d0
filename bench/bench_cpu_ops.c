/* SPDX-License-Identifier: MIT */
/* cpu backend benchmark, through the ops table (no libdevq):
 *  - raw host callback throughput on one stream;
 *  - submit -> completion round trip vs a minimal mutex+condvar queue;
 *  - a 256 MiB SAXPY through launch vs a hand-written 2-thread loop. */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../tests/helpers/cpu_test_host.h"

static const struct devq_backend_ops *ops;
static devq_pl_device *dev;

static uint64_t now(void)
{
    return cpu_test_host.now_ns();
}

static int cb_count(void *arg, int status)
{
    (void)status;
    (*(uint64_t *)arg)++;
    return 0;
}

static void bench_host_fn_rate(devq_pl_stream *s)
{
    enum { N = 2000000 };
    uint64_t count = 0;
    devq_pl_event *e;
    ops->event_create(dev, 0, &e);
    uint64_t t0 = now();
    for (int i = 0; i < N; i++)
        ops->host_fn(s, cb_count, &count);
    ops->event_record(e, s);
    ops->event_wait(e, UINT64_MAX);
    double dt = (double)(now() - t0) / 1e9;
    printf("host_fn throughput:   %8.2f M ops/s (%d callbacks, count %s)\n", N / dt / 1e6, N,
           count == N ? "ok" : "WRONG");
    /* An "empty batch" as lib makes it: a host callback and an event record. */
    t0 = now();
    for (int i = 0; i < N / 2; i++) {
        ops->host_fn(s, cb_count, &count);
        ops->event_record(e, s);
    }
    ops->event_wait(e, UINT64_MAX);
    dt = (double)(now() - t0) / 1e9;
    printf("empty batches:        %8.2f M batches/s (host_fn + event_record)\n", N / 2 / dt / 1e6);
    ops->event_destroy(e);
}

/* ---- the reference: a minimal mutex + condvar work queue ---- */
struct ref_queue {
    pthread_mutex_t m;
    pthread_cond_t work, done;
    uint64_t submitted, completed;
    int stop;
};

static void *ref_worker(void *arg)
{
    struct ref_queue *q = arg;
    pthread_mutex_lock(&q->m);
    for (;;) {
        while (q->completed == q->submitted && !q->stop)
            pthread_cond_wait(&q->work, &q->m);
        if (q->stop)
            break;
        q->completed++; /* the "op" */
        pthread_cond_broadcast(&q->done);
    }
    pthread_mutex_unlock(&q->m);
    return NULL;
}

/* Idle gap between rounds of the "cold" measurement: long enough for
 * both workers to fall asleep, so the wake-up path is what is timed. */
static void idle_gap(void)
{
    struct timespec ts = { 0, 300000 };
    nanosleep(&ts, NULL);
}

static double ref_round_trip_ns(int rounds, int cold)
{
    struct ref_queue q = {
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0
    };
    pthread_t t;
    pthread_create(&t, NULL, ref_worker, &q);
    uint64_t total = 0;
    for (int i = 0; i < rounds; i++) {
        if (cold)
            idle_gap();
        uint64_t t0 = now();
        pthread_mutex_lock(&q.m);
        q.submitted++;
        pthread_cond_signal(&q.work);
        while (q.completed != q.submitted)
            pthread_cond_wait(&q.done, &q.m);
        pthread_mutex_unlock(&q.m);
        total += now() - t0;
    }
    double per = (double)total / rounds;
    pthread_mutex_lock(&q.m);
    q.stop = 1;
    pthread_cond_signal(&q.work);
    pthread_mutex_unlock(&q.m);
    pthread_join(t, NULL);
    return per;
}

static double cpu_round_trip_ns(devq_pl_stream *s, int rounds, int cold)
{
    uint64_t count = 0;
    devq_pl_event *e;
    ops->event_create(dev, 0, &e);
    uint64_t total = 0;
    for (int i = 0; i < rounds; i++) {
        if (cold)
            idle_gap();
        uint64_t t0 = now();
        ops->host_fn(s, cb_count, &count);
        ops->event_record(e, s);
        ops->event_wait(e, UINT64_MAX);
        total += now() - t0;
    }
    double per = (double)total / rounds;
    ops->event_destroy(e);
    return per;
}

/* ---- SAXPY ---- */
int bench_saxpy(void *const *args, const devq_cpu_group *g);
int bench_saxpy(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0];
    float *y = args[1];
    float a = *(const float *)args[2];
    size_t begin = (size_t)g->group_id[0] * g->local_size[0];
    size_t end = begin + g->local_size[0];
    if (end > g->global_size[0])
        end = g->global_size[0];
    for (size_t i = begin; i < end; i++)
        y[i] = a * x[i] + y[i];
    return 0;
}

struct half {
    const float *x;
    float *y;
    float a;
    size_t begin, end;
};
static void *saxpy_half(void *arg)
{
    struct half *h = arg;
    for (size_t i = h->begin; i < h->end; i++)
        h->y[i] = h->a * h->x[i] + h->y[i];
    return NULL;
}

static void bench_saxpy_launch(devq_pl_stream *s)
{
    const size_t n = (256u << 20) / 2 / sizeof(float); /* x and y: 256 MiB together */
    float *x, *y;
    void *h;
    if (ops->mem_alloc(dev, n * sizeof(float), (void **)&x, &h) ||
        ops->mem_alloc(dev, n * sizeof(float), (void **)&y, &h)) {
        printf("saxpy: cannot allocate 256 MiB: %s\n", cpu_test_errmsg());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = 1.0f;
        y[i] = 2.0f;
    }
    devq_pl_kernel *k;
    if (ops->kernel_load(dev, NULL, 0, "bench_saxpy", &k)) {
        printf("saxpy: %s\n", cpu_test_errmsg());
        return;
    }
    float a = 0.5f;
    struct devq_pl_arg args[3] = { { .is_buffer = 1, .device_ptr = x },
                                   { .is_buffer = 1, .device_ptr = y },
                                   { .value = &a, .size = sizeof a } };
    devq_launch l = { { (uint32_t)n, 1, 1 }, { 1u << 16, 1, 1 }, 0 };
    devq_pl_event *e;
    ops->event_create(dev, 0, &e);
    double best_launch = 1e30, best_ref = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        uint64_t t0 = now();
        ops->launch(s, k, &l, args, 3);
        ops->event_record(e, s);
        ops->event_wait(e, UINT64_MAX);
        double dt = (double)(now() - t0);
        if (dt < best_launch)
            best_launch = dt;

        struct half hs[2] = { { x, y, a, 0, n / 2 }, { x, y, a, n / 2, n } };
        pthread_t t[2];
        t0 = now();
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, saxpy_half, &hs[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        dt = (double)(now() - t0);
        if (dt < best_ref)
            best_ref = dt;
    }
    double bytes = 3.0 * (double)n * sizeof(float); /* read x, read y, write y */
    printf("saxpy 256 MiB launch: %8.2f ms (%.2f GB/s)\n", best_launch / 1e6, bytes / best_launch);
    printf("saxpy 2-thread loop:  %8.2f ms (%.2f GB/s)\n", best_ref / 1e6, bytes / best_ref);
    printf("saxpy ratio (loop time / launch time): %.2f\n", best_ref / best_launch);
    ops->event_destroy(e);
    ops->kernel_destroy(k);
    ops->mem_free(dev, x);
    ops->mem_free(dev, y);
}

int main(void)
{
    ops = cpu_test_ops();
    if (!ops || ops->device_open(0, &dev)) {
        fprintf(stderr, "bench_cpu_ops: %s\n", cpu_test_errmsg());
        return 1;
    }
    devq_pl_stream *s;
    devq_queue_desc d = { DEVQ_QUEUE_COMPUTE, 0 };
    if (ops->stream_create(dev, &d, &s)) {
        fprintf(stderr, "bench_cpu_ops: %s\n", cpu_test_errmsg());
        return 1;
    }
    bench_host_fn_rate(s);
    /* Best of 5 interleaved runs: the machine may be shared, and the
     * best run is the one least disturbed by others. */
    enum { ROUNDS = 20000, COLD_ROUNDS = 1000, REPS = 5 };
    cpu_round_trip_ns(s, 1000, 0); /* warm up */
    for (int cold = 0; cold < 2; cold++) {
        double ref = 1e30, cpu = 1e30;
        for (int r = 0; r < REPS; r++) {
            double a = ref_round_trip_ns(cold ? COLD_ROUNDS : ROUNDS, cold);
            double b = cpu_round_trip_ns(s, cold ? COLD_ROUNDS : ROUNDS, cold);
            ref = a < ref ? a : ref;
            cpu = b < cpu ? b : cpu;
        }
        printf("round trip, %s:     %8.0f ns cpu stream, %.0f ns mutex+condvar queue "
               "(ratio %.2f, target <= 1.5)\n",
               cold ? "idle" : "busy", cpu, ref, cpu / ref);
    }
    bench_saxpy_launch(s);
    ops->stream_destroy(s);
    ops->device_close(dev);
    ops->fini();
    return 0;
}
