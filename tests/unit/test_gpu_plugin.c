/* SPDX-License-Identifier: MIT */
/* devq-cuda.so and devq-hip.so over their emulated drivers: devices,
 * streams, events, callbacks, memory, kernels and value waits, with
 * results checked.  Built once, run per backend (gpu_test.h). */
#include "gpu_test.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* DEVQ_CAP_GRAPH_NATIVE: both emulated drivers have graphs
 * (test_gpu_graph.c covers a driver without them). */
#define ALL_CAPS                                                                       \
    (DEVQ_CAP_KERNELS | DEVQ_CAP_TIMING | DEVQ_CAP_ASYNC_ALLOC | DEVQ_CAP_WAIT_VALUE | \
     DEVQ_CAP_WRITE_VALUE | DEVQ_CAP_COPY_ENGINE | DEVQ_CAP_PRIORITIES | DEVQ_CAP_GRAPH_NATIVE)

START_TEST(test_devices_and_caps)
{
    setenv("DEVQ_EMU_DEVICES", "2", 1);
    load_plugin();
    uint32_t n = 0;
    ck_assert_int_eq(ops->device_count(&n), 0);
    ck_assert_uint_eq(n, 2);
    devq_pl_device *d0, *d1, *again;
    ck_assert_int_eq(ops->device_open(0, &d0), 0);
    ck_assert_int_eq(ops->device_open(1, &d1), 0);
    ck_assert_int_eq(ops->device_open(0, &again), 0);
    ck_assert_ptr_eq(d0, again);
    ck_assert_ptr_ne(d0, d1);
    devq_device_info info;
    memset(&info, 0, sizeof info);
    ck_assert_int_eq(ops->device_info(d1, &info), 0);
    char name[64];
    ck_assert_str_eq(info.name, strf(name, sizeof name, "devq emulated %s device 1", face->name));
    ck_assert_uint_eq(info.total_memory, 4ull << 30);
    ck_assert_uint_eq(info.compute_units, 4);
    /* DEVQ_CAP_CHANNELS says whether NCCL/RCCL is on this machine:
     * test_channel_cap checks it. */
    /* cuda reads kernels' parameters (cuFuncGetParamInfo); HIP offers
     * no such call (test_kernel_iface). */
    ck_assert_uint_eq(info.caps & ~DEVQ_CAP_CHANNELS,
                      ALL_CAPS | (face->kind == GPU_CUDA ? DEVQ_CAP_KERNEL_CHECK : 0));
    ck_assert(!(info.caps & DEVQ_CAP_SKIP_ON_ERROR));
    ck_assert(!(info.caps & DEVQ_CAP_HOST_VISIBLE));
    devq_pl_device *bad = NULL;
    ck_assert_int_eq(ops->device_open(2, &bad), -ENODEV);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "no device 2"));
    ops->device_close(again);
    ops->device_close(d0);
    ops->device_close(d1);
}
END_TEST

/* DEVQ_CAP_CHANNELS follows whether the collective library can be found
 * (looked for, not loaded): NCCL for cuda, RCCL for hip. */
START_TEST(test_channel_cap)
{
    const char *env = face->kind == GPU_CUDA ? "DEVQ_NCCL_LIBRARY" : "DEVQ_RCCL_LIBRARY";
    const char *lib = face->kind == GPU_CUDA ? TEST_BUILD_DIR "/tests/emu/.libs/libnccl-emu.so"
                                             : TEST_BUILD_DIR "/tests/emu/.libs/librccl-emu.so";
    setenv(env, "/nonexistent/libnccl-missing.so.2", 1);
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(!(info.caps & DEVQ_CAP_CHANNELS));
    /* Without the library, the entries refuse with its name and the variable. */
    unsigned char id[128];
    size_t n = sizeof id;
    ck_assert_int_eq(ops->chan_id(dev, id, &n), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "libnccl-missing.so.2"));
    ck_assert_ptr_nonnull(strstr(test_errmsg(), env));
    setenv(env, lib, 1);
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(info.caps & DEVQ_CAP_CHANNELS);
}
END_TEST

