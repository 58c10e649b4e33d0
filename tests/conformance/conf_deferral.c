/* SPDX-License-Identifier: MIT */
/* Wait-before-signal: waits on values produced by the host, by another
 * queue later, or never; deferral keeps queue order; wait cycles. */
#include <stdatomic.h>
#include "conf.h"

static atomic_int log_n;
static atomic_int log_v[32];
static void log_fn(void *arg)
{
    int n = atomic_fetch_add(&log_n, 1);
    if (n < 32)
        atomic_store(&log_v[n], (int)(intptr_t)arg);
}

START_TEST(wait_before_host_signal)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    atomic_store(&log_n, 0);
    ck_assert_int_eq(devq_queue_wait(q, s, 5), 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    conf_sleep_ms(20);
    ck_assert_int_eq(atomic_load(&log_n), 0); /* really waits */
    ck_assert_int_eq(devq_queue_finish(q, 0), -ETIMEDOUT);
    ck_assert_int_eq(devq_signal_set(s, 4), 0);
    conf_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&log_n), 0); /* 4 < 5 */
    ck_assert_int_eq(devq_signal_set(s, 5), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&log_n), 1);
    devq_stats st;
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    /* Bridged: through the host (deferred) or a device-side value wait. */
    ck_assert_uint_ge(st.batches_deferred + st.signal_waits_native, 1);
    devq_signal_destroy(s);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(wait_before_signal_from_later_batch)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    atomic_store(&log_n, 0);
    ck_assert_int_eq(devq_queue_wait(q2, s, 1), 0);
    ck_assert_int_eq(devq_queue_host_fn(q2, log_fn, (void *)2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    conf_sleep_ms(5);
    ck_assert_int_eq(devq_queue_host_fn(q1, log_fn, (void *)1), 0);
    ck_assert_int_eq(devq_queue_signal(q1, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&log_n), 2);
    ck_assert_int_eq(atomic_load(&log_v[0]), 1);
    ck_assert_int_eq(atomic_load(&log_v[1]), 2);
    devq_signal_destroy(s);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

START_TEST(deferral_keeps_queue_order)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    atomic_store(&log_n, 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_wait(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)2), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    for (intptr_t i = 3; i < 10; i++) { /* no waits, but behind batch 2 */
        ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
    }
    for (int t = 0; t < 5000 && atomic_load(&log_n) < 1; t++) /* batch 1 runs... */
        conf_sleep_ms(1);
    conf_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&log_n), 1); /* ... and nothing after it */
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&log_n), 9);
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(atomic_load(&log_v[i]), i + 1);
    devq_signal_destroy(s);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(mid_batch_wait_defers_the_rest)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *s = conf_signal(0), *first = conf_signal(0);
    atomic_store(&log_n, 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)1), 0);
    ck_assert_int_eq(devq_queue_signal(q, first, 1), 0);
    ck_assert_int_eq(devq_queue_wait(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)2), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    /* The part before the wait runs now. */
    ck_assert_int_eq(devq_signal_wait(first, 1, 10 * SEC), 0);
    conf_sleep_ms(5);
    ck_assert_int_eq(atomic_load(&log_n), 1);
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&log_n), 2);
    devq_signal_destroy(s);
    devq_signal_destroy(first);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(cycle_detected_and_broken_by_host)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_signal *s1 = conf_signal(0), *s2 = conf_signal(0);
    ck_assert_int_eq(devq_queue_wait(q1, s1, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q1, s2, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_wait(q2, s2, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q2, s1, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 20 * MS), -ETIMEDOUT);
    ck_assert_msg(strstr(devq_errmsg(), "wait cycle"), "errmsg: %s", devq_errmsg());
    devq_stats st;
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    ck_assert_uint_ge(st.wait_cycles, 1);
    ck_assert_int_eq(devq_signal_set(s1, 1), 0); /* the host breaks it */
    ck_assert_int_eq(devq_queue_finish(q1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 10 * SEC), 0);
    ck_assert_uint_eq(devq_signal_value(s2), 1);
    devq_signal_destroy(s1);
    devq_signal_destroy(s2);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

START_TEST(destroy_cancels_deferred_batches)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *never = conf_signal(0), *out = conf_signal(0);
    atomic_store(&log_n, 0);
    ck_assert_int_eq(devq_queue_wait(q, never, 1), 0);
    ck_assert_int_eq(devq_queue_host_fn(q, log_fn, (void *)1), 0);
    ck_assert_int_eq(devq_queue_signal(q, out, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_queue_destroy(q); /* must not hang */
    ck_assert_int_eq(devq_signal_wait(out, 1, 10 * SEC), -ECANCELED);
    ck_assert_int_eq(atomic_load(&log_n), 0);
    devq_signal_destroy(never);
    devq_signal_destroy(out);
    devq_device_close(dev);
}
END_TEST

START_TEST(finish_timeout_names_the_wait)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_signal *s = conf_signal(7);
    ck_assert_int_eq(devq_queue_wait(q, s, 9), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * MS), -ETIMEDOUT);
    ck_assert_msg(strstr(devq_errmsg(), " >= 9") && strstr(devq_errmsg(), "value 7"), "errmsg: %s",
                  devq_errmsg());
    ck_assert_int_eq(devq_signal_set(s, 9), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_signal_destroy(s);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

Suite *conf_deferral_suite(void)
{
    Suite *s = suite_create("deferral");
    TCase *tc = tcase_create("deferral");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, wait_before_host_signal);
    tcase_add_test(tc, wait_before_signal_from_later_batch);
    tcase_add_test(tc, deferral_keeps_queue_order);
    tcase_add_test(tc, mid_batch_wait_defers_the_rest);
    tcase_add_test(tc, cycle_detected_and_broken_by_host);
    tcase_add_test(tc, destroy_cancels_deferred_batches);
    tcase_add_test(tc, finish_timeout_names_the_wait);
    suite_add_tcase(s, tc);
    return s;
}
