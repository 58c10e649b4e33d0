/* SPDX-License-Identifier: MIT */
/* Stream-ordered memory: a freed buffer's memory is never handed out
 * while another stream may still touch it. */
#include "conf.h"
#include <devq/devq_resource.h>
#include <pthread.h>
#include <stdatomic.h>

enum { SZ = 1 << 20 };

static void slow_read(devq_queue *q, devq_kernel *k, devq_buffer *src, devq_buffer *dst, uint32_t ms)
{
    uint32_t n = SZ;
    devq_arg a[4] = { DEVQ_ARG_BUF(src, DEVQ_READ), DEVQ_ARG_BUF(dst, DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                      DEVQ_ARG_VAL(&n) };
    devq_launch l = conf_launch1(1, 1);
    ck_assert_int_eq(devq_queue_exec(q, k, a, 4, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
}

static void check_all(devq_queue *q, devq_buffer *b, unsigned char want)
{
    unsigned char *out = malloc(SZ);
    conf_download(q, out, b, SZ);
    for (size_t i = 0; i < SZ; i++)
        if (out[i] != want)
            ck_abort_msg("byte %zu is 0x%02x, want 0x%02x: memory reused while read", i, out[i], want);
    free(out);
}

static void reuse_case(int steal_queue)
{
    devq_device *dev = conf_open();
    devq_queue *a = conf_queue(dev), *b = conf_queue(dev), *c = conf_queue(dev);
    devq_kernel *k = conf_kernel(dev, "slow_copy");
    devq_buffer *src, *dst = conf_buffer(dev, SZ);
    ck_assert_int_eq(devq_buffer_alloc(dev, SZ, a, 1, &src), 0);
    ck_assert_int_eq(devq_queue_fill(a, src, 0, SZ, 0xab), 0);
    ck_assert_int_eq(devq_queue_submit(a), 0);
    /* B reads src slowly; A frees it at once. */
    slow_read(b, k, src, dst, 60);
    ck_assert_int_eq(devq_buffer_free(src, a), 0);
    /* New allocations scribble over whatever they get. */
    devq_queue *user = steal_queue ? c : a;
    devq_buffer *fresh[4];
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(devq_buffer_alloc(dev, SZ, user, 2, &fresh[i]), 0);
        ck_assert_int_eq(devq_queue_fill(user, fresh[i], 0, SZ, 0x00), 0);
        ck_assert_int_eq(devq_queue_submit(user), 0);
    }
    check_all(b, dst, 0xab);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(devq_buffer_free(fresh[i], NULL), 0);
    ck_assert_int_eq(devq_buffer_free(dst, NULL), 0);
    devq_kernel_destroy(k);
    devq_queue_destroy(a);
    devq_queue_destroy(b);
    devq_queue_destroy(c);
    devq_device_close(dev);
}

START_TEST(free_while_other_stream_reads)
{
    reuse_case(0);
}
END_TEST

START_TEST(three_stream_steal)
{
    reuse_case(1);
}
END_TEST

START_TEST(free_after_alloc_queue_destroyed)
{
    devq_device *dev = conf_open();
    devq_queue *a = conf_queue(dev);
    devq_buffer *buf;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, a, 0, &buf), 0);
    ck_assert_int_eq(devq_queue_fill(a, buf, 0, 4096, 1), 0);
    ck_assert_int_eq(devq_queue_submit(a), 0);
    devq_queue_destroy(a);
    ck_assert_int_eq(devq_buffer_free(buf, NULL), 0);
    devq_device_close(dev);
}
END_TEST

