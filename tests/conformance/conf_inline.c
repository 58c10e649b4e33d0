/* SPDX-License-Identifier: MIT */
/* Batches of only signals (devq_queue_signal + submit), which a backend
 * with the stream_idle op completes at submit when nothing of the queue
 * is pending (lib/queue/inline.c).  On every backend they must keep the
 * order and the failure model: set only after all earlier work of the
 * queue, failed like the end callback would fail them, counted, and
 * visible to a waiter on another thread in order.  On cpu and vulkan
 * (which have the op) the fast path itself is checked too: a signal-only
 * batch on an idle queue is done when submit returns. */
#include <pthread.h>
#include <stdatomic.h>
#include "conf.h"

static int completes_at_submit(devq_device *dev)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    return !strcmp(info.backend, "cpu") || !strcmp(info.backend, "vulkan");
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

START_TEST(idle_queue_completes_a_signal_batch_at_submit)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev), *q2 = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_stats before, after;
    ck_assert_int_eq(devq_stats_get(dev, &before), 0);
    /* The stream's thread may still be returning from the callback that
     * finish waited for (vulkan: the stream is idle only after it): the
     * first batch done at submit shows the stream idle, and every later
     * one must be done at submit too. */
    uint64_t v0 = 0, t0 = now_ns();
    if (completes_at_submit(dev)) {
        do {
            ck_assert_int_eq(devq_queue_signal(q, s, ++v0), 0);
            ck_assert_int_eq(devq_queue_submit(q), 0);
        } while (devq_signal_value(s) != v0 && now_ns() - t0 < 10 * SEC);
        ck_assert_msg(devq_signal_value(s) == v0, "no batch of only a signal completed at submit in 10 s");
    }
    for (uint64_t v = v0 + 1; v <= v0 + 100; v++) {
        ck_assert_int_eq(devq_queue_signal(q, s, v), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        if (completes_at_submit(dev))
            ck_assert_uint_eq(devq_signal_value(s), v);
    }
    ck_assert_int_eq(devq_queue_submit(q), 0); /* an empty submit too */
    ck_assert_int_eq(devq_signal_wait(s, v0 + 100, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_stats_get(dev, &after), 0);
    ck_assert_uint_eq(after.batches_submitted - before.batches_submitted, v0 + 101);
    ck_assert_uint_eq(after.batches_completed - before.batches_completed, v0 + 101);
    ck_assert_uint_eq(after.batches_failed, before.batches_failed);
    /* Another queue ordered after all of q (q's timeline) goes on. */
    devq_queue *both[2] = { q2, q };
    ck_assert_int_eq(devq_barrier(both, 2), 0);
    ck_assert_int_eq(devq_queue_signal(q2, s, v0 + 101), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s, v0 + 101, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_queue_destroy(q);
    devq_queue_destroy(q2);
    devq_signal_destroy(s);
    devq_device_close(dev);
}
END_TEST

/* Ordered by events, not by the clock: a slow kernel copies a marker,
 * a read in its batch brings the copy to host memory, then a signal-only
 * batch follows.  Whenever the signal is seen set, the kernel's effect
 * (and the read after it) must already be visible; the loop reads the
 * marker only after it saw the signal, so a signal set early is caught
 * whatever the machine's load.  Where buffers are host-visible, the kernel's
 * output itself is checked the same way. */
START_TEST(signal_batch_behind_a_long_kernel_waits_for_it)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_kernel *k = conf_kernel(dev, "slow_copy");
    devq_signal *s = conf_signal(0);
    devq_buffer *src = conf_buffer(dev, 16), *dst = conf_buffer(dev, 16);
    const uint32_t marker[4] = { 0x600dcafeu, 1, 2, 3 }, zero[4] = { 0 };
    conf_upload(q, src, marker, sizeof marker);
    conf_upload(q, dst, zero, sizeof zero);
    /* 50 ms: long enough that a signal set early would be seen before
     * the marker, short enough for lavapipe, which ends an invocation's
     * loops after 65535 iterations in all (slow_copy.comp): a 300 ms
     * spin used them up and cut the copy after it short. */
    uint32_t ms = 50, n = sizeof marker;
    devq_arg a[4] = { DEVQ_ARG_BUF(src, DEVQ_READ), DEVQ_ARG_BUF(dst, DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                      DEVQ_ARG_VAL(&n) };
    devq_launch l = conf_launch1(1, 1);
    static uint32_t seen_by_read[4];
    memset(seen_by_read, 0, sizeof seen_by_read);
    const volatile uint32_t *out = devq_buffer_host_ptr(dst);

    ck_assert_int_eq(devq_queue_exec(q, k, a, 4, &l), 0);
    ck_assert_int_eq(devq_queue_read(q, seen_by_read, dst, 0, sizeof seen_by_read), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    uint64_t looks = 0;
    for (;;) {
        uint64_t v = devq_signal_value(s);
        looks++;
        if (v >= 1) {
            /* Read only once the signal is seen: its set is ordered after
             * the read op, so these reads race with nothing (TSan), and a
             * signal set before the kernel and the read finished shows as
             * a missing marker. */
            uint32_t read_word = seen_by_read[0];
            uint32_t out_word = out ? out[0] : marker[0];
            ck_assert_msg(read_word == marker[0],
                          "signal seen before the read after the kernel "
                          "(host word 0x%x after %llu looks)",
                          read_word, (unsigned long long)looks);
            ck_assert_msg(out_word == marker[0],
                          "signal seen before the kernel wrote its "
                          "output (0x%x)",
                          out_word);
            break;
        }
        ck_assert_int_eq(devq_signal_status(s), 0);
        int r = devq_signal_wait(s, 1, 1 * MS);
        ck_assert_msg(r == 0 || r == -ETIMEDOUT, "wait: %d %s", r, devq_errmsg());
        ck_assert_uint_lt(looks, 20000); /* 20 s at 1 ms a look: hung */
    }
    ck_assert_mem_eq(seen_by_read, marker, sizeof marker);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_buffer_free(src, NULL);
    devq_buffer_free(dst, NULL);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_signal_destroy(s);
    devq_device_close(dev);
}
END_TEST

/* The failure source: a batch waiting on a gate the test fails. */
static void gated_signal(devq_queue *q, devq_signal *gate, devq_signal *s, uint64_t v)
{
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, v), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
}

START_TEST(signal_batch_after_a_failed_batch_keeps_the_failure)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *gate = conf_signal(0), *s = conf_signal(0), *t = conf_signal(0);
    ck_assert_int_eq(devq_signal_set_name(gate, "gate"), 0);
    gated_signal(q, gate, s, 1);
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EIO); /* batch 1 done, failed */
    /* The queue is idle now: the next batches may complete at submit,
     * and must end as the end callback would end them: s stays failed
     * with its root cause, t (not involved) is set. */
    ck_assert_int_eq(devq_queue_signal(q, s, 2), 0);
    ck_assert_int_eq(devq_queue_signal(q, t, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s, 2, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "signal \"gate\""), "cause: %s", devq_errmsg());
    ck_assert_int_eq(devq_signal_wait(t, 1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0); /* reported once */
    devq_queue_destroy(q);
    devq_signal_destroy(gate);
    devq_signal_destroy(s);
    devq_signal_destroy(t);
    devq_device_close(dev);
}
END_TEST

START_TEST(signal_batch_behind_a_pending_failing_batch_fails)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *gate = conf_signal(0), *s = conf_signal(0), *t = conf_signal(0);
    ck_assert_int_eq(devq_signal_set_name(gate, "gate"), 0);
    gated_signal(q, gate, s, 1);
    ck_assert_int_eq(devq_queue_signal(q, s, 2), 0); /* behind batch 1, still waiting */
    ck_assert_int_eq(devq_queue_signal(q, t, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    conf_sleep_ms(20);
    ck_assert_uint_eq(devq_signal_value(s), 0);
    ck_assert_uint_eq(devq_signal_value(t), 0); /* not ahead of batch 1 */
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_eq(devq_signal_wait(s, 2, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "signal \"gate\""), "cause: %s", devq_errmsg());
    ck_assert_int_eq(devq_signal_wait(t, 1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EIO);
    devq_queue_destroy(q);
    devq_signal_destroy(gate);
    devq_signal_destroy(s);
    devq_signal_destroy(t);
    devq_device_close(dev);
}
END_TEST

START_TEST(signal_destroyed_between_record_and_submit)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    devq_signal_destroy(s); /* the batch holds its own reference */
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A waiter on another thread sees every value, in order, and with each
 * value the work of the batches up to it (a host function every few
 * batches counts); the submitter mixes batches that can complete at
 * submit (the queue idle after a finish, or behind completed ones) with
 * ones that go through the stream. */
#define STRESS_N 20000u

struct stress {
    devq_signal *s;
    _Atomic uint32_t fns;
    _Atomic int bad;
    char why[160];
};

static void count_fn(void *arg)
{
    struct stress *st = arg;
    atomic_fetch_add(&st->fns, 1);
}

static void *stress_waiter(void *arg)
{
    struct stress *st = arg;
    uint64_t last = 0;
    for (uint64_t i = 1; i <= STRESS_N; i++) {
        int r = devq_signal_wait(st->s, i, 10 * SEC);
        uint64_t v = devq_signal_value(st->s);
        uint32_t fns = atomic_load(&st->fns);
        if (r != 0 || v < i || v < last || fns < i / 7) {
            snprintf(st->why, sizeof st->why,
                     "value %llu: wait %d, value %llu after %llu, %u host fns (want %llu)",
                     (unsigned long long)i, r, (unsigned long long)v, (unsigned long long)last, fns,
                     (unsigned long long)(i / 7));
            atomic_store(&st->bad, 1);
            return NULL;
        }
        last = v;
    }
    return NULL;
}

START_TEST(waiter_sees_every_value_in_order)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    struct stress st = { .s = conf_signal(0) };
    pthread_t w;
    ck_assert_int_eq(pthread_create(&w, NULL, stress_waiter, &st), 0);
    uint64_t deadline = now_ns() + 60 * SEC;
    for (uint64_t i = 1; i <= STRESS_N && !atomic_load(&st.bad) && now_ns() < deadline; i++) {
        if (i % 7 == 0)
            ck_assert_int_eq(devq_queue_host_fn(q, count_fn, &st), 0);
        ck_assert_int_eq(devq_queue_signal(q, st.s, i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        if (i % 97 == 0)
            ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    }
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    if (devq_signal_value(st.s) < STRESS_N)
        devq_signal_fail(st.s, -ECANCELED); /* let the waiter go */
    pthread_join(w, NULL);
    ck_assert_msg(!atomic_load(&st.bad), "%s", st.why);
    ck_assert_uint_eq(devq_signal_value(st.s), STRESS_N);
    ck_assert_uint_eq(atomic_load(&st.fns), STRESS_N / 7);
    devq_queue_destroy(q);
    devq_signal_destroy(st.s);
    devq_device_close(dev);
}
END_TEST

Suite *conf_inline_suite(void)
{
    Suite *s = suite_create("inline");
    TCase *tc = tcase_create("signal-only batches");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, idle_queue_completes_a_signal_batch_at_submit);
    tcase_add_test(tc, signal_batch_behind_a_long_kernel_waits_for_it);
    tcase_add_test(tc, signal_batch_after_a_failed_batch_keeps_the_failure);
    tcase_add_test(tc, signal_batch_behind_a_pending_failing_batch_fails);
    tcase_add_test(tc, signal_destroyed_between_record_and_submit);
    tcase_add_test(tc, waiter_sees_every_value_in_order);
    suite_add_tcase(s, tc);
    return s;
}
