/* SPDX-License-Identifier: MIT */
/* The cpu backend, driven through its ops table with a test host table
 * (no libdevq): ordering, events, the host callback error contract,
 * kernels, the shared pool and its priorities, memory. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../helpers/cpu_test_host.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

/* plugins/cpu/stream.c: 1 when membarrier fences for the sleeping side. */
extern int cpu_asym_fence;

static const struct devq_backend_ops *ops;
static devq_pl_device *dev;

static void setup(void)
{
    ops = cpu_test_ops();
    ck_assert_ptr_nonnull(ops);
    ck_assert_int_eq(ops->device_open(0, &dev), 0);
}

static void teardown(void)
{
    ops->device_close(dev);
    dev = NULL;
}

static devq_pl_stream *stream_new(int priority)
{
    devq_queue_desc d = { DEVQ_QUEUE_COMPUTE, priority };
    devq_pl_stream *s = NULL;
    ck_assert_int_eq(ops->stream_create(dev, &d, &s), 0);
    return s;
}

/* Block until every op queued on s so far has run. */
static void stream_sync(devq_pl_stream *s)
{
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ck_assert_int_eq(ops->event_wait(e, 30 * SEC), 0);
    ops->event_destroy(e);
}

static uint64_t now_ns(void)
{
    return cpu_test_host.now_ns();
}

/* ---- a gate a host callback or kernel can block on ---- */
struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open;
    int arrived;
};
#define GATE_INIT                                                 \
    {                                                             \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 \
    }

static void gate_pass(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    g->arrived++;
    pthread_cond_broadcast(&g->c);
    while (!g->open)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    g->open = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static void gate_await_arrivals(struct gate *g, int n)
{
    pthread_mutex_lock(&g->m);
    while (g->arrived < n)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
}

static int cb_gate(void *arg, int status)
{
    (void)status;
    gate_pass(arg);
    return 0;
}

/* ---- ordering ---- */

struct order_log {
    int next;
    int seen[64];
    int statuses[64];
};

struct order_item {
    struct order_log *log;
    int id;
};

static int cb_log(void *arg, int status)
{
    struct order_item *it = arg;
    it->log->statuses[it->log->next] = status;
    it->log->seen[it->log->next++] = it->id;
    return 0;
}

START_TEST(test_in_order)
{
    devq_pl_stream *s = stream_new(0);
    void *buf, *host;
    ck_assert_int_eq(ops->mem_alloc(dev, 4096, &buf, &host), 0);
    struct order_log log = { 0 };
    struct order_item items[32];
    unsigned char snap[32];
    struct gate g = GATE_INIT;
    /* Hold the worker so that every op below is queued before any runs. */
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    for (int i = 0; i < 32; i++) {
        items[i] = (struct order_item){ &log, i };
        ck_assert_int_eq(ops->fill(s, buf, (uint8_t)i, 4096), 0);
        ck_assert_int_eq(ops->copy(s, &snap[i], (char *)buf + 100, 1, DEVQ_COPY_D2H), 0);
        ck_assert_int_eq(ops->host_fn(s, cb_log, &items[i]), 0);
    }
    gate_open(&g);
    stream_sync(s);
    ck_assert_int_eq(log.next, 32);
    for (int i = 0; i < 32; i++) {
        ck_assert_int_eq(log.seen[i], i);
        ck_assert_int_eq(log.statuses[i], 0);
        ck_assert_int_eq(snap[i], i); /* the copy saw the fill just before it */
    }
    ops->mem_free(dev, buf);
    ops->stream_destroy(s);
}
END_TEST

/* ---- events ---- */

START_TEST(test_event_record_query_wait)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->event_query(e), 0); /* never recorded */
    ck_assert_int_eq(ops->event_wait(e, 0), 0);

    struct gate g = GATE_INIT;
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    gate_await_arrivals(&g, 1);
    ck_assert_int_eq(ops->event_query(e), -EAGAIN);
    ck_assert_int_eq(ops->event_wait(e, 0), -ETIMEDOUT);
    uint64_t t0 = now_ns();
    ck_assert_int_eq(ops->event_wait(e, 20000000), -ETIMEDOUT);
    uint64_t waited = now_ns() - t0;
    ck_assert_uint_ge(waited, 20000000);
    ck_assert_uint_lt(waited, 5 * SEC);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "timed out"));

    gate_open(&g);
    ck_assert_int_eq(ops->event_wait(e, 30 * SEC), 0);
    ck_assert_int_eq(ops->event_query(e), 0);

    /* Re-recording on an idle stream captures the new (reached) tail. */
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ck_assert_int_eq(ops->event_wait(e, 30 * SEC), 0);
    ops->event_destroy(e);
    ops->stream_destroy(s);
}
END_TEST

static atomic_int a_done;
static int b_saw_a_done = -1;

static int cb_set_a_done(void *arg, int status)
{
    (void)arg;
    (void)status;
    atomic_store(&a_done, 1);
    return 0;
}

static int cb_check_a_done(void *arg, int status)
{
    (void)arg;
    (void)status;
    b_saw_a_done = atomic_load(&a_done);
    return 0;
}

START_TEST(test_stream_wait_event)
{
    devq_pl_stream *a = stream_new(0), *b = stream_new(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    struct gate g = GATE_INIT;
    atomic_store(&a_done, 0);
    ck_assert_int_eq(ops->host_fn(a, cb_gate, &g), 0);
    ck_assert_int_eq(ops->host_fn(a, cb_set_a_done, NULL), 0);
    ck_assert_int_eq(ops->event_record(e, a), 0);
    ck_assert_int_eq(ops->stream_wait_event(b, e), 0);
    ck_assert_int_eq(ops->host_fn(b, cb_check_a_done, NULL), 0);
    /* Re-recording e later must not change what b waits for. */
    devq_pl_event *eb;
    ck_assert_int_eq(ops->event_create(dev, 0, &eb), 0);
    ck_assert_int_eq(ops->event_record(eb, b), 0);
    ck_assert_int_eq(ops->event_wait(eb, 50000000), -ETIMEDOUT); /* b is held by a */
    gate_open(&g);
    ck_assert_int_eq(ops->event_wait(eb, 30 * SEC), 0);
    ck_assert_int_eq(b_saw_a_done, 1);
    ops->event_destroy(eb);
    ops->event_destroy(e);
    ops->stream_destroy(a);
    ops->stream_destroy(b);
}
END_TEST

/* Two streams alternate through one counter, ordered only by
 * stream_wait_event: any lost wake-up hangs (caught by the timeout), any
 * ordering bug shows as a wrong count. */
struct ping {
    int counter; /* touched only by ops ordered by the waits */
    int errors;
};

struct ping_step {
    struct ping *p;
    int expect;
};

static int cb_ping(void *arg, int status)
{
    struct ping_step *st = arg;
    (void)status;
    if (st->p->counter != st->expect)
        st->p->errors++;
    st->p->counter++;
    return 0;
}

START_TEST(test_cross_stream_ping_pong)
{
    enum { N = 20000 };
    devq_pl_stream *a = stream_new(0), *b = stream_new(0);
    devq_pl_event *ea, *eb;
    ck_assert_int_eq(ops->event_create(dev, 0, &ea), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &eb), 0);
    struct ping p = { 0, 0 };
    struct ping_step *steps = calloc(2 * N, sizeof *steps);
    int failures = 0;
    for (int i = 0; i < N; i++) {
        steps[2 * i] = (struct ping_step){ &p, 2 * i };
        steps[2 * i + 1] = (struct ping_step){ &p, 2 * i + 1 };
        failures += ops->host_fn(a, cb_ping, &steps[2 * i]) != 0;
        failures += ops->event_record(ea, a) != 0;
        failures += ops->stream_wait_event(b, ea) != 0;
        failures += ops->host_fn(b, cb_ping, &steps[2 * i + 1]) != 0;
        failures += ops->event_record(eb, b) != 0;
        failures += ops->stream_wait_event(a, eb) != 0;
    }
    ck_assert_int_eq(failures, 0);
    ck_assert_int_eq(ops->event_wait(eb, 60 * SEC), 0);
    ck_assert_int_eq(p.counter, 2 * N);
    ck_assert_int_eq(p.errors, 0);
    stream_sync(a);
    ops->event_destroy(ea);
    ops->event_destroy(eb);
    ops->stream_destroy(a);
    ops->stream_destroy(b);
    free(steps);
}
END_TEST