START_TEST(free_with_unsubmitted_use_waits_for_it)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_buffer *buf = conf_buffer(dev, 64), *dst = conf_buffer(dev, 64);
    unsigned char pattern[64], out[64];
    memset(pattern, 0x5a, sizeof pattern);
    conf_upload(q, buf, pattern, sizeof pattern);
    ck_assert_int_eq(devq_queue_copy(q, dst, 0, buf, 0, 64), 0);
    ck_assert_int_eq(devq_buffer_free(buf, q), 0); /* recorded use not yet submitted */
    ck_assert_int_eq(devq_queue_submit(q), 0);
    conf_download(q, out, dst, 64);
    ck_assert_mem_eq(out, pattern, 64);
    ck_assert_int_eq(devq_buffer_free(dst, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(buffer_queries)
{
    devq_device *dev = conf_open();
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    devq_buffer *b = conf_buffer(dev, 1000);
    ck_assert_uint_eq(devq_buffer_size(b), 1000);
    ck_assert_ptr_nonnull(devq_buffer_device_ptr(b));
    if (info.caps & DEVQ_CAP_HOST_VISIBLE)
        ck_assert_ptr_nonnull(devq_buffer_host_ptr(b));
    else
        ck_assert_ptr_null(devq_buffer_host_ptr(b));
    ck_assert_uint_eq(devq_buffer_size(NULL), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(NULL, NULL), -EINVAL);
    devq_device_close(dev);
}
END_TEST

/* Every allocation is 256-byte aligned, on every base of the resource
 * stack and with the guard's canaries or without: a program must not lose
 * alignment by switching DEVQ_MEM_POOL (devq_buffer_alloc(3)). */
static const size_t align_sizes[] = {
    1,
    2,
    63,
    64,
    100,
    255,
    256,
    257,
    300,
    320,
    384,
    449,
    511,
    512,
    513,
    640,
    777,
    1000,
    1023,
    2047,
    2049,
    2560,
    3001,
    4095,
    4096,
    4097,
    12345,
    65535,
    65537,
    100003,
    (1u << 20) + 3,
    (5u << 20) + 1,
    (33u << 20) + 1,
};
#define ALIGN_COPIES 3 /* several blocks of a class: carved at different offsets */

static void check_aligned(devq_buffer *b, size_t bytes, const char *pool, const char *guard, int ordered)
{
    uintptr_t d = (uintptr_t)devq_buffer_device_ptr(b), h = (uintptr_t)devq_buffer_host_ptr(b);
    ck_assert_msg(
        d % 256 == 0 && h % 256 == 0,
        "DEVQ_MEM_POOL=%s DEVQ_MEM_GUARD=%s %s alloc of %zu bytes: device %p host %p not 256-byte aligned",
        pool, guard, ordered ? "stream-ordered" : "synchronous", bytes, (void *)d, (void *)h);
}

static void align_case(const char *pool, const char *guard, uint64_t caps)
{
    if (pool)
        setenv("DEVQ_MEM_POOL", pool, 1);
    else
        unsetenv("DEVQ_MEM_POOL");
    setenv("DEVQ_MEM_GUARD", guard, 1);
    devq_device *dev = NULL;
    int r = devq_device_open(conf_backend(), &dev);
    /* Refused only where the backend lacks what the setting needs. */
    if (r == -ENOTSUP && ((pool && !strcmp(pool, "native") && !(caps & DEVQ_CAP_ASYNC_ALLOC)) ||
                          (!strcmp(guard, "1") && !(caps & DEVQ_CAP_HOST_VISIBLE))))
        return;
    ck_assert_msg(r == 0, "DEVQ_MEM_POOL=%s DEVQ_MEM_GUARD=%s: %s", pool ? pool : "(unset)", guard,
                  devq_errmsg());
    devq_queue *q = conf_queue(dev);
    size_t n = sizeof align_sizes / sizeof *align_sizes;
    devq_buffer *bufs[sizeof align_sizes / sizeof *align_sizes][ALIGN_COPIES][2];
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < ALIGN_COPIES; c++)
            for (int ordered = 0; ordered < 2; ordered++) {
                devq_buffer **b = &bufs[i][c][ordered];
                ck_assert_msg(devq_buffer_alloc(dev, align_sizes[i], ordered ? q : NULL, 0, b) == 0,
                              "alloc %zu: %s", align_sizes[i], devq_errmsg());
                check_aligned(*b, align_sizes[i], pool ? pool : "(unset)", guard, ordered);
            }
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < ALIGN_COPIES; c++)
            for (int ordered = 0; ordered < 2; ordered++)
                ck_assert_int_eq(devq_buffer_free(bufs[i][c][ordered], ordered ? q : NULL), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}

START_TEST(every_base_aligns_to_256_bytes)
{
    const char *pools[] = { NULL, "native", "devq", "direct" }, *guards[] = { "0", "1" };
    char *saved_pool = getenv("DEVQ_MEM_POOL") ? strdup(getenv("DEVQ_MEM_POOL")) : NULL;
    char *saved_guard = getenv("DEVQ_MEM_GUARD") ? strdup(getenv("DEVQ_MEM_GUARD")) : NULL;
    devq_device *dev = conf_open();
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    devq_device_close(dev); /* each case opens it anew, with its own stack */
    for (size_t p = 0; p < 4; p++)
        for (size_t g = 0; g < 2; g++)
            align_case(pools[p], guards[g], info.caps);
    if (saved_pool)
        setenv("DEVQ_MEM_POOL", saved_pool, 1);
    else
        unsetenv("DEVQ_MEM_POOL");
    if (saved_guard)
        setenv("DEVQ_MEM_GUARD", saved_guard, 1);
    else
        unsetenv("DEVQ_MEM_GUARD");
    free(saved_pool);
    free(saved_guard);
}
END_TEST

/* A buffer written on one queue and read on another, then freed in
 * stream order; returns with the free issued. */
static void used_on_two_then_freed(devq_device *dev, devq_queue *a, devq_queue *b)
{
    devq_buffer *buf, *dst = conf_buffer(dev, 4096);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, a, 0, &buf), 0);
    ck_assert_int_eq(devq_queue_fill(a, buf, 0, 4096, 7), 0);
    ck_assert_int_eq(devq_queue_submit(a), 0);
    ck_assert_int_eq(devq_queue_copy(b, dst, 0, buf, 0, 4096), 0);
    ck_assert_int_eq(devq_queue_submit(b), 0);
    ck_assert_int_eq(devq_buffer_free(buf, NULL), 0);
    ck_assert_int_eq(devq_queue_finish(b, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(dst, NULL), 0);
}

