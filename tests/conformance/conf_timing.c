/* SPDX-License-Identifier: MIT */
/* Device timestamps and the event pool. */
#include "conf.h"

START_TEST(timestamps_measure_a_sleeping_kernel)
{
    devq_device *dev = conf_open();
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    devq_queue *q = conf_queue(dev);
    devq_timestamp *a, *b, *c;
    if (!(info.caps & DEVQ_CAP_TIMING)) {
        ck_assert_int_eq(devq_queue_timestamp(q, &a), -ENOTSUP);
        goto out;
    }
    devq_kernel *k = conf_kernel(dev, "sleep_ms");
    uint32_t ms = 0;
    devq_arg arg = DEVQ_ARG_VAL(&ms);
    devq_launch l = conf_launch1(1, 1);
    /* A driver may compile at the first launch (lavapipe does, for up to
     * 200 ms on a loaded machine): keep that out of the measurement. */
    ck_assert_int_eq(devq_queue_exec(q, k, &arg, 1, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ms = 20;
    ck_assert_int_eq(devq_queue_timestamp(q, &a), 0);
    ck_assert_int_eq(devq_queue_exec(q, k, &arg, 1, &l), 0);
    ck_assert_int_eq(devq_queue_timestamp(q, &b), 0);
    ck_assert_int_eq(devq_queue_timestamp(q, &c), 0);
    uint64_t ns = 0;
    ck_assert_int_eq(devq_timestamp_elapsed(a, b, &ns), -EAGAIN); /* not submitted */
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_timestamp_elapsed(a, b, &ns), 0);
    /* The kernel spins at least 15 ms of its 20 (lavapipe ends loops
     * early); the upper bound only catches a unit error (x1000), never a
     * loaded machine. */
    ck_assert_msg(ns >= 15 * MS && ns <= 10 * SEC, "a 20 ms kernel measured %llu ns", (unsigned long long)ns);
    /* Monotonic by order, not by comparing two durations: c comes after b,
     * so a..c spans at least a..b. */
    uint64_t ns_ac = 0;
    ck_assert_int_eq(devq_timestamp_elapsed(a, c, &ns_ac), 0);
    ck_assert_uint_ge(ns_ac, ns);
    uint64_t ns2 = 0;
    ck_assert_int_eq(devq_timestamp_elapsed(b, c, &ns2), 0);
    ck_assert_uint_le(ns2, ns_ac);
    devq_timestamp_destroy(a);
    devq_timestamp_destroy(b);
    devq_timestamp_destroy(c);
    devq_kernel_destroy(k);
out:
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(event_pool_does_not_grow_past_in_flight_depth)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_buffer *buf = conf_buffer(dev, 64);
    devq_stats st;
    /* 10^5 batches that each need a cross-stream wait (an event). */
    for (int i = 0; i < 50000; i++) {
        ck_assert_int_eq(devq_queue_fill(i % 2 ? q1 : q2, buf, 0, 64, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_submit(i % 2 ? q1 : q2), 0);
        ck_assert_int_eq(devq_queue_submit(i % 2 ? q2 : q1), 0);
    }
    ck_assert_int_eq(devq_queue_finish(q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 30 * SEC), 0);
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    ck_assert_uint_ge(st.waits_inserted, 40000);
    ck_assert_uint_eq(st.events_in_use, 0);
    ck_assert_uint_le(st.events_pooled, 64);
    /* The pool grows under load and shrinks back when idle. */
    devq_buffer *many[64];
    devq_queue *qs[16];
    for (int i = 0; i < 16; i++)
        qs[i] = conf_queue(dev);
    for (int i = 0; i < 64; i++) {
        many[i] = conf_buffer(dev, 64);
        ck_assert_int_eq(devq_queue_fill(qs[i % 16], many[i], 0, 64, 1), 0);
        ck_assert_int_eq(devq_queue_submit(qs[i % 16]), 0);
    }
    devq_buffer *sink = conf_buffer(dev, 64 * 64);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(devq_queue_copy(q1, sink, (size_t)i * 64, many[i], 0, 64), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_finish(q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    ck_assert_uint_le(st.events_pooled, 8);
    for (int i = 0; i < 64; i++)
        devq_buffer_free(many[i], NULL);
    devq_buffer_free(sink, NULL);
    for (int i = 0; i < 16; i++)
        devq_queue_destroy(qs[i]);
    devq_buffer_free(buf, NULL);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

Suite *conf_timing_suite(void)
{
    Suite *s = suite_create("timing");
    TCase *tc = tcase_create("timing");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, timestamps_measure_a_sleeping_kernel);
    tcase_add_test(tc, event_pool_does_not_grow_past_in_flight_depth);
    suite_add_tcase(s, tc);
    return s;
}