START_TEST(test_event_outlives_stream)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &e), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    stream_sync(s);
    ops->stream_destroy(s);
    ck_assert_int_eq(ops->event_query(e), 0);
    ck_assert_int_eq(ops->event_wait(e, 0), 0);
    ops->event_destroy(e);
}
END_TEST

/* ---- host callbacks and the error latch ---- */

int cpu_test_fail_kernel(void *const *args, const devq_cpu_group *g);
int cpu_test_fail_kernel(void *const *args, const devq_cpu_group *g)
{
    atomic_fetch_add((atomic_int *)args[0], 1);
    return g->group_id[0] == 0 ? -EDOM : 0;
}

struct status_log {
    int n;
    int status[8];
    int ret[8]; /* what the callback returns */
};

static int cb_status(void *arg, int status)
{
    struct status_log *l = arg;
    int i = l->n++;
    l->status[i] = status;
    return l->ret[i];
}

START_TEST(test_host_fn_status_after_failed_kernel)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_fail_kernel", &k), 0);
    unsigned char *buf, *src;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, 256, (void **)&buf, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, 256, (void **)&src, &h), 0);
    memset(buf, 0x11, 256);
    memset(src, 0x22, 256);
    atomic_int groups_run = 0;
    struct devq_pl_arg arg = { .is_buffer = 1, .device_ptr = &groups_run };
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    devq_pl_event *t0, *t1;
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &t0), 0);
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &t1), 0);
    struct status_log log = { 0 };

    /* batch 1: failing kernel, then ops that must be skipped */
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, 1), 0);
    ck_assert_int_eq(ops->fill(s, buf, 0xAA, 128), 0);
    ck_assert_int_eq(ops->copy(s, buf + 128, src, 128, DEVQ_COPY_D2D), 0);
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, 1), 0);
    ck_assert_int_eq(ops->event_record(t0, s), 0); /* records still happen */
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    /* batch 2: runs normally */
    ck_assert_int_eq(ops->event_record(t1, s), 0);
    ck_assert_int_eq(ops->fill(s, buf, 0xBB, 1), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    stream_sync(s);

    ck_assert_int_eq(log.n, 2);
    ck_assert_int_eq(log.status[0], -EDOM);
    ck_assert_int_eq(log.status[1], 0);
    ck_assert_int_eq(atomic_load(&groups_run), 1); /* the second launch was skipped */
    ck_assert_int_eq(buf[0], 0xBB);                /* batch 2 fill ran */
    ck_assert_int_eq(buf[1], 0x11);                /* batch 1 fill skipped */
    ck_assert_int_eq(buf[128], 0x11);              /* batch 1 copy skipped */
    uint64_t ns;
    ck_assert_int_eq(ops->event_elapsed(t0, t1, &ns), 0);
    ops->event_destroy(t0);
    ops->event_destroy(t1);
    ops->kernel_destroy(k);
    ops->mem_free(dev, buf);
    ops->mem_free(dev, src);
    ops->stream_destroy(s);
}
END_TEST

START_TEST(test_host_fn_error_latches)
{
    devq_pl_stream *s = stream_new(0);
    unsigned char *buf;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, 64, (void **)&buf, &h), 0);
    buf[0] = 1;
    struct status_log log = { .ret = { -EPIPE, 0, 0 } };
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0); /* fails */
    ck_assert_int_eq(ops->fill(s, buf, 2, 1), 0);          /* skipped */
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0); /* gets -EPIPE */
    ck_assert_int_eq(ops->fill(s, buf + 1, 3, 1), 0);      /* runs */
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0); /* gets 0 */
    stream_sync(s);
    ck_assert_int_eq(log.n, 3);
    ck_assert_int_eq(log.status[0], 0);
    ck_assert_int_eq(log.status[1], -EPIPE);
    ck_assert_int_eq(log.status[2], 0);
    ck_assert_int_eq(buf[0], 1);
    ck_assert_int_eq(buf[1], 3);
    ops->mem_free(dev, buf);
    ops->stream_destroy(s);
}
END_TEST

/* stream_idle: 1 only when every op queued ran and no error waits in the
 * latch for the next host callback (lib completes signal-only batches
 * at submit on it). */
START_TEST(test_stream_idle)
{
    ck_assert_ptr_nonnull(ops->stream_idle);
    devq_pl_stream *s = stream_new(0);
    ck_assert_int_eq(ops->stream_idle(s), 1); /* nothing queued yet */
    struct gate g = GATE_INIT;
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    gate_await_arrivals(&g, 1);
    ck_assert_int_eq(ops->stream_idle(s), 0); /* running */
    gate_open(&g);
    stream_sync(s);
    ck_assert_int_eq(ops->stream_idle(s), 1);
    struct status_log log = { .ret = { -EPIPE, 0 } };
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0); /* latches -EPIPE */
    stream_sync(s);
    ck_assert_int_eq(ops->stream_idle(s), 0);              /* ran, but an error is latched */
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0); /* takes it */
    stream_sync(s);
    ck_assert_int_eq(ops->stream_idle(s), 1);
    ck_assert_int_eq(log.status[1], -EPIPE);
    /* A failed kernel latches too. */
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_fail_kernel", &k), 0);
    atomic_int groups_run = 0;
    struct devq_pl_arg arg = { .is_buffer = 1, .device_ptr = &groups_run };
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, 1), 0);
    stream_sync(s);
    ck_assert_int_eq(ops->stream_idle(s), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    stream_sync(s);
    ck_assert_int_eq(ops->stream_idle(s), 1);
    ck_assert_int_eq(log.status[2], -EDOM);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
}
END_TEST