START_TEST(test_caps_without_pools_and_memops)
{
    setenv("DEVQ_EMU_NO_MEMPOOL", "1", 1);
    setenv("DEVQ_EMU_NO_STREAM_MEMOPS", "1", 1);
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    /* (DEVQ_CAP_KERNEL_CHECK: test_devices_and_caps, test_kernel_iface) */
    ck_assert_uint_eq(info.caps & ~(DEVQ_CAP_CHANNELS | DEVQ_CAP_KERNEL_CHECK),
                      ALL_CAPS & ~(DEVQ_CAP_ASYNC_ALLOC | DEVQ_CAP_WAIT_VALUE | DEVQ_CAP_WRITE_VALUE));
    devq_pl_stream *s = new_stream(0);
    void *p = NULL;
    ck_assert_int_eq(ops->mem_alloc_async(s, 64, &p), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), face->attr_mem_pools));
    uint64_t word = 0;
    devq_pl_value *v;
    ck_assert_int_eq(ops->value_attach(dev, &word, &v), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), face->attr_stream_memops));
    /* the synchronous allocator works whatever the pools say */
    void *host = (void *)1;
    ck_assert_int_eq(ops->mem_alloc(dev, 64, &p, &host), 0);
    ck_assert_ptr_null(host);
    ops->mem_free(dev, p);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- streams and host callbacks ---- */

struct order_log {
    uint32_t next;
    uint32_t seen[256];
    int statuses;
};

struct order_arg {
    struct order_log *log;
    uint32_t id;
};

static int order_cb(void *arg, int status)
{
    struct order_arg *a = arg;
    uint32_t slot = __atomic_fetch_add(&a->log->next, 1, __ATOMIC_ACQ_REL);
    a->log->seen[slot] = a->id;
    if (status)
        __atomic_fetch_add(&a->log->statuses, 1, __ATOMIC_RELAXED);
    return 0;
}

START_TEST(test_stream_runs_in_order)
{
    setenv("DEVQ_EMU_DELAY", "200", 1);
    open_device();
    devq_pl_stream *s = new_stream(0);
    void *d;
    ck_assert_int_eq(ops->mem_alloc(dev, 4096, &d, NULL), 0);
    static struct order_log log;
    static struct order_arg args[200];
    static unsigned char src[4096], dst[4096];
    for (int i = 0; i < 200; i++) {
        args[i] = (struct order_arg){ &log, (uint32_t)i };
        /* interleave copies so callbacks are not the only kind of op */
        if (i % 20 == 0) {
            memset(src, i, sizeof src);
            ck_assert_int_eq(ops->copy(s, d, src, sizeof src, DEVQ_COPY_H2D), 0);
            ck_assert_int_eq(ops->copy(s, dst, d, sizeof dst, DEVQ_COPY_D2H), 0);
        }
        ck_assert_int_eq(ops->host_fn(s, order_cb, &args[i]), 0);
        if (i % 20 == 0) /* the H2D read src at execution: wait before reuse */
            ck_assert_int_eq(sync_stream(s, 10 * SEC), 0);
    }
    ck_assert_int_eq(sync_stream(s, 10 * SEC), 0);
    ck_assert_uint_eq(log.next, 200);
    for (uint32_t i = 0; i < 200; i++)
        ck_assert_uint_eq(log.seen[i], i);
    ck_assert_int_eq(log.statuses, 0);
    ck_assert_uint_eq(dst[0], 180);
    ops->mem_free(dev, d);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

struct latch_probe {
    int status[3];
    int ret[3];
    int n;
};

static int latch_cb(void *arg, int status)
{
    struct latch_probe *p = arg;
    int i = p->n++;
    p->status[i] = status;
    return p->ret[i];
}

START_TEST(test_callback_error_latches_for_the_next)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    struct latch_probe p = { .ret = { -EPROTO, 0, 0 } };
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ops->host_fn(s, latch_cb, &p), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    ck_assert_int_eq(p.n, 3);
    ck_assert_int_eq(p.status[0], 0);
    ck_assert_int_eq(p.status[1], -EPROTO); /* the previous callback's error */
    ck_assert_int_eq(p.status[2], 0);       /* then cleared */
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- events ---- */

START_TEST(test_event_query_wait_timeout)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->event_query(e), 0); /* never recorded */
    ck_assert_int_eq(ops->event_wait(e, 0), 0);
    struct gate g = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ck_assert_int_eq(ops->event_query(e), -EAGAIN);
    ck_assert_int_eq(ops->event_wait(e, 0), -ETIMEDOUT);
    uint64_t t0 = test_host.now_ns();
    ck_assert_int_eq(ops->event_wait(e, 20 * 1000000ull), -ETIMEDOUT);
    uint64_t waited = test_host.now_ns() - t0;
    ck_assert_uint_ge(waited, 19 * 1000000ull);
    ck_assert_uint_lt(waited, 2 * SEC);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "not reached"));
    gate_open(&g);
    ck_assert_int_eq(ops->event_wait(e, 5 * SEC), 0);
    ck_assert_int_eq(ops->event_query(e), 0);
    /* re-record: the event follows the new tail */
    struct gate g2 = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g2), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ck_assert_int_eq(ops->event_query(e), -EAGAIN);
    gate_open(&g2);
    ck_assert_int_eq(ops->event_wait(e, DEVQ_TIMEOUT_INFINITE), 0);
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