/* When the queues are idle the stats are true without devq_mem_reap:
 * finish completes the stream-ordered frees its tail reached (it used to
 * leave pending_frees at 1 until an explicit reap). */
START_TEST(idle_stats_true_after_finish)
{
    devq_device *dev = conf_open();
    devq_queue *a = conf_queue(dev), *b = conf_queue(dev);
    devq_mem_stats before, after;
    ck_assert_int_eq(devq_mem_stats_get(dev, &before), 0);
    used_on_two_then_freed(dev, a, b);
    ck_assert_int_eq(devq_queue_finish(a, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(b, 10 * SEC), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &after), 0);
    ck_assert_msg(after.pending_frees == 0, "pending_frees %llu after both queues finished",
                  (unsigned long long)after.pending_frees);
    ck_assert_uint_eq(after.bytes_outstanding, before.bytes_outstanding);
    devq_queue_destroy(a);
    devq_queue_destroy(b);
    devq_device_close(dev);
}
END_TEST

/* Without finish either: batches completing later let the notifier reap
 * the frees before them. */
START_TEST(frees_reaped_as_work_completes)
{
    devq_device *dev = conf_open();
    devq_queue *a = conf_queue(dev), *b = conf_queue(dev);
    used_on_two_then_freed(dev, a, b);
    devq_signal *s = conf_signal(0);
    for (uint64_t v = 1; v <= 3; v++) { /* later work on both queues, waited on the host */
        ck_assert_int_eq(devq_queue_signal(a, s, 2 * v - 1), 0);
        ck_assert_int_eq(devq_queue_submit(a), 0);
        ck_assert_int_eq(devq_queue_wait(b, s, 2 * v - 1), 0);
        ck_assert_int_eq(devq_queue_signal(b, s, 2 * v), 0);
        ck_assert_int_eq(devq_queue_submit(b), 0);
        ck_assert_int_eq(devq_signal_wait(s, 2 * v, 10 * SEC), 0);
    }
    devq_mem_stats st = { .pending_frees = 1 };
    for (int i = 0; i < 200 && st.pending_frees; i++) {
        conf_sleep_ms(5);
        ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    }
    ck_assert_msg(st.pending_frees == 0, "pending_frees %llu with no finish and no reap",
                  (unsigned long long)st.pending_frees);
    devq_signal_destroy(s);
    devq_queue_destroy(a);
    devq_queue_destroy(b);
    devq_device_close(dev);
}
END_TEST

/* ---- the queue's buffer cache (buffer.c): what it must not change ---- */

/* The number in b's label ("buffer #7 (...)" or "buffer "w" (#7, ...)"),
 * read from the message a refused name gives, and whether it is named. */
