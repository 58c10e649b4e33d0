/* SPDX-License-Identifier: MIT */
/* The device's idle cache (lib/queue/buffer.c): a buffer allocated and
 * freed with no queue, never used on a stream, is kept for the next
 * allocation of its size and tag with no queue.  What it must not
 * change: a new buffer each time, exact statistics and budget, the
 * guard's view, and a device that closes with buffers kept. */
#include "conf.h"
#include <devq/devq_resource.h>
#include <pthread.h>

/* The number in b's label, and whether it is named (see conf_memory.c). */
static unsigned idle_label_number(devq_buffer *b, int *named)
{
    ck_assert_int_eq(devq_buffer_set_name(b, "bad\x01name"), -EINVAL);
    const char *m = strstr(devq_errmsg(), "#");
    ck_assert_ptr_nonnull(m);
    *named = strstr(devq_errmsg(), "buffer \"") != NULL;
    return (unsigned)strtoul(m + 1, NULL, 10);
}

/* Freed with no queue and allocated again at once: a new buffer (new
 * number, unnamed, not failed, aligned, usable), and the stats count
 * every pair when read. */
START_TEST(freed_and_allocated_again_with_no_queue)
{
    devq_device *dev = conf_open();
    devq_mem_stats s0, s1;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s0), 0);
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 7, &b), 0);
    ck_assert_int_eq(devq_buffer_set_name(b, "first"), 0);
    int named;
    unsigned n = idle_label_number(b, &named);
    ck_assert(named);
    enum { PAIRS = 1000 };
    for (int i = 0; i < PAIRS; i++) {
        ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
        ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 7, &b), 0);
        ck_assert_uint_eq((uintptr_t)devq_buffer_device_ptr(b) % 256, 0);
        ck_assert_int_eq(devq_buffer_status(b), 0);
        unsigned m = idle_label_number(b, &named);
        ck_assert_msg(m > n && !named, "reallocated buffer is #%u (named %d) after #%u", m, named, n);
        n = m;
    }
    devq_queue *q = conf_queue(dev);
    unsigned char pattern[4096], out[4096];
    memset(pattern, 0x5a, sizeof pattern);
    conf_upload(q, b, pattern, sizeof pattern);
    conf_download(q, out, b, sizeof out);
    ck_assert_mem_eq(out, pattern, sizeof out);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.allocations - s0.allocations, PAIRS + 1);
    ck_assert_uint_eq(s1.frees - s0.frees, PAIRS + 1);
    ck_assert_uint_eq(s1.bytes_outstanding, s0.bytes_outstanding);
    devq_mem_usage u;
    ck_assert_int_eq(devq_resource_usage_by_tag(devq_device_resource(dev), 7, &u), 0);
    ck_assert_uint_eq(u.count, PAIRS + 1);
    ck_assert_uint_eq(u.current, 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A buffer used on a stream and freed with no queue is not kept: its
 * free is ordered after that use (the next allocation must not get
 * memory a stream may still write). */
START_TEST(used_buffer_freed_with_no_queue_is_not_kept)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *go = conf_signal(0);
    enum { N = 64 << 10 };
    devq_buffer *b, *c;
    ck_assert_int_eq(devq_buffer_alloc(dev, N, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_queue_wait(q, go, 1), 0); /* the fill cannot run yet */
    ck_assert_int_eq(devq_queue_fill(q, b, 0, N, 0x11), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    void *old = devq_buffer_device_ptr(b);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, N, NULL, 0, &c), 0);
    ck_assert_msg(devq_buffer_device_ptr(c) != old, "memory a pending fill writes was handed out again");
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(c, NULL), 0);
    devq_mem_stats s;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s), 0);
    ck_assert_uint_eq(s.pending_frees, 0);
    devq_signal_destroy(go);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* Kept buffers hold no reference to their device: closing it with some
 * kept tears it down (a reopened device starts with fresh statistics),
 * and nothing leaks (ASan, valgrind). */
START_TEST(device_closes_with_idle_buffers_kept)
{
    devq_device *dev = conf_open();
    for (size_t sz = 256; sz <= (1u << 20); sz *= 16) {
        devq_buffer *b;
        ck_assert_int_eq(devq_buffer_alloc(dev, sz, NULL, 0, &b), 0);
        ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    }
    devq_device_close(dev);
    dev = conf_open();
    devq_mem_stats s;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s), 0);
    ck_assert_msg(s.allocations == 0 && s.bytes_outstanding == 0,
                  "the device stayed open: %llu allocations, %llu bytes outstanding",
                  (unsigned long long)s.allocations, (unsigned long long)s.bytes_outstanding);
    devq_device_close(dev);
}
END_TEST