struct wake_arg {
    struct gate *g;
};

static void *open_gate_later(void *arg)
{
    sleep_ms(30);
    gate_open(arg);
    return NULL;
}

START_TEST(test_event_wait_wakes_promptly)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    /* many waits, some timing out, none delaying another */
    for (int round = 0; round < 20; round++) {
        struct gate g = { 0 };
        ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g), 0);
        ck_assert_int_eq(ops->event_record(e, s), 0);
        ck_assert_int_eq(ops->event_wait(e, 100000), -ETIMEDOUT);
        pthread_t t;
        pthread_create(&t, NULL, open_gate_later, &g);
        ck_assert_int_eq(ops->event_wait(e, 10 * SEC), 0);
        pthread_join(t, NULL);
    }
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

static int sleep_cb(void *arg, int status)
{
    sleep_ms(*(int *)arg);
    return 0;
}

START_TEST(test_event_timing)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_event *a, *b, *plain;
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &a), 0);
    ck_assert_int_eq(ops->event_create(dev, DEVQ_EVENT_TIMING, &b), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &plain), 0);
    int ms = 20;
    ck_assert_int_eq(ops->event_record(a, s), 0);
    ck_assert_int_eq(ops->host_fn(s, sleep_cb, &ms), 0);
    ck_assert_int_eq(ops->event_record(b, s), 0);
    ck_assert_int_eq(ops->event_record(plain, s), 0);
    ck_assert_int_eq(ops->event_wait(b, 5 * SEC), 0);
    uint64_t ns = 0;
    ck_assert_int_eq(ops->event_elapsed(a, b, &ns), 0);
    ck_assert_uint_ge(ns, 19 * 1000000ull);
    ck_assert_uint_lt(ns, 2 * SEC);
    ck_assert_int_eq(ops->event_elapsed(a, plain, &ns), -EINVAL);
    ops->event_destroy(a);
    ops->event_destroy(b);
    ops->event_destroy(plain);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

struct seq {
    uint32_t n;
    uint32_t at[2];
};
struct seq_arg {
    struct seq *q;
    int which;
};

static int seq_cb(void *arg, int status)
{
    struct seq_arg *a = arg;
    a->q->at[a->which] = __atomic_add_fetch(&a->q->n, 1, __ATOMIC_ACQ_REL);
    return status;
}