static unsigned label_number(devq_buffer *b, int *named)
{
    ck_assert_int_eq(devq_buffer_set_name(b, "bad\x01name"), -EINVAL);
    const char *m = strstr(devq_errmsg(), "#");
    ck_assert_ptr_nonnull(m);
    *named = strstr(devq_errmsg(), "buffer \"") != NULL;
    return (unsigned)strtoul(m + 1, NULL, 10);
}

/* Freed on q and allocated again on q at once: the same memory may come
 * back (the pool's rule, and the cache's), but as a new buffer: a new
 * number, no name, not failed, 256-byte aligned; and the stats count
 * every pair once the queue finishes. */
START_TEST(freed_and_allocated_again_on_one_queue)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_mem_stats s0, s1;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s0), 0);
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, q, 3, &b), 0);
    ck_assert_int_eq(devq_buffer_set_name(b, "first"), 0);
    int named;
    unsigned n = label_number(b, &named);
    ck_assert(named);
    enum { PAIRS = 1000 };
    for (int i = 0; i < PAIRS; i++) {
        ck_assert_int_eq(devq_buffer_free(b, q), 0);
        ck_assert_int_eq(devq_buffer_alloc(dev, 4096, q, 3, &b), 0);
        ck_assert_uint_eq((uintptr_t)devq_buffer_device_ptr(b) % 256, 0);
        ck_assert_int_eq(devq_buffer_status(b), 0);
        unsigned m = label_number(b, &named);
        ck_assert_msg(m > n && !named, "reallocated buffer is #%u (named %d) after #%u", m, named, n);
        n = m;
    }
    unsigned char pattern[4096], out[4096];
    memset(pattern, 0x3c, sizeof pattern);
    conf_upload(q, b, pattern, sizeof pattern);
    conf_download(q, out, b, sizeof out);
    ck_assert_mem_eq(out, pattern, sizeof out);
    ck_assert_int_eq(devq_buffer_free(b, q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.allocations - s0.allocations, PAIRS + 1);
    ck_assert_uint_eq(s1.frees - s0.frees, PAIRS + 1);
    ck_assert_uint_eq(s1.bytes_outstanding, s0.bytes_outstanding);
    ck_assert_uint_eq(s1.pending_frees, 0);
    devq_mem_usage u;
    ck_assert_int_eq(devq_resource_usage_by_tag(devq_device_resource(dev), 3, &u), 0);
    ck_assert_uint_eq(u.count, PAIRS + 1);
    ck_assert_uint_eq(u.current, 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A buffer a second queue reads (held back by a signal) and the first
 * queue frees: what the first queue allocates next must not overwrite it
 * before the reader is past it, nor may the reader's copy see it. */
START_TEST(buffer_used_on_another_queue_is_not_recycled_early)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_signal *go = conf_signal(0);
    enum { N = 64 << 10 };
    devq_buffer *src, *dst = conf_buffer(dev, N), *fresh[4];
    ck_assert_int_eq(devq_buffer_alloc(dev, N, q1, 0, &src), 0);
    ck_assert_int_eq(devq_queue_fill(q1, src, 0, N, 0xab), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_wait(q2, go, 1), 0);
    ck_assert_int_eq(devq_queue_copy(q2, dst, 0, src, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_buffer_free(src, q1), 0);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(devq_buffer_alloc(dev, N, q1, 0, &fresh[i]), 0);
        ck_assert_int_eq(devq_queue_fill(q1, fresh[i], 0, N, 0x00), 0);
        ck_assert_int_eq(devq_queue_submit(q1), 0);
    }
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    unsigned char *out = malloc(N);
    conf_download(q2, out, dst, N);
    for (size_t i = 0; i < N; i++)
        if (out[i] != 0xab)
            ck_abort_msg("byte %zu is 0x%02x: the freed buffer was reused before q2 read it", i, out[i]);
    free(out);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(devq_buffer_free(fresh[i], q1), 0);
    ck_assert_int_eq(devq_buffer_free(dst, NULL), 0);
    devq_signal_destroy(go);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

/* DEVQ_MEM_BUDGET (1 MiB): buffers kept for reuse (by q, or by the
 * device with no queue) do not make a request that fits fail, and one
 * that does not fit is still refused. */
void conf_mem_budget_case(devq_device *dev, devq_queue *q)
{
    devq_buffer *a, *b, *c;
    for (int i = 0; i < 3; i++) { /* freed: kept */
        ck_assert_int_eq(devq_buffer_alloc(dev, (size_t)(512 << 10) >> (q ? 0 : i), q, 0, &a), 0);
        ck_assert_int_eq(devq_buffer_free(a, q), 0);
    }
    ck_assert_msg(devq_buffer_alloc(dev, 768 << 10, q, 0, &b) == 0, "768 KiB of 1 MiB, nothing live: %s",
                  devq_errmsg());
    ck_assert_int_eq(devq_buffer_alloc(dev, 512 << 10, q, 0, &c), -ENOMEM);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "budget"));
    ck_assert_int_eq(devq_buffer_free(b, q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 1 << 20, q, 0, &c), 0);
    ck_assert_int_eq(devq_buffer_free(c, q), 0);
    if (q)
        ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
}