/* ---- kernels ---- */

int cpu_test_record_groups(void *const *args, const devq_cpu_group *g);
int cpu_test_record_groups(void *const *args, const devq_cpu_group *g)
{
    devq_cpu_group *out = args[0];
    uint32_t scale = *(const uint32_t *)args[1];
    uint32_t *data = args[2];
    uint32_t id = g->group_id[0] + g->num_groups[0] * (g->group_id[1] + g->num_groups[1] * g->group_id[2]);
    out[id] = *g;
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t x = g->group_id[0] * g->local_size[0] + i;
        if (x < g->global_size[0] && g->group_id[1] == 0 && g->group_id[2] == 0)
            data[x] = x * scale;
    }
    return 0;
}

START_TEST(test_kernel_from_process)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_record_groups", &k), 0);
    devq_cpu_group *groups;
    uint32_t *data;
    void *h;
    /* 1000 x 3 x 1 items in groups of 64 x 2: 16 x 2 x 1 groups */
    ck_assert_int_eq(ops->mem_alloc(dev, 32 * sizeof *groups, (void **)&groups, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, 1000 * sizeof *data, (void **)&data, &h), 0);
    memset(groups, 0xff, 32 * sizeof *groups);
    uint32_t scale = 3;
    struct devq_pl_arg args[3] = {
        { .is_buffer = 1, .device_ptr = groups },
        { .is_buffer = 0, .value = &scale, .size = sizeof scale },
        { .is_buffer = 1, .device_ptr = data },
    };
    devq_launch l = { { 1000, 3, 1 }, { 64, 2, 0 }, 0 };
    struct gate g = GATE_INIT;
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    ck_assert_int_eq(ops->launch(s, k, &l, args, 3), 0);
    scale = 99; /* value bytes were copied at launch */
    gate_open(&g);
    stream_sync(s);
    for (uint32_t i = 0; i < 1000; i++)
        ck_assert_uint_eq(data[i], i * 3);
    for (uint32_t y = 0; y < 2; y++)
        for (uint32_t x = 0; x < 16; x++) {
            devq_cpu_group *c = &groups[y * 16 + x];
            ck_assert_uint_eq(c->group_id[0], x);
            ck_assert_uint_eq(c->group_id[1], y);
            ck_assert_uint_eq(c->group_id[2], 0);
            ck_assert_uint_eq(c->num_groups[0], 16);
            ck_assert_uint_eq(c->num_groups[1], 2);
            ck_assert_uint_eq(c->num_groups[2], 1);
            ck_assert_uint_eq(c->local_size[0], 64);
            ck_assert_uint_eq(c->local_size[2], 1); /* local 0 means 1 */
            ck_assert_uint_eq(c->global_size[0], 1000);
            ck_assert_uint_eq(c->global_size[1], 3);
        }
    /* zero global size is refused at launch, with a message */
    devq_launch bad = { { 0, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(ops->launch(s, k, &bad, args, 3), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "zero"));
    ops->kernel_destroy(k);
    ops->mem_free(dev, groups);
    ops->mem_free(dev, data);
    ops->stream_destroy(s);
}
END_TEST

/* out[index] = a checksum of the value argument's bytes. */
int cpu_test_value_sum(void *const *args, const devq_cpu_group *g);
int cpu_test_value_sum(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    uint64_t *out = args[0];
    uint32_t index = *(const uint32_t *)args[1], n = *(const uint32_t *)args[2];
    const uint8_t *p = args[3];
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    out[index] = h;
    return 0;
}

/* Launch records are recycled per stream (small ones) or malloc'd (large
 * ones): thousands of launches of both kinds, queued behind a gate and
 * then streaming, each see exactly their own value bytes. */
START_TEST(test_launch_records_recycled)
{
    enum { N = 4000 };
    static const uint32_t sizes[] = { 8, 100, 200, 300, 1000 };
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_value_sum", &k), 0);
    uint64_t *out, want[N];
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, N * sizeof *out, (void **)&out, &h), 0);
    uint8_t payload[1000];
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    for (int round = 0; round < 2; round++) {
        struct gate g = GATE_INIT;
        if (round == 0) /* everything in flight at once */
            ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
        for (uint32_t i = 0; i < N; i++) {
            uint32_t n = sizes[(i + (uint32_t)round) % 5];
            uint64_t hv = 1469598103934665603ull;
            for (uint32_t b = 0; b < n; b++) {
                payload[b] = (uint8_t)(i * 31 + b * 7 + (uint32_t)round);
                hv = (hv ^ payload[b]) * 1099511628211ull;
            }
            want[i] = hv;
            struct devq_pl_arg args[4] = {
                { .is_buffer = 1, .device_ptr = out },
                { .value = &i, .size = sizeof i },
                { .value = &n, .size = sizeof n },
                { .value = payload, .size = n },
            };
            ck_assert_int_eq(ops->launch(s, k, &l, args, 4), 0);
        }
        if (round == 0)
            gate_open(&g);
        stream_sync(s);
        for (uint32_t i = 0; i < N; i++)
            ck_assert_msg(out[i] == want[i], "round %d launch %u: value bytes differ", round, i);
    }
    ops->kernel_destroy(k);
    ops->mem_free(dev, out);
    ops->stream_destroy(s);
}
END_TEST

static void module_path(char *out, size_t cap)
{
    const char *top = getenv("top_builddir");
    snprintf(out, cap, "%s/tests/helpers/.libs/cpu_kernels.so", top ? top : ".");
}

START_TEST(test_kernel_from_shared_object)
{
    char path[4096];
    module_path(path, sizeof path);
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_msg(ops->kernel_load(dev, path, 0, "cpu_test_saxpy", &k) == 0, "%s", cpu_test_errmsg());
    enum { N = 10000 };
    float *x, *y;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, N * sizeof(float), (void **)&x, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, N * sizeof(float), (void **)&y, &h), 0);
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    float a = 2.0f;
    uint32_t n = N;
    struct devq_pl_arg args[4] = {
        { .is_buffer = 1, .device_ptr = x },
        { .is_buffer = 1, .device_ptr = y },
        { .value = &a, .size = sizeof a },
        { .value = &n, .size = sizeof n },
    };
    devq_launch l = { { N, 1, 1 }, { 256, 1, 1 }, 0 };
    ck_assert_int_eq(ops->launch(s, k, &l, args, 4), 0);
    stream_sync(s);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(y[i], 2.0f * (float)i + 1.0f);
    ops->kernel_destroy(k);
    ops->mem_free(dev, x);
    ops->mem_free(dev, y);
    ops->stream_destroy(s);
}
END_TEST