START_TEST(test_cross_stream_wait)
{
    setenv("DEVQ_EMU_DELAY", "100", 1);
    open_device();
    devq_pl_stream *producer = new_stream(0), *consumer = new_stream(2);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    struct gate g = { 0 };
    struct seq q = { 0 };
    struct seq_arg first = { &q, 0 }, second = { &q, 1 };
    ck_assert_int_eq(ops->host_fn(producer, gate_wait_cb, &g), 0);
    ck_assert_int_eq(ops->host_fn(producer, seq_cb, &first), 0);
    ck_assert_int_eq(ops->event_record(e, producer), 0);
    ck_assert_int_eq(ops->stream_wait_event(consumer, e), 0);
    ck_assert_int_eq(ops->host_fn(consumer, seq_cb, &second), 0);
    /* the wait blocks the consumer, not the host */
    sleep_ms(20);
    ck_assert_uint_eq(__atomic_load_n(&q.n, __ATOMIC_ACQUIRE), 0);
    gate_open(&g);
    ck_assert_int_eq(sync_stream(consumer, 5 * SEC), 0);
    ck_assert_uint_eq(q.at[0], 1);
    ck_assert_uint_eq(q.at[1], 2);
    /* re-recording e later does not disturb a wait already enqueued */
    ops->event_destroy(e);
    ops->stream_destroy(producer);
    ops->stream_destroy(consumer);
    ops->device_close(dev);
}
END_TEST

/* A stream wait captures the record current when it is queued: the event
 * re-recorded on an idle stream must not release it (the tracker reuses
 * one event for many waits). */
START_TEST(test_wait_captures_the_record_it_saw)
{
    open_device();
    devq_pl_stream *slow = new_stream(0), *idle = new_stream(0), *waiter = new_stream(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    struct gate g = { 0 };
    struct seq q = { 0 };
    struct seq_arg arg = { &q, 0 };
    ck_assert_int_eq(ops->host_fn(slow, gate_wait_cb, &g), 0);
    ck_assert_int_eq(ops->event_record(e, slow), 0);
    ck_assert_int_eq(ops->stream_wait_event(waiter, e), 0);
    ck_assert_int_eq(ops->event_record(e, idle), 0); /* reached at once */
    ck_assert_int_eq(ops->event_wait(e, 5 * SEC), 0);
    ck_assert_int_eq(ops->host_fn(waiter, seq_cb, &arg), 0);
    sleep_ms(20);
    ck_assert_uint_eq(__atomic_load_n(&q.n, __ATOMIC_ACQUIRE), 0);
    gate_open(&g);
    ck_assert_int_eq(sync_stream(waiter, 5 * SEC), 0);
    ck_assert_uint_eq(q.n, 1);
    ops->event_destroy(e);
    ops->stream_destroy(slow);
    ops->stream_destroy(idle);
    ops->stream_destroy(waiter);
    ops->device_close(dev);
}
END_TEST

/* ---- memory ---- */

START_TEST(test_copies_and_fill)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    enum { N = 1 << 16 };
    void *a, *b, *host;
    ck_assert_int_eq(ops->mem_alloc(dev, N, &a, &host), 0);
    ck_assert_ptr_null(host);
    ck_assert_int_eq(ops->mem_alloc(dev, N, &b, NULL), 0);
    unsigned char *src = malloc(N), *out = malloc(N);
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    memset(out, 0, N);
    ck_assert_int_eq(ops->copy(s, a, src, N, DEVQ_COPY_H2D), 0);
    ck_assert_int_eq(ops->copy(s, b, a, N, DEVQ_COPY_D2D), 0);
    ck_assert_int_eq(ops->fill(s, (char *)b + 100, 0xee, 50), 0);
    ck_assert_int_eq(ops->copy(s, out, b, N, DEVQ_COPY_D2H), 0);
    ck_assert_int_eq(ops->copy(s, out, b, 0, DEVQ_COPY_D2H), 0); /* empty: no-op */
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], i >= 100 && i < 150 ? 0xee : (unsigned char)(i * 7 + 3));
    ops->mem_free(dev, a);
    ops->mem_free(dev, b);
    free(src);
    free(out);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* Host copies queued behind a wait nobody has satisfied return at once:
 * the drivers' copies to and from pageable memory synchronize with the
 * stream (the emulated ones too), so the plugin stages them through
 * pinned chunks.  Bytes move in stream order: nothing before the wait
 * is released, everything after it; a copy past one 4 MiB chunk keeps
 * every byte at its place. */
