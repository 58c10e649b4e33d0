/* SPDX-License-Identifier: MIT */
/* A backend that refuses an op of a one-shot batch (here: an injected
 * cuMemsetD8Async failure on the emulated CUDA driver) fails the batch
 * from that op the same way on the straight line (lib/queue/straight.c:
 * fill + signal) as on the general path (a batch with a wait, which
 * devq__issue takes): submit returns the backend's error, the signal
 * fails with it, the buffer the refused fill would have written is
 * failed, and the queue goes on with the next batch. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/cuda_emu_check.h"
#include <devq/devq.h>

#define SEC 1000000000ull

/* The first fill is refused; `with_wait` puts a reached wait first
 * (general path), else the batch is fill + signal (straight). */
static void refused_fill(int with_wait)
{
    setenv("DEVQ_EMU_FAIL", "cuMemsetD8Async:1:CUDA_ERROR_INVALID_VALUE", 1);
    devq_device *dev;
    int r = devq_device_open("cuda", &dev);
    ck_assert_msg(r == 0, "open cuda (emulated): %d %s", r, devq_errmsg());
    devq_queue *q;
    devq_buffer *b;
    devq_signal *ready, *s1, *s2;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(1, &ready), 0);
    ck_assert_int_eq(devq_signal_create(0, &s1), 0);
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    if (with_wait)
        ck_assert_int_eq(devq_queue_wait(q, ready, 1), 0);
    ck_assert_int_eq(devq_queue_fill(q, b, 0, 64, 5), 0);
    ck_assert_int_eq(devq_queue_signal(q, s1, 1), 0);
    r = devq_queue_submit(q);
    ck_assert_msg(r < 0, "submit: %d", r);
    ck_assert_int_eq(devq_signal_wait(s1, 1, 10 * SEC), r);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "cuMemsetD8Async"));
    ck_assert_int_eq(devq_buffer_status(b), r);
    /* The next batch runs: the injected failure was the first call only. */
    unsigned char host[64];
    ck_assert_int_eq(devq_queue_fill(q, b, 0, 64, 7), 0);
    ck_assert_int_eq(devq_queue_read(q, host, b, 0, 64), 0);
    ck_assert_int_eq(devq_queue_signal(q, s2, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s2, 1, 10 * SEC), 0);
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(host[i], 7);
    devq_signal_destroy(ready);
    devq_signal_destroy(s1);
    devq_signal_destroy(s2);
    devq_buffer_free(b, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
}

START_TEST(straight_batch_refused)
{
    refused_fill(0);
}
END_TEST

START_TEST(general_batch_refused)
{
    refused_fill(1);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("refused");
    tcase_add_test(tc, straight_batch_refused);
    tcase_add_test(tc, general_batch_refused);
    return cuda_emu_run(tc, "straight refused");
}