/* A stream holds one reference to the kernel it launched last instead
 * of one per queued launch (kernel.c): two kernels, one of them from a
 * shared object that unloads with its last reference, alternate behind a
 * gate and are destroyed before any of their launches runs; every launch
 * still runs its own kernel, and the stream lets go of the last one when
 * it is destroyed (LeakSanitizer would report the kernel otherwise). */
START_TEST(test_kernels_switch_and_outlive_destroy)
{
    enum { N = 300 };
    char path[4096];
    module_path(path, sizeof path);
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *saxpy, *sum;
    ck_assert_msg(ops->kernel_load(dev, path, 0, "cpu_test_saxpy", &saxpy) == 0, "%s", cpu_test_errmsg());
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_value_sum", &sum), 0);
    float *x, *y;
    uint64_t *out;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof(float), (void **)&x, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof(float), (void **)&y, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, N * sizeof *out, (void **)&out, &h), 0);
    x[0] = 1.0f;
    y[0] = 0.0f;
    memset(out, 0, N * sizeof *out);
    float a = 1.0f;
    uint32_t one = 1, zero = 0;
    uint8_t byte = 0;
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    struct devq_pl_arg sx[4] = {
        { .is_buffer = 1, .device_ptr = x },
        { .is_buffer = 1, .device_ptr = y },
        { .value = &a, .size = sizeof a },
        { .value = &one, .size = sizeof one },
    };
    struct gate g = GATE_INIT;
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    uint32_t saxpys = 0;
    for (uint32_t i = 0; i < N; i++) {
        /* Runs of 1, 2 and 3 launches of one kernel, then the other. */
        if ((i / (1 + i % 3)) % 2 == 0) {
            ck_assert_int_eq(ops->launch(s, saxpy, &l, sx, 4), 0);
            saxpys++;
            continue;
        }
        struct devq_pl_arg vs[4] = {
            { .is_buffer = 1, .device_ptr = out },
            { .value = &i, .size = sizeof i },
            { .value = &zero, .size = sizeof zero },
            { .value = &byte, .size = sizeof byte },
        };
        ck_assert_int_eq(ops->launch(s, sum, &l, vs, 4), 0);
    }
    ops->kernel_destroy(saxpy); /* queued launches keep both loaded */
    ops->kernel_destroy(sum);
    gate_open(&g);
    stream_sync(s);
    ck_assert_float_eq(y[0], (float)saxpys);
    uint32_t sums = 0;
    for (uint32_t i = 0; i < N; i++)
        sums += out[i] == 1469598103934665603ull;
    ck_assert_uint_eq(sums, N - saxpys);
    ck_assert_uint_gt(saxpys, 0);
    ck_assert_uint_gt(sums, 0);
    ops->mem_free(dev, x);
    ops->mem_free(dev, y);
    ops->mem_free(dev, out);
    ops->stream_destroy(s); /* drops the last kernel it held */
}
END_TEST

/* DEVQ_CPU_KERNEL_SIGNATURE (devq_cpu.h): found next to the entry point
 * and handed to lib by kernel_iface; undeclared kernels have none
 * (-ENOTSUP: unchecked); a signature of another function is refused. */
START_TEST(test_kernel_signature)
{
    char path[4096];
    module_path(path, sizeof path);
    devq_pl_kernel *k = NULL;
    struct devq_pl_kernel_iface iface;
    ck_assert_msg(ops->kernel_load(dev, path, 0, "cpu_test_saxpy", &k) == 0, "%s", cpu_test_errmsg());
    ck_assert_int_eq(ops->kernel_iface(k, &iface), 0);
    ck_assert_uint_eq(iface.flags, DEVQ_PL_IFACE_POSITIONAL);
    ck_assert_uint_eq(iface.nparams, 4);
    static const uint32_t kind[] = { DEVQ_PL_PARAM_BUFFER, DEVQ_PL_PARAM_BUFFER, DEVQ_PL_PARAM_VALUE,
                                     DEVQ_PL_PARAM_VALUE },
                          size[] = { 0, 0, 4, 4 };
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(iface.params[i].kind, kind[i]);
        ck_assert_uint_eq(iface.params[i].size, size[i]);
        ck_assert_uint_eq(iface.params[i].offset, UINT32_MAX);
    }
    ck_assert_uint_eq(iface.value_block, 0);
    ops->kernel_destroy(k);

    ck_assert_msg(ops->kernel_load(dev, path, 0, "cpu_test_noargs", &k) == 0, "%s", cpu_test_errmsg());
    ck_assert_int_eq(ops->kernel_iface(k, &iface), 0);
    ck_assert_uint_eq(iface.nparams, 0);
    ops->kernel_destroy(k);

    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_value_sum", &k), 0);
    ck_assert_int_eq(ops->kernel_iface(k, &iface), -ENOTSUP);
    ops->kernel_destroy(k);

    k = NULL;
    ck_assert_int_eq(ops->kernel_load(dev, path, 0, "cpu_test_misdeclared", &k), -EINVAL);
    ck_assert_msg(strstr(cpu_test_errmsg(), "describes another function"), "%s", cpu_test_errmsg());
    ck_assert_ptr_null(k);
}
END_TEST

START_TEST(test_kernel_missing)
{
    devq_pl_kernel *k = NULL;
    ck_assert_int_eq(ops->kernel_load(dev, "/nonexistent/kernels.so", 0, "f", &k), -ENOENT);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "/nonexistent/kernels.so"));
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_no_such_symbol", &k), -ENOENT);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "cpu_test_no_such_symbol"));
    char path[4096];
    module_path(path, sizeof path);
    ck_assert_int_eq(ops->kernel_load(dev, path, 0, "cpu_test_missing", &k), -ENOENT);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "cpu_test_missing"));
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "cpu_kernels.so"));
    /* A bare file name is a path in the current folder, not a library
     * name searched along the loader's path. */
    ck_assert_int_eq(ops->kernel_load(dev, "libc.so.6", 0, "strlen", &k), -ENOENT);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "libc.so.6"));
    static const char binary[4] = { 0x7f, 'E', 'L', 'F' };
    ck_assert_int_eq(ops->kernel_load(dev, binary, sizeof binary, "f", &k), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "path"));
    ck_assert_ptr_null(k);
}
END_TEST

/* ---- the pool ---- */

int cpu_test_thread_ids(void *const *args, const devq_cpu_group *g);
int cpu_test_thread_ids(void *const *args, const devq_cpu_group *g)
{
    pthread_t *ids = args[0];
    ids[g->group_id[0]] = pthread_self();
    /* ~200 us of work so that pool threads get their share */
    uint64_t end = cpu_test_host.now_ns() + 200000;
    while (cpu_test_host.now_ns() < end)
        ;
    return 0;
}