START_TEST(test_host_copies_behind_a_wait_do_not_block)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    static uint64_t word __attribute__((aligned(8)));
    devq_pl_value *v;
    ck_assert_msg(ops->value_attach(dev, &word, &v) == 0, "%s", test_errmsg());
    const size_t n = ((size_t)9 << 20) + 3; /* three chunks, the last short */
    void *d;
    ck_assert_int_eq(ops->mem_alloc(dev, n, &d, NULL), 0);
    unsigned char *src = malloc(n), *out = malloc(n), small[100];
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 13 + i / 4099);
    memset(out, 0x5a, n);
    memset(small, 0x5a, sizeof small);
    ck_assert_int_eq(ops->stream_wait_value(s, v, 1), 0);
    /* each returns: were it to block, the test would time out */
    ck_assert_int_eq(ops->copy(s, d, src, n, DEVQ_COPY_H2D), 0);
    ck_assert_int_eq(ops->copy(s, out, d, n, DEVQ_COPY_D2H), 0);
    ck_assert_int_eq(ops->copy(s, small, (char *)d + 5, sizeof small, DEVQ_COPY_D2H), 0);
    sleep_ms(20);
    for (size_t i = 0; i < n; i += 4093)
        ck_assert_uint_eq(out[i], 0x5a); /* not yet: the stream waits */
    __atomic_store_n(&word, 1, __ATOMIC_RELEASE);
    ck_assert_int_eq(sync_stream(s, 10 * SEC), 0);
    ck_assert_int_eq(memcmp(out, src, n), 0);
    ck_assert_int_eq(memcmp(small, src + 5, sizeof small), 0);
    ops->mem_free(dev, d);
    free(src);
    free(out);
    ops->value_detach(v);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* A process forked after the driver's init is told so at its first
 * open, as the real drivers fail every call there. */
START_TEST(test_open_in_a_forked_child_says_why)
{
    open_device();
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        devq_pl_device *d = NULL;
        int r = ops->device_open(0, &d);
        char msg[512];
        snprintf(msg, sizeof msg, "%d %s", r, r ? test_errmsg() : "opened");
        ssize_t w = write(fds[1], msg, strlen(msg));
        _exit(w > 0 ? 0 : 1);
    }
    close(fds[1]);
    char got[512] = "";
    ssize_t k = read(fds[0], got, sizeof got - 1);
    got[k > 0 ? k : 0] = '\0';
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(strncmp(got, "-19 ", 4) == 0, "child's open: %s", got);
    ck_assert_msg(strstr(got, "forked") && strstr(got, "fork()"), "child's open: %s", got);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_async_alloc_free)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    uint64_t in[64], out[64];
    for (int round = 0; round < 50; round++) {
        void *p = NULL;
        ck_assert_int_eq(ops->mem_alloc_async(s, sizeof in, &p), 0);
        ck_assert_ptr_nonnull(p);
        for (int i = 0; i < 64; i++)
            in[i] = (uint64_t)round * 1000 + (uint64_t)i;
        ck_assert_int_eq(ops->copy(s, p, in, sizeof in, DEVQ_COPY_H2D), 0);
        ck_assert_int_eq(ops->copy(s, out, p, sizeof out, DEVQ_COPY_D2H), 0);
        ck_assert_int_eq(ops->mem_free_async(s, p), 0);
        ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
        ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    }
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- kernels ---- */

/* An emulated kernel: y[i] = a * x[i] + y[i], CUDA-style parameters
 * (HIP's are the same). */
int devq_test_saxpy(void **p, const devq_cpu_group *g);
int devq_test_saxpy(void **p, const devq_cpu_group *g)
{
    float a = *(const float *)p[0];
    const float *x = *(float *const *)p[1];
    float *y = *(float *const *)p[2];
    uint32_t n = *(const uint32_t *)p[3];
    for (uint32_t t = 0; t < g->local_size[0]; t++) {
        uint32_t i = g->group_id[0] * g->local_size[0] + t;
        if (i < n)
            y[i] = a * x[i] + y[i];
    }
    return 0;
}

static const char saxpy_module[] = "devq-emu-module\n"
                                   "# name, then each parameter's size\n"
                                   "devq_test_saxpy 4 ptr ptr 4\n";