START_TEST(budget_refusal_exact_with_freed_buffers_kept)
{
    devq_device *dev;
    int r = conf_open_env("DEVQ_MEM_BUDGET", "1M", &dev);
    ck_assert_msg(r == 0, "%s", devq_errmsg());
    devq_queue *q = conf_queue(dev);
    conf_mem_budget_case(dev, q);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* DEVQ_MEM_GUARD: every alloc and free still reaches the guard (freed on
 * q, or with no queue), so a write after the free is caught. */
void conf_mem_guard_case(devq_device *dev, devq_queue *q)
{
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 300, q, 6, &b), 0);
    unsigned char *h = devq_buffer_host_ptr(b);
    ck_assert_int_eq(devq_buffer_free(b, q), 0);
    if (q)
        ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    h[10] = 0x77;                   /* written after its free (still quarantined) */
    for (int i = 0; i < 100; i++) { /* more frees push it out of quarantine */
        devq_buffer *o;
        ck_assert_int_eq(devq_buffer_alloc(dev, 300, q, 0, &o), 0);
        ck_assert_int_eq(devq_buffer_free(o, q), 0);
    }
    if (q)
        ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    int r = devq_mem_reap(dev);
    ck_assert_msg(r == -EFAULT && strstr(devq_errmsg(), "use after free"), "reap: %d %s", r, devq_errmsg());
}

START_TEST(guard_sees_frees_on_the_alloc_queue)
{
    devq_device *dev;
    int r = conf_open_env("DEVQ_MEM_GUARD", "1", &dev);
    if (r == -ENOTSUP)
        return; /* no host-visible memory: no guard */
    ck_assert_msg(r == 0, "%s", devq_errmsg());
    devq_queue *q = conf_queue(dev);
    conf_mem_guard_case(dev, q);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* Pairs on one queue from two threads while a third reads the stats
 * (each read gives the kept buffers back): nothing lost, counts exact. */
struct pair_loop {
    devq_device *dev;
    devq_queue *q;
    size_t bytes;
    int n;
};

static void *pairs_thread(void *arg)
{
    struct pair_loop *p = arg;
    for (int i = 0; i < p->n; i++) {
        devq_buffer *b;
        ck_assert_int_eq(devq_buffer_alloc(p->dev, p->bytes, p->q, 4, &b), 0);
        ck_assert_int_eq(devq_buffer_free(b, p->q), 0);
    }
    return NULL;
}

static void *stats_thread(void *arg)
{
    struct pair_loop *p = arg;
    for (int i = 0; i < p->n; i++) {
        devq_mem_stats st;
        ck_assert_int_eq(devq_mem_stats_get(p->dev, &st), 0);
    }
    return NULL;
}

START_TEST(kept_buffers_with_threads_and_stats)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_mem_stats s0, s1;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s0), 0);
    enum { N = 3000 };
    struct pair_loop a = { dev, q, 256, N }, b = { dev, q, 4096, N }, c = { dev, q, 0, N / 10 };
    pthread_t t[3];
    ck_assert_int_eq(pthread_create(&t[0], NULL, pairs_thread, &a), 0);
    ck_assert_int_eq(pthread_create(&t[1], NULL, pairs_thread, &b), 0);
    ck_assert_int_eq(pthread_create(&t[2], NULL, stats_thread, &c), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.allocations - s0.allocations, 2 * N);
    ck_assert_uint_eq(s1.frees - s0.frees, 2 * N);
    ck_assert_uint_eq(s1.bytes_outstanding, s0.bytes_outstanding);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* devq_mem_reap from a host function while another thread submits:
 * the host function runs on a stream's callback thread, which must not
 * wait for the device lock nor make backend stream calls (CUDA forbids
 * them in host callbacks); devq_mem_reap(3) hands the reap to the
 * notifier there.  The frees of the submitting thread are stream
 * ordered on its queue, so a reap that sealed them here (recording a
 * fence on that queue's stream) would race the submits (TSan). */
struct reap_ctx {
    devq_device *dev;
    _Atomic int calls, failed;
};

static void reap_in_host_fn(void *arg)
{
    struct reap_ctx *c = arg;
    if (devq_mem_reap(c->dev) != 0)
        atomic_fetch_add(&c->failed, 1);
    atomic_fetch_add(&c->calls, 1);
}

static void *alloc_free_submit(void *arg)
{
    struct pair_loop *p = arg;
    for (int i = 0; i < p->n; i++) {
        /* Two of a size: the second free finds its stream's cached slot
         * taken and waits unfenced, for a reap to seal it. */
        devq_buffer *b[2];
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(devq_buffer_alloc(p->dev, p->bytes, p->q, 5, &b[k]), 0);
            ck_assert_int_eq(devq_queue_fill(p->q, b[k], 0, p->bytes, (int)i), 0);
        }
        for (int k = 0; k < 2; k++)
            ck_assert_int_eq(devq_buffer_free(b[k], p->q), 0);
        ck_assert_int_eq(devq_queue_submit(p->q), 0);
    }
    return NULL;
}