START_TEST(test_big_launch_uses_threads)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_thread_ids", &k), 0);
    enum { G = 64 };
    pthread_t *ids;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, G * sizeof *ids, (void **)&ids, &h), 0);
    memset(ids, 0, G * sizeof *ids);
    struct devq_pl_arg arg = { .is_buffer = 1, .device_ptr = ids };
    devq_launch l = { { G, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, 1), 0);
    stream_sync(s);
    int distinct = 0;
    for (int i = 0; i < G; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            if (pthread_equal(ids[i], ids[j]))
                seen = 1;
        distinct += !seen;
    }
    ck_assert_int_ge(distinct, 2);
    ops->kernel_destroy(k);
    ops->mem_free(dev, ids);
    ops->stream_destroy(s);
}
END_TEST

int cpu_test_fail_every_group(void *const *args, const devq_cpu_group *g);
int cpu_test_fail_every_group(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    atomic_fetch_add((atomic_int *)args[0], 1);
    return 7; /* positive: still a failure (-EIO) */
}

START_TEST(test_failed_launch_stops_groups)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_fail_every_group", &k), 0);
    atomic_int groups_run = 0;
    struct devq_pl_arg arg = { .is_buffer = 1, .device_ptr = &groups_run };
    devq_launch l = { { 100000, 1, 1 }, { 1, 1, 1 }, 0 };
    struct status_log log = { 0 };
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, 1), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    stream_sync(s);
    ck_assert_int_eq(log.status[0], -EIO);
    /* Each thread (pool + the stream worker) may have taken one group
     * before the first failure stopped the launch, none after. */
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("DEVQ_CPU_THREADS");
    if (env && atol(env) > threads)
        threads = atol(env);
    threads += 1;
    ck_assert_int_ge(atomic_load(&groups_run), 1);
    ck_assert_int_le(atomic_load(&groups_run), threads);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
}
END_TEST

/* out[group] += 1 for every group of the launch */
int cpu_test_bump(void *const *args, const devq_cpu_group *g);
int cpu_test_bump(void *const *args, const devq_cpu_group *g)
{
    ((uint32_t *)args[0])[g->group_id[0]] += 1;
    return 0;
}

struct driver {
    devq_pl_stream *s;
    devq_pl_kernel *k;
    uint32_t *out;
    int failures;
};

enum { DRIVER_GROUPS = 37, DRIVER_LAUNCHES = 300 };

static void *drive(void *arg)
{
    struct driver *d = arg;
    struct devq_pl_arg a = { .is_buffer = 1, .device_ptr = d->out };
    devq_launch l = { { DRIVER_GROUPS, 1, 1 }, { 1, 1, 1 }, 0 };
    for (int i = 0; i < DRIVER_LAUNCHES; i++)
        d->failures += ops->launch(d->s, d->k, &l, &a, 1) != 0;
    return NULL;
}

START_TEST(test_concurrent_streams_share_the_pool)
{
    enum { STREAMS = 4 };
    struct driver d[STREAMS];
    pthread_t t[STREAMS];
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load(dev, NULL, 0, "cpu_test_bump", &k), 0);
    for (int i = 0; i < STREAMS; i++) {
        void *h;
        d[i] = (struct driver){ stream_new(i * 3 - 4), k, NULL, 0 };
        ck_assert_int_eq(ops->mem_alloc(dev, DRIVER_GROUPS * sizeof(uint32_t), (void **)&d[i].out, &h), 0);
        memset(d[i].out, 0, DRIVER_GROUPS * sizeof(uint32_t));
    }
    for (int i = 0; i < STREAMS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, drive, &d[i]), 0);
    for (int i = 0; i < STREAMS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < STREAMS; i++) {
        stream_sync(d[i].s);
        ck_assert_int_eq(d[i].failures, 0);
        for (int g = 0; g < DRIVER_GROUPS; g++)
            ck_assert_uint_eq(d[i].out[g], DRIVER_LAUNCHES); /* every group ran once per launch */
        ops->mem_free(dev, d[i].out);
        ops->stream_destroy(d[i].s);
    }
    ops->kernel_destroy(k);
}
END_TEST

/* Priority test.  Tags: 1 = low stream, 2 = high stream. */
struct prio_log {
    pthread_mutex_t m;
    int n;
    int tag[64], group[64];
    pthread_t thread[64];
    struct gate low_gate, high_gate;
};

int cpu_test_prio(void *const *args, const devq_cpu_group *g);
int cpu_test_prio(void *const *args, const devq_cpu_group *g)
{
    struct prio_log *log = args[0];
    int tag = *(const int *)args[1];
    uint32_t id = g->group_id[0];
    if (tag == 1 && id < 2)
        gate_pass(&log->low_gate);
    else if (tag == 2 && id == 0)
        gate_pass(&log->high_gate);
    else if (tag == 1) {
        struct timespec ts = { 0, 1000000 }; /* keep low's own worker busy */
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&log->m);
    log->tag[log->n] = tag;
    log->group[log->n] = (int)id;
    log->thread[log->n++] = pthread_self();
    pthread_mutex_unlock(&log->m);
    return 0;
}