/* DEVQ_MEM_BUDGET: buffers the device keeps (freed with no queue) do
 * not make a request that fits fail (conf_memory.c's case, no queue). */
START_TEST(budget_exact_with_idle_buffers_kept)
{
    devq_device *dev;
    int r = conf_open_env("DEVQ_MEM_BUDGET", "1M", &dev);
    ck_assert_msg(r == 0, "%s", devq_errmsg());
    conf_mem_budget_case(dev, NULL);
    devq_device_close(dev);
}
END_TEST

/* DEVQ_MEM_GUARD: every free with no queue still reaches the guard, so
 * a write after it is caught. */
START_TEST(guard_sees_frees_with_no_queue)
{
    devq_device *dev;
    int r = conf_open_env("DEVQ_MEM_GUARD", "1", &dev);
    if (r == -ENOTSUP)
        return; /* no host-visible memory: no guard */
    ck_assert_msg(r == 0, "%s", devq_errmsg());
    conf_mem_guard_case(dev, NULL);
    devq_device_close(dev);
}
END_TEST

/* Pairs with no queue from two threads while a third reads the stats:
 * every read is exact (each thread has at most one buffer out, live or
 * kept: the stack never sees more), and so are the totals after. */
struct idle_loop {
    devq_device *dev;
    size_t bytes;
    int n;
    devq_mem_stats base;
};

static void *idle_pairs_thread(void *arg)
{
    struct idle_loop *p = arg;
    for (int i = 0; i < p->n; i++) {
        devq_buffer *b;
        ck_assert_int_eq(devq_buffer_alloc(p->dev, p->bytes, NULL, 4, &b), 0);
        ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    }
    return NULL;
}

static void *idle_stats_thread(void *arg)
{
    struct idle_loop *p = arg;
    for (int i = 0; i < p->n; i++) {
        devq_mem_stats st;
        ck_assert_int_eq(devq_mem_stats_get(p->dev, &st), 0);
        uint64_t out = st.allocations - st.frees, base = p->base.allocations - p->base.frees;
        ck_assert_msg(out >= base && out - base <= 2, "%llu buffers outstanding over the %llu before",
                      (unsigned long long)(out - base), (unsigned long long)base);
        ck_assert_uint_le(st.bytes_outstanding - p->base.bytes_outstanding, 256 + 4096);
    }
    return NULL;
}

START_TEST(idle_buffers_with_threads_and_stats)
{
    devq_device *dev = conf_open();
    devq_mem_stats s0, s1;
    ck_assert_int_eq(devq_mem_stats_get(dev, &s0), 0);
    enum { N = 3000 };
    struct idle_loop a = { dev, 256, N, s0 }, b = { dev, 4096, N, s0 }, c = { dev, 0, N / 10, s0 };
    pthread_t t[3];
    ck_assert_int_eq(pthread_create(&t[0], NULL, idle_pairs_thread, &a), 0);
    ck_assert_int_eq(pthread_create(&t[1], NULL, idle_pairs_thread, &b), 0);
    ck_assert_int_eq(pthread_create(&t[2], NULL, idle_stats_thread, &c), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.allocations - s0.allocations, 2 * N);
    ck_assert_uint_eq(s1.frees - s0.frees, 2 * N);
    ck_assert_uint_eq(s1.bytes_outstanding, s0.bytes_outstanding);
    devq_mem_usage u;
    ck_assert_int_eq(devq_resource_usage_by_tag(devq_device_resource(dev), 4, &u), 0);
    ck_assert_uint_eq(u.count, 2 * N);
    ck_assert_uint_eq(u.current, 0);
    devq_device_close(dev);
}
END_TEST

Suite *conf_mem_idle_suite(void)
{
    Suite *s = suite_create("memidle");
    TCase *tc = tcase_create("memidle");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, freed_and_allocated_again_with_no_queue);
    tcase_add_test(tc, used_buffer_freed_with_no_queue_is_not_kept);
    tcase_add_test(tc, device_closes_with_idle_buffers_kept);
    tcase_add_test(tc, budget_exact_with_idle_buffers_kept);
    tcase_add_test(tc, guard_sees_frees_with_no_queue);
    tcase_add_test(tc, idle_buffers_with_threads_and_stats);
    suite_add_tcase(s, tc);
    return s;
}