START_TEST(reap_from_host_fn_while_submitting)
{
    devq_device *dev = conf_open();
    devq_queue *a = conf_queue(dev), *b = conf_queue(dev);
    devq_mem_stats s0, s1;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s0), 0);
    enum { N = 400 };
    struct reap_ctx c = { .dev = dev };
    struct pair_loop p = { dev, b, 4096, N };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_free_submit, &p), 0);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(devq_queue_host_fn(a, reap_in_host_fn, &c), 0);
        ck_assert_int_eq(devq_queue_submit(a), 0);
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(devq_queue_finish(a, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(b, 30 * SEC), 0);
    ck_assert_int_eq(atomic_load(&c.calls), N);
    ck_assert_int_eq(atomic_load(&c.failed), 0);
    /* Nothing lost: every free completes (a GPU's fence recorded by one
     * reap may be reached only by the next). */
    uint64_t pending = 1;
    for (int i = 0; i < 200 && pending; i++) {
        ck_assert_int_eq(devq_mem_reap(dev), 0);
        ck_assert_int_eq(devq_mem_stats_get(dev, &s1), 0);
        pending = s1.pending_frees;
        if (pending)
            conf_sleep_ms(5);
    }
    ck_assert_msg(pending == 0, "%llu frees still pending", (unsigned long long)pending);
    ck_assert_uint_eq(s1.frees - s0.frees, 2 * N);
    ck_assert_uint_eq(s1.bytes_outstanding, s0.bytes_outstanding);
    devq_queue_destroy(a);
    devq_queue_destroy(b);
    devq_device_close(dev);
}
END_TEST

Suite *conf_memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, free_while_other_stream_reads);
    tcase_add_test(tc, three_stream_steal);
    tcase_add_test(tc, free_after_alloc_queue_destroyed);
    tcase_add_test(tc, free_with_unsubmitted_use_waits_for_it);
    tcase_add_test(tc, buffer_queries);
    tcase_add_test(tc, every_base_aligns_to_256_bytes);
    tcase_add_test(tc, idle_stats_true_after_finish);
    tcase_add_test(tc, frees_reaped_as_work_completes);
    tcase_add_test(tc, freed_and_allocated_again_on_one_queue);
    tcase_add_test(tc, buffer_used_on_another_queue_is_not_recycled_early);
    tcase_add_test(tc, budget_refusal_exact_with_freed_buffers_kept);
    tcase_add_test(tc, guard_sees_frees_on_the_alloc_queue);
    tcase_add_test(tc, kept_buffers_with_threads_and_stats);
    tcase_add_test(tc, reap_from_host_fn_while_submitting);
    suite_add_tcase(s, tc);
    return s;
}
