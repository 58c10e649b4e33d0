/* SPDX-License-Identifier: MIT */
/* A queue's completion order: finish and destroy rely on the queue's
 * timeline meaning "every batch up to N is done".  A batch whose end
 * callback cannot be queued (here: an injected cuStreamAddCallback
 * failure on the emulated CUDA driver, sticky, so the device is lost and
 * finish cannot fall back on waiting for the stream's tail) completes at
 * once, while earlier batches of its queue still run; it must not move
 * the timeline past them, or finish returns early and destroy frees the
 * queue under their completion callbacks (a use-after-free ASan saw in
 * the soak). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../helpers/cuda_emu_check.h"
#include <devq/devq.h>

#define MS 1000000ull
#define SEC 1000000000ull

/* An emulated-driver kernel (CUDA-style params): sleeps params[0] ms. */
int order_sleep(void **params, const devq_cpu_group *g);
int order_sleep(void **params, const devq_cpu_group *g)
{
    (void)g;
    uint32_t ms = *(const uint32_t *)params[0];
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    return 0;
}
static const char image[] = "devq-emu-module\norder_sleep 4\n";

START_TEST(inline_completion_waits_for_earlier_batches)
{
    /* Call 1 queues batch 1's end callback, call 2 would queue batch 2's. */
    setenv("DEVQ_EMU_FAIL", "cuStreamAddCallback:2:CUDA_ERROR_LAUNCH_FAILED", 1);
    devq_device *dev;
    int r = devq_device_open("cuda", &dev);
    ck_assert_msg(r == 0, "open cuda (emulated): %d %s", r, devq_errmsg());
    devq_queue *q;
    devq_kernel *k;
    devq_signal *s1, *s2;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_kernel_load(dev, image, sizeof image - 1, "order_sleep", &k), 0);
    ck_assert_int_eq(devq_signal_create(0, &s1), 0);
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    uint32_t ms = 300;
    devq_arg a = DEVQ_ARG_VAL(&ms);
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q, k, &a, 1, &l), 0);
    ck_assert_int_eq(devq_queue_signal(q, s1, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_signal(q, s2, 1), 0);
    r = devq_queue_submit(q); /* its end callback cannot be queued */
    ck_assert_msg(r < 0 && strstr(devq_errmsg(), "cuStreamAddCallback"), "submit: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_signal_wait(s2, 1, 0), r); /* batch 2 failed at once */
    r = devq_queue_finish(q, 10 * SEC);
    ck_assert_int_ne(r, -ETIMEDOUT);
    /* finish returned: batch 1, still sleeping when batch 2 failed, is
     * done (reached, or failed with the device). */
    ck_assert_msg(devq_signal_value(s1) == 1 || devq_signal_status(s1) != 0,
                  "finish returned while batch 1 was still running");
    devq_queue_destroy(q); /* no callback of batch 1 left to touch q */
    devq_signal_destroy(s1);
    devq_signal_destroy(s2);
    devq_kernel_destroy(k);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("order");
    tcase_add_test(tc, inline_completion_waits_for_earlier_batches);
    return cuda_emu_run(tc, "completion order");
}