START_TEST(test_kernel_saxpy)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_kernel *k;
    ck_assert_msg(ops->kernel_load(dev, saxpy_module, strlen(saxpy_module), "devq_test_saxpy", &k) == 0,
                  "kernel_load: %s", test_errmsg());
    enum { N = 1000 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(N - i);
    }
    void *dx, *dy;
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof x, &dx, NULL), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof y, &dy, NULL), 0);
    ck_assert_int_eq(ops->copy(s, dx, x, sizeof x, DEVQ_COPY_H2D), 0);
    ck_assert_int_eq(ops->copy(s, dy, y, sizeof y, DEVQ_COPY_H2D), 0);
    float a = 2.5f;
    uint32_t n = N;
    struct devq_pl_arg args[4] = {
        { .value = &a, .size = sizeof a },
        { .is_buffer = 1, .device_ptr = dx },
        { .is_buffer = 1, .device_ptr = dy },
        { .value = &n, .size = sizeof n },
    };
    devq_launch l = { .global = { N, 1, 1 }, .local = { 128, 1, 1 } };
    ck_assert_int_eq(ops->launch(s, k, &l, args, 4), 0);
    a = -1000.0f; /* the launch copied the value: this must not matter */
    ck_assert_int_eq(ops->copy(s, out, dy, sizeof out, DEVQ_COPY_D2H), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(out[i], 2.5f * (float)i + (float)(N - i));
    devq_launch bad = { .global = { N, 1, 1 }, .local = { 0, 1, 1 } };
    ck_assert_int_eq(ops->launch(s, k, &bad, args, 4), -EINVAL);
    ops->kernel_destroy(k);
    ops->mem_free(dev, dx);
    ops->mem_free(dev, dy);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* devq's cpu-kernel convention (a buffer argument is its address): the
 * same function can serve the cpu backend and the emulated gpu ones. */
int devq_test_iota(void *const *args, const devq_cpu_group *g);
int devq_test_iota(void *const *args, const devq_cpu_group *g)
{
    uint32_t *out = args[0];
    uint32_t base = *(const uint32_t *)args[1], n = *(const uint32_t *)args[2];
    for (uint32_t t = 0; t < g->local_size[0]; t++) {
        uint32_t i = g->group_id[0] * g->local_size[0] + t;
        if (i < n)
            out[i] = base + i;
    }
    return 0;
}

static const char iota_module[] = "devq-emu-module cpu-args\ndevq_test_iota ptr 4 4\n";

START_TEST(test_kernel_cpu_style_args)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_kernel *k;
    ck_assert_msg(ops->kernel_load(dev, iota_module, strlen(iota_module), "devq_test_iota", &k) == 0,
                  "kernel_load: %s", test_errmsg());
    enum { N = 300 };
    uint32_t out[N + 20];
    void *d;
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof out, &d, NULL), 0);
    ck_assert_int_eq(ops->fill(s, d, 0xff, sizeof out), 0);
    uint32_t base = 1000, n = N;
    struct devq_pl_arg args[3] = {
        { .is_buffer = 1, .device_ptr = d },
        { .value = &base, .size = sizeof base },
        { .value = &n, .size = sizeof n },
    };
    devq_launch l = { .global = { N, 1, 1 }, .local = { 64, 1, 1 } };
    ck_assert_int_eq(ops->launch(s, k, &l, args, 3), 0);
    ck_assert_int_eq(ops->copy(s, out, d, sizeof out, DEVQ_COPY_D2H), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    for (uint32_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 1000 + i);
    for (uint32_t i = N; i < N + 20; i++)
        ck_assert_uint_eq(out[i], 0xffffffffu);
    ops->kernel_destroy(k);
    ops->mem_free(dev, d);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* kernel_iface: cuda asks cuFuncGetParamInfo at load (driver 12.4+) and
 * reports each parameter's size and offset, kind unknown (BYTES); a
 * driver without it (hidden here) is the old-driver path: no
 * DEVQ_CAP_KERNEL_CHECK, -ENOTSUP, launches unchecked.  hip has no op. */
static void kernel_iface_case(int hide)
{
    if (hide)
        setenv("DEVQ_EMU_MISSING", "cuFuncGetParamInfo", 1);
    open_device();
    devq_device_info info;
    memset(&info, 0, sizeof info);
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    if (face->kind != GPU_CUDA) {
        ck_assert(ops->kernel_iface == NULL);
        ck_assert(!(info.caps & DEVQ_CAP_KERNEL_CHECK));
        ops->device_close(dev);
        return;
    }
    ck_assert(ops->kernel_iface != NULL);
    devq_pl_kernel *k;
    ck_assert_msg(ops->kernel_load(dev, saxpy_module, strlen(saxpy_module), "devq_test_saxpy", &k) == 0,
                  "kernel_load: %s", test_errmsg());
    struct devq_pl_kernel_iface iface;
    memset(&iface, 0, sizeof iface);
    if (hide) {
        ck_assert(!(info.caps & DEVQ_CAP_KERNEL_CHECK));
        ck_assert_int_eq(ops->kernel_iface(k, &iface), -ENOTSUP);
    } else {
        ck_assert(info.caps & DEVQ_CAP_KERNEL_CHECK);
        ck_assert_int_eq(ops->kernel_iface(k, &iface), 0);
        ck_assert_uint_eq(iface.flags, DEVQ_PL_IFACE_POSITIONAL);
        ck_assert_uint_eq(iface.nparams, 4);
        static const uint32_t size[] = { 4, 8, 8, 4 }, offset[] = { 0, 8, 16, 24 };
        for (uint32_t i = 0; i < 4; i++) {
            ck_assert_uint_eq(iface.params[i].kind, DEVQ_PL_PARAM_BYTES);
            ck_assert_uint_eq(iface.params[i].size, size[i]);
            ck_assert_uint_eq(iface.params[i].offset, offset[i]);
        }
        ck_assert_uint_eq(iface.value_block, 0);
    }
    ops->kernel_destroy(k);
    ops->device_close(dev);
}

START_TEST(test_kernel_iface)
{
    kernel_iface_case(0);
}
END_TEST

START_TEST(test_kernel_iface_old_driver)
{
    kernel_iface_case(1);
}
END_TEST

START_TEST(test_kernel_load_errors)
{
    open_device();
    devq_pl_kernel *k;
    static const char junk[] = "not a module";
    ck_assert_int_eq(ops->kernel_load(dev, junk, sizeof junk - 1, "x", &k), -ENOEXEC);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), face->err_invalid_image));
    ck_assert_int_eq(ops->kernel_load(dev, saxpy_module, strlen(saxpy_module), "no_such_kernel", &k),
                     -ENOENT);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "no_such_kernel"));
    ck_assert_ptr_nonnull(strstr(test_errmsg(), face->err_not_found));
    ops->device_close(dev);
}
END_TEST