/* Runs in a child with DEVQ_CPU_THREADS=1; returns a failure line or NULL. */
static const char *priority_scenario(void)
{
    static struct prio_log log = { .m = PTHREAD_MUTEX_INITIALIZER,
                                   .low_gate = GATE_INIT,
                                   .high_gate = GATE_INIT };
    devq_queue_desc dl = { DEVQ_QUEUE_COMPUTE, 0 }, dh = { DEVQ_QUEUE_COMPUTE, 5 };
    devq_pl_stream *low, *high;
    devq_pl_kernel *k;
    if (ops->stream_create(dev, &dl, &low) || ops->stream_create(dev, &dh, &high))
        return "stream_create";
    if (ops->kernel_load(dev, NULL, 0, "cpu_test_prio", &k))
        return "kernel_load";
    int tag_low = 1, tag_high = 2;
    struct devq_pl_arg al[2] = { { .is_buffer = 1, .device_ptr = &log },
                                 { .value = &tag_low, .size = sizeof(int) } };
    struct devq_pl_arg ah[2] = { { .is_buffer = 1, .device_ptr = &log },
                                 { .value = &tag_high, .size = sizeof(int) } };
    devq_launch l16 = { { 16, 1, 1 }, { 1, 1, 1 }, 0 }, l8 = { { 8, 1, 1 }, { 1, 1, 1 }, 0 };
    /* low's worker and the single pool thread block in low's groups 0, 1 */
    if (ops->launch(low, k, &l16, al, 2))
        return "launch low";
    gate_await_arrivals(&log.low_gate, 2);
    /* high's worker blocks in high's group 0; high 1..7 are queued */
    if (ops->launch(high, k, &l8, ah, 2))
        return "launch high";
    gate_await_arrivals(&log.high_gate, 1);
    /* Free the pool thread: it must take high's queued groups before
     * more of low's, although low's job was queued first. */
    gate_open(&log.low_gate);
    devq_pl_event *e;
    ops->event_create(dev, 0, &e);
    ops->event_record(e, low);
    if (ops->event_wait(e, 30 * SEC))
        return "low did not finish";
    gate_open(&log.high_gate);
    ops->event_record(e, high);
    if (ops->event_wait(e, 30 * SEC))
        return "high did not finish";
    ops->event_destroy(e);
    /* The pool thread ran low's group 0 or 1; find it. */
    pthread_t pool_thread = 0;
    int found = 0;
    for (int i = 0; i < log.n; i++)
        if (log.tag[i] == 2 && log.group[i] != 0) {
            pool_thread = log.thread[i];
            found = 1;
            break;
        }
    if (!found)
        return "no high group ran on the pool thread";
    int high_by_pool = 0, low_by_pool_before_high_done = 0;
    for (int i = 0; i < log.n; i++) {
        if (!pthread_equal(log.thread[i], pool_thread))
            continue;
        if (log.tag[i] == 2)
            high_by_pool++;
        else if (log.group[i] >= 2 && high_by_pool < 7)
            low_by_pool_before_high_done++;
    }
    if (high_by_pool != 7)
        return "the pool thread did not run all 7 queued high groups";
    if (low_by_pool_before_high_done)
        return "the pool thread took low's groups before high's";
    ops->kernel_destroy(k);
    ops->stream_destroy(low);
    ops->stream_destroy(high);
    return NULL;
}

START_TEST(test_priorities)
{
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(60); /* never outlive a parent that timed out */
        setenv("DEVQ_CPU_THREADS", "1", 1);
        const char *why = NULL;
        ops = cpu_test_ops();
        devq_pl_device *d2;
        if (!ops || ops->device_open(0, &d2))
            why = "device_open";
        else {
            dev = d2;
            why = priority_scenario();
        }
        if (why)
            (void)!write(pipefd[1], why, strlen(why));
        _exit(why ? 1 : 0);
    }
    close(pipefd[1]);
    char why[256] = "";
    ssize_t n = read(pipefd[0], why, sizeof why - 1);
    why[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "priority child: %s", why);
}
END_TEST

START_TEST(test_threads_env_malformed)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(60);
        /* A fresh process reads DEVQ_CPU_THREADS once, at the first open. */
        setenv("DEVQ_CPU_THREADS", "lots", 1);
        devq_pl_device *d2;
        int rc = ops->device_open(0, &d2);
        int named = strstr(cpu_test_errmsg(), "DEVQ_CPU_THREADS") && strstr(cpu_test_errmsg(), "lots");
        _exit(rc == -EINVAL && named ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* ---- timing ---- */

static int cb_sleep_20ms(void *arg, int status)
{
    (void)arg;
    (void)status;
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
    return 0;
}

START_TEST(test_timing_events)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_event *t0, *t1, *plain;
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &t0), 0);
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &t1), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &plain), 0);
    uint64_t ns = 0;
    ck_assert_int_eq(ops->event_elapsed(t0, t1, &ns), -EINVAL); /* never recorded */
    struct gate g = GATE_INIT;
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &g), 0);
    ck_assert_int_eq(ops->event_record(t0, s), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_sleep_20ms, NULL), 0);
    ck_assert_int_eq(ops->event_record(t1, s), 0);
    ck_assert_int_eq(ops->event_record(plain, s), 0);
    ck_assert_int_eq(ops->event_elapsed(t0, t1, &ns), -EAGAIN); /* not reached */
    gate_open(&g);
    ck_assert_int_eq(ops->event_wait(t1, 30 * SEC), 0);
    ck_assert_int_eq(ops->event_elapsed(t0, t1, &ns), 0);
    ck_assert_uint_ge(ns, 19000000);
    ck_assert_uint_lt(ns, 5 * SEC);
    ck_assert_int_eq(ops->event_elapsed(t0, plain, &ns), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "DEVQ_EVENT_TIMING"));
    ops->event_destroy(t0);
    ops->event_destroy(t1);
    ops->event_destroy(plain);
    ops->stream_destroy(s);
}
END_TEST

/* ---- throughput ---- */

static int cb_count(void *arg, int status)
{
    (void)status;
    (*(uint64_t *)arg)++; /* runs on the worker only */
    return 0;
}

/* The worker spins for a while when its ring is empty, then sleeps; a
 * producer wakes it only when it sees it asleep (stream.c: the two
 * halves of that handshake are fenced by membarrier on the worker's side
 * where the kernel has it).  Ops published at every point of that path,
 * just before, during and after the spin ends, must all run: a lost
 * wake-up leaves the op unrun and the wait times out. */
START_TEST(test_wakes_at_every_idle_phase)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    enum { N = 3000 };
    uint64_t count = 0;
    uint32_t seed = 12345;
    int late = 0;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t until = now_ns() + (seed >> 8) % 150000; /* 0-150 us: the spin is 50 */
        while (now_ns() < until)
            ;
        ck_assert_int_eq(ops->host_fn(s, cb_count, &count), 0);
        ck_assert_int_eq(ops->event_record(e, s), 0);
        late += ops->event_wait(e, 5 * SEC) != 0;
    }
    ck_assert_int_eq(late, 0);
    ck_assert_uint_eq(count, N);
    ops->event_destroy(e);
    ops->stream_destroy(s);
}
END_TEST

/* A host callback that keeps the worker busy for a pseudo-random 0-60
 * us (the arg is the delay), so a waiter's 20 us spin ends at every point
 * before and after the worker publishes `completed`. */
static int cb_busy(void *arg, int status)
{
    (void)status;
    uint64_t until = now_ns() + *(const uint64_t *)arg;
    while (now_ns() < until)
        ;
    return 0;
}

/* Waiters of a stream's sequence against the worker's publication of
 * `completed` (stream.c: cpu_stream_complete and cpu_stream_wait_seq, a
 * Dekker handshake on `completed` and `wake_at`): a host thread sleeping
 * in event_wait, and a second stream's worker sleeping in a cross-stream
 * wait, must each be woken whenever they post `wake_at`, before, during
 * or after the worker's store.  A lost wake-up leaves the wait to its
 * 5 s timeout (late).  Returns the number of late waits. */
