/* SPDX-License-Identifier: MIT */
/* Numbers in names (devq(7) NAMES), exactly, in a fresh process per case
 * (numbers are per process): the program's first signal is signal #1
 * after lib made signals of its own, and queues are numbered per process
 * across devices, not per device.  The cpu backend has two ordinals.
 * Backend-agnostic checks are in tests/conformance/conf_names.c. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <devq/devq.h>
#include "../helpers/check_main.h"

static void open_cpu(const char *spec, devq_device **dev)
{
    ck_assert_msg(devq_device_open(spec, dev) == 0, "%s: %s", spec, devq_errmsg());
}

/* devq_errmsg() of a poll of a queue blocked on s: it names the queue. */
static const char *blocked_queue_message(devq_queue *q, devq_signal *s)
{
    ck_assert_int_eq(devq_queue_wait(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 0), -ETIMEDOUT);
    return devq_errmsg();
}

START_TEST(first_user_signal_is_number_1)
{
    devq_device *dev;
    open_cpu("cpu", &dev);
    devq_queue *q1, *q2;
    devq_buffer *b;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 256, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_queue_fill(q1, b, 0, 256, 1), 0); /* q2 is ordered after q1 */
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_fill(q2, b, 0, 256, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_queue_finish(q2, DEVQ_TIMEOUT_INFINITE), 0);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(5, &s), 0);
    ck_assert_int_eq(devq_signal_set(s, 5), -EINVAL);
    ck_assert_str_eq(devq_errmsg(), "devq_signal_set: signal #1: value 5 is not above the current "
                                    "value 5 (values only rise)");
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_signal_destroy(s);
    devq_device_close(dev);
}
END_TEST

START_TEST(queues_numbered_per_process)
{
    devq_device *d0, *d1;
    open_cpu("cpu:0", &d0);
    open_cpu("cpu:1", &d1);
    devq_queue *q0, *q1;
    ck_assert_int_eq(devq_queue_create(d0, NULL, &q0), 0);
    ck_assert_int_eq(devq_queue_create(d1, NULL, &q1), 0); /* the first queue of cpu:1 */
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    const char *m = blocked_queue_message(q1, s);
    ck_assert_msg(strstr(m, "timed out: queue #2 on cpu:1:"), "%s", m);
    m = blocked_queue_message(q0, s);
    ck_assert_msg(strstr(m, "timed out: queue #1 on cpu:0:"), "%s", m);
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_queue_finish(q1, DEVQ_TIMEOUT_INFINITE), 0);
    devq_queue_destroy(q0);
    devq_queue_destroy(q1);
    devq_signal_destroy(s);
    devq_device_close(d0);
    devq_device_close(d1);
}
END_TEST

START_TEST(failed_creates_take_no_number)
{
    devq_device *dev;
    open_cpu("cpu", &dev);
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 0, NULL, 0, &b), -EINVAL);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64 << 10, NULL, 5, &b), 0);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_queue_fill(q, b, 1 << 20, 1, 0), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "outside buffer #1 (tag 5, 64 KiB)"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    setenv("DEVQ_CPU_DEVICES", "2", 1); /* cpu:0 and cpu:1 */
    Suite *su = suite_create("names");
    TCase *tc = tcase_create("numbers");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, first_user_signal_is_number_1);
    tcase_add_test(tc, queues_numbered_per_process);
    tcase_add_test(tc, failed_creates_take_no_number);
    suite_add_tcase(su, tc);
    return check_run_forked(su, "test_names");
}