/* ---- values ---- */

START_TEST(test_value_wait_and_write)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    static uint64_t word __attribute__((aligned(8))), out __attribute__((aligned(8)));
    devq_pl_value *v, *w;
    ck_assert_msg(ops->value_attach(dev, &word, &v) == 0, "%s", test_errmsg());
    ck_assert_int_eq(ops->value_attach(dev, &out, &w), 0);
    struct seq q = { 0 };
    struct seq_arg arg = { &q, 0 };
    ck_assert_int_eq(ops->stream_wait_value(s, v, 5), 0);
    ck_assert_int_eq(ops->stream_write_value(s, w, 42), 0);
    ck_assert_int_eq(ops->host_fn(s, seq_cb, &arg), 0);
    __atomic_store_n(&word, 4, __ATOMIC_RELEASE);
    sleep_ms(20);
    ck_assert_uint_eq(__atomic_load_n(&q.n, __ATOMIC_ACQUIRE), 0);
    ck_assert_uint_eq(__atomic_load_n(&out, __ATOMIC_ACQUIRE), 0);
    __atomic_store_n(&word, 7, __ATOMIC_RELEASE); /* >= 5 */
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    ck_assert_uint_eq(q.n, 1);
    ck_assert_uint_eq(__atomic_load_n(&out, __ATOMIC_ACQUIRE), 42);
    ops->value_detach(v);
    ops->value_detach(w);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- threads ---- */