static int completion_wakes(int rounds)
{
    devq_pl_stream *a = stream_new(0), *b = stream_new(0);
    devq_pl_event *ea, *eb;
    ck_assert_int_eq(ops->event_create(dev, 0, &ea), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &eb), 0);
    uint32_t seed = 777;
    uint64_t delay[2];
    int late = 0;
    for (int i = 0; i < rounds && !late; i++) { /* the first late wait ends it */
        uint64_t *d = &delay[i & 1];            /* read by the worker before the wait returns */
        seed = seed * 1103515245u + 12345u;
        *d = (seed >> 8) % 60000;
        late += ops->host_fn(a, cb_busy, d) != 0;
        late += ops->event_record(ea, a) != 0;
        if (i & 1) { /* b's worker waits for a, the host for b */
            late += ops->stream_wait_event(b, ea) != 0;
            late += ops->event_record(eb, b) != 0;
            late += ops->event_wait(eb, 5 * SEC) != 0;
        } else {
            late += ops->event_wait(ea, 5 * SEC) != 0;
        }
    }
    ops->event_destroy(ea);
    ops->event_destroy(eb);
    ops->stream_destroy(a);
    ops->stream_destroy(b);
    return late;
}

/* Runs completion_wakes in a child, so that a lost wake-up of the
 * cross-stream waiter (which waits without a deadline, like a device
 * stream) fails the test through the alarm instead of hanging it, and
 * so that switching membarrier off does not outlive the test. */
static void completion_wakes_in_child(int rounds, int without_membarrier)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(30); /* before Check's own timeout, so the message says why */
        if (without_membarrier) {
            /* The first stream decides cpu_asym_fence once; switch it
             * off after that and before the streams under test start. */
            ops->stream_destroy(stream_new(0));
            cpu_asym_fence = 0;
        }
        _exit(completion_wakes(rounds) == 0 ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(
        WIFEXITED(st) && WEXITSTATUS(st) == 0, "a waiter was not woken (child %s %d): a lost wake-up",
        WIFEXITED(st) ? "exited" : "killed by signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

START_TEST(test_completion_wakes_waiters)
{
    completion_wakes_in_child(2000, 0);
}
END_TEST

/* The same without membarrier (an old kernel, a sandbox refusing it):
 * every handshake of the stream falls back to sequentially consistent
 * accesses on both sides, and must still wake every waiter (the worker
 * too, which sleeps between rounds). */
START_TEST(test_completion_wakes_waiters_without_membarrier)
{
    completion_wakes_in_child(1000, 1);
}
END_TEST

/* The worker waits on the slot it runs next (stream.c); at the end of a
 * chunk that is the next chunk's link, which the producer stores only
 * when it queues the op after the last one.  A ring that ends exactly at
 * a chunk's end, then gets its next op while the worker is still running,
 * spinning or asleep there, must run it, and the recycled chunk it then
 * moves to must not say ready for ops never published (its slots held
 * ops of an earlier round).  cpu.h's chunk is 256 ops; several sizes
 * around it are tried so the test does not depend on the exact number. */
START_TEST(test_chunk_ends_at_every_idle_phase)
{
    static const uint64_t pause_ns[] = { 0, 20000, 300000 }; /* running, spinning, asleep */
    static const int sizes[] = { 255, 256, 257, 512 };
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (size_t p = 0; p < sizeof pause_ns / sizeof pause_ns[0]; p++) {
            devq_pl_stream *s = stream_new(0);
            uint64_t count = 0;
            for (int round = 0; round < 4; round++) {
                int failures = 0;
                for (int i = 0; i < sizes[z]; i++)
                    failures += ops->host_fn(s, cb_count, &count) != 0;
                ck_assert_int_eq(failures, 0);
                uint64_t until = now_ns() + pause_ns[p];
                while (now_ns() < until)
                    ;
                ck_assert_int_eq(ops->host_fn(s, cb_count, &count), 0);
                ck_assert_int_eq(ops->event_record(e, s), 0);
                ck_assert_msg(ops->event_wait(e, 5 * SEC) == 0, "%d ops, pause %llu ns, round %d: not run",
                              sizes[z] + 1, (unsigned long long)pause_ns[p], round);
                /* exactly what was queued: no stale slot ran */
                ck_assert_uint_eq(count, (uint64_t)(round + 1) * (uint64_t)(sizes[z] + 1));
            }
            ops->stream_destroy(s);
        }
    ops->event_destroy(e);
}
END_TEST

/* A tail published right after an op completes both (stream.c): an
 * event recorded between them is reached once the tail ran, and one
 * recorded after the tail too; the tail's function ran once, after the
 * op. */
struct tail_probe {
    const uint8_t *mem;
    uint8_t seen;
    int calls;
    uint64_t value;
};

static void tail_fn(void *arg, uint64_t value)
{
    struct tail_probe *t = arg;
    t->seen = t->mem[0]; /* the fill before it ran */
    t->calls++;
    t->value = value;
}

START_TEST(test_tail_completes_the_op_before_it)
{
    devq_pl_stream *s = stream_new(0);
    devq_pl_event *mid, *end;
    void *buf, *host;
    ck_assert_int_eq(ops->mem_alloc(dev, 64, &buf, &host), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &mid), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &end), 0);
    for (int i = 1; i <= 300; i++) { /* across a chunk's end, too */
        struct tail_probe t = { .mem = host };
        ck_assert_int_eq(ops->fill(s, buf, (uint8_t)i, 4), 0);
        ck_assert_int_eq(ops->event_record(mid, s), 0);
        ck_assert_int_eq(ops->signal_tail(s, tail_fn, &t, (uint64_t)i), 0);
        ck_assert_int_eq(ops->event_record(end, s), 0);
        ck_assert_int_eq(ops->event_wait(mid, 5 * SEC), 0);
        ck_assert_int_eq(ops->event_wait(end, 5 * SEC), 0);
        ck_assert_int_eq(t.calls, 1);
        ck_assert_uint_eq(t.seen, (uint8_t)i);
        ck_assert_uint_eq(t.value, (uint64_t)i);
        ck_assert_int_eq(ops->stream_idle(s), 1);
    }
    ops->event_destroy(mid);
    ops->event_destroy(end);
    ops->mem_free(dev, buf);
    ops->stream_destroy(s);
}
END_TEST

START_TEST(test_million_host_fns)
{
    devq_pl_stream *s = stream_new(0);
    uint64_t count = 0;
    enum { N = 1000000 };
    uint64_t t0 = now_ns();
    int failures = 0; /* one assertion: Check's are too slow for a loop */
    for (int i = 0; i < N; i++)
        failures += ops->host_fn(s, cb_count, &count) != 0;
    stream_sync(s);
    uint64_t dt = now_ns() - t0;
    ck_assert_int_eq(failures, 0);
    ck_assert_uint_eq(count, N);
    printf("cpu: %d host callbacks through one stream in %.1f ms: %.2f M/s\n", N, (double)dt / 1e6,
           (double)N * 1e3 / (double)dt);
    ops->stream_destroy(s);
}
END_TEST

/* ---- memory ---- */

START_TEST(test_memory)
{
    void *p, *h;
    ck_assert_int_eq(ops->mem_alloc(dev, 100, &p, &h), 0);
    ck_assert_ptr_eq(p, h);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ops->mem_free(dev, p);
    ck_assert_int_eq(ops->mem_alloc(dev, 1 << 20, &p, &h), 0);
    ck_assert_uint_eq((uintptr_t)p % 4096, 0);
    ops->mem_free(dev, p);
    ck_assert_int_eq(ops->mem_alloc(dev, (8u << 20) + 5, &p, &h), 0);
    ck_assert_uint_eq((uintptr_t)p % (2u << 20), 0);
    memset(p, 3, (8u << 20) + 5); /* all of it is mapped */
    ops->mem_free(dev, p);
    ck_assert_int_eq(ops->mem_alloc(dev, 0, &p, &h), 0);
    ops->mem_free(dev, p);
    ck_assert_int_eq(ops->mem_alloc(dev, SIZE_MAX - 10, &p, &h), -ENOMEM);
    ck_assert_str_ne(cpu_test_errmsg(), "");

    /* a large fill and copy go through the pool */
    size_t n = (24u << 20) + 123;
    unsigned char *a, *b;
    ck_assert_int_eq(ops->mem_alloc(dev, n, (void **)&a, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, n, (void **)&b, &h), 0);
    devq_pl_stream *s = stream_new(0);
    ck_assert_int_eq(ops->fill(s, a, 0x5a, n), 0);
    ck_assert_int_eq(ops->fill(s, b, 0, n), 0);
    ck_assert_int_eq(ops->copy(s, b + 1, a, n - 2, DEVQ_COPY_D2D), 0);
    stream_sync(s);
    ck_assert_int_eq(b[0], 0);
    ck_assert_int_eq(b[n - 1], 0);
    for (size_t i = 1; i < n - 1; i += 4093)
        ck_assert_int_eq(b[i], 0x5a);
    ck_assert_int_eq(b[n - 2], 0x5a);
    ck_assert_int_eq(memcmp(a, b + 1, n - 2), 0);
    ops->mem_free(dev, a);
    ops->mem_free(dev, b);
    ops->stream_destroy(s);
}
END_TEST

START_TEST(test_device)
{
    devq_device_info info;
    memset(&info, 0, sizeof info);
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert_str_ne(info.name, "");
    ck_assert_uint_ge(info.compute_units, 1);
    ck_assert_uint_gt(info.total_memory, 1u << 20);
    uint64_t want = DEVQ_CAP_KERNELS | DEVQ_CAP_HOST_VISIBLE | DEVQ_CAP_PRIORITIES | DEVQ_CAP_SKIP_ON_ERROR |
                    DEVQ_CAP_TIMING | DEVQ_CAP_KERNEL_CHECK | DEVQ_CAP_GRAPH_NATIVE;
    ck_assert_uint_eq(info.caps, want);
    ck_assert_ptr_null(ops->value_attach);
    ck_assert_ptr_null(ops->mem_alloc_async);
    ck_assert_str_eq(ops->name, "cpu");

    uint32_t n;
    const char *old = getenv("DEVQ_CPU_DEVICES");
    setenv("DEVQ_CPU_DEVICES", "3", 1);
    ck_assert_int_eq(ops->device_count(&n), 0);
    ck_assert_uint_eq(n, 3);
    devq_pl_device *d2;
    ck_assert_int_eq(ops->device_open(2, &d2), 0);
    ops->device_close(d2);
    ck_assert_int_eq(ops->device_open(3, &d2), -ENODEV);
    setenv("DEVQ_CPU_DEVICES", "two", 1);
    ck_assert_int_eq(ops->device_count(&n), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "DEVQ_CPU_DEVICES"));
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "two"));
    if (old)
        setenv("DEVQ_CPU_DEVICES", old, 1);
    else
        unsetenv("DEVQ_CPU_DEVICES");
}
END_TEST

/* Device close frees what was left behind (ASan builds check the leak). */
START_TEST(test_device_close_frees_everything)
{
    devq_pl_device *d2;
    ck_assert_int_eq(ops->device_open(0, &d2), 0);
    devq_queue_desc desc = { DEVQ_QUEUE_COMPUTE, 0 };
    devq_pl_stream *s;
    devq_pl_event *e;
    devq_pl_kernel *k;
    void *p, *h;
    uint64_t count = 0;
    ck_assert_int_eq(ops->stream_create(d2, &desc, &s), 0);
    ck_assert_int_eq(ops->event_create(d2, DEVQ_EVENT_TIMING, &e), 0);
    ck_assert_int_eq(ops->kernel_load(d2, NULL, 0, "cpu_test_thread_ids", &k), 0);
    ck_assert_int_eq(ops->mem_alloc(d2, 1 << 16, &p, &h), 0);
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(ops->host_fn(s, cb_count, &count), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ops->device_close(d2); /* drains the stream, then frees it all */
    ck_assert_uint_eq(count, 1000);
}
END_TEST

static Suite *cpu_suite(void)
{
    Suite *s = suite_create("cpu backend");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_in_order);
    tcase_add_test(t, test_event_record_query_wait);
    tcase_add_test(t, test_stream_wait_event);
    tcase_add_test(t, test_cross_stream_ping_pong);
    tcase_add_test(t, test_event_outlives_stream);
    tcase_add_test(t, test_host_fn_status_after_failed_kernel);
    tcase_add_test(t, test_host_fn_error_latches);
    tcase_add_test(t, test_stream_idle);
    tcase_add_test(t, test_kernel_from_process);
    tcase_add_test(t, test_launch_records_recycled);
    tcase_add_test(t, test_kernel_from_shared_object);
    tcase_add_test(t, test_kernels_switch_and_outlive_destroy);
    tcase_add_test(t, test_kernel_missing);
    tcase_add_test(t, test_kernel_signature);
    tcase_add_test(t, test_big_launch_uses_threads);
    tcase_add_test(t, test_failed_launch_stops_groups);
    tcase_add_test(t, test_concurrent_streams_share_the_pool);
    tcase_add_test(t, test_priorities);
    tcase_add_test(t, test_threads_env_malformed);
    tcase_add_test(t, test_timing_events);
    tcase_add_test(t, test_million_host_fns);
    tcase_add_test(t, test_wakes_at_every_idle_phase);
    tcase_add_test(t, test_chunk_ends_at_every_idle_phase);
    tcase_add_test(t, test_tail_completes_the_op_before_it);
    tcase_add_test(t, test_completion_wakes_waiters);
    tcase_add_test(t, test_completion_wakes_waiters_without_membarrier);
    tcase_add_test(t, test_memory);
    tcase_add_test(t, test_device);
    tcase_add_test(t, test_device_close_frees_everything);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return check_run(cpu_suite());
}