static void *copy_worker(void *arg)
{
    devq_pl_stream *s = arg;
    enum { N = 4096 };
    unsigned char in[N], out[N];
    void *d;
    if (ops->mem_alloc(dev, N, &d, NULL))
        return (void *)1;
    for (int round = 0; round < 30; round++) {
        memset(in, round, N);
        if (ops->copy(s, d, in, N, DEVQ_COPY_H2D) || ops->copy(s, out, d, N, DEVQ_COPY_D2H) ||
            sync_stream(s, 5 * SEC) || memcmp(in, out, N)) {
            ops->mem_free(dev, d);
            return (void *)1;
        }
    }
    ops->mem_free(dev, d);
    return NULL;
}

/* Timed event waits from several threads at once: each gets its own
 * helper stream, timed-out ones return theirs later. */
static void *event_wait_worker(void *arg)
{
    devq_pl_stream *s = arg;
    devq_pl_event *e;
    if (ops->event_create(dev, 0, &e))
        return (void *)1;
    void *ret = NULL;
    for (int round = 0; round < 25 && !ret; round++) {
        struct gate g = { 0 };
        if (ops->host_fn(s, gate_wait_cb, &g) || ops->event_record(e, s) ||
            ops->event_wait(e, 50000) != -ETIMEDOUT) {
            gate_open(&g);
            ret = (void *)1;
            break;
        }
        gate_open(&g);
        if (ops->event_wait(e, 10 * SEC) || ops->event_query(e))
            ret = (void *)1;
    }
    ops->event_destroy(e);
    return ret;
}

START_TEST(test_event_waits_from_many_threads)
{
    setenv("DEVQ_EMU_DELAY", "30", 1);
    open_device();
    pthread_t t[4];
    devq_pl_stream *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = new_stream(0);
        pthread_create(&t[i], NULL, event_wait_worker, s[i]);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
        ops->stream_destroy(s[i]);
    }
    ops->device_close(dev);
}
END_TEST

START_TEST(test_streams_from_many_threads)
{
    setenv("DEVQ_EMU_DELAY", "50", 1);
    open_device();
    pthread_t t[4];
    devq_pl_stream *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = new_stream(i);
        pthread_create(&t[i], NULL, copy_worker, s[i]);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
        ops->stream_destroy(s[i]);
    }
    ops->device_close(dev);
}
END_TEST

int main(void)
{
    if (!gpu_face_select())
        return 99;
    char name[32];
    TCase *tc = tcase_create("emulated");
    tcase_add_test(tc, test_devices_and_caps);
    tcase_add_test(tc, test_caps_without_pools_and_memops);
    tcase_add_test(tc, test_channel_cap);
    tcase_add_test(tc, test_stream_runs_in_order);
    tcase_add_test(tc, test_callback_error_latches_for_the_next);
    tcase_add_test(tc, test_event_query_wait_timeout);
    tcase_add_test(tc, test_event_wait_wakes_promptly);
    tcase_add_test(tc, test_event_timing);
    tcase_add_test(tc, test_cross_stream_wait);
    tcase_add_test(tc, test_wait_captures_the_record_it_saw);
    tcase_add_test(tc, test_copies_and_fill);
    tcase_add_test(tc, test_host_copies_behind_a_wait_do_not_block);
    tcase_add_test(tc, test_open_in_a_forked_child_says_why);
    tcase_add_test(tc, test_async_alloc_free);
    tcase_add_test(tc, test_kernel_saxpy);
    tcase_add_test(tc, test_kernel_cpu_style_args);
    tcase_add_test(tc, test_kernel_load_errors);
    tcase_add_test(tc, test_kernel_iface);
    tcase_add_test(tc, test_kernel_iface_old_driver);
    tcase_add_test(tc, test_value_wait_and_write);
    tcase_add_test(tc, test_streams_from_many_threads);
    tcase_add_test(tc, test_event_waits_from_many_threads);
    return check_run(check_suite_of(strf(name, sizeof name, "%s_plugin", face->name), tc, 60));
}
