/* SPDX-License-Identifier: MIT */
/* Device loss through lib: a sticky fault injected into the emulated CUDA
 * driver loses the device mid-pipeline.  Every pending signal must fail
 * with the root cause, later calls must say "device lost", nothing may
 * hang, and destroying queues with callbacks still queued must be safe
 * (this was a use-after-free). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/cuda_emu_check.h"
#include <devq/devq.h>

#define SEC 1000000000ull

/* A kernel for the emulated driver (CUDA-style params). */
int loss_nop(void **params, const devq_cpu_group *g);
int loss_nop(void **params, const devq_cpu_group *g)
{
    (void)params;
    (void)g;
    return 0;
}

static const char image[] = "devq-emu-module\nloss_nop\n";
/* The same kernel taking one buffer: the module declares what a launch
 * passes (the plugin checks launches against it, devq-cuda(7)). */
static const char image_buf[] = "devq-emu-module\nloss_nop ptr\n";

START_TEST(loss_fails_pending_work_and_destroy_is_safe)
{
    setenv("DEVQ_EMU_FAIL", "cuLaunchKernel:1:CUDA_ERROR_ILLEGAL_ADDRESS", 1);
    devq_device *dev;
    int r = devq_device_open("cuda", &dev);
    ck_assert_msg(r == 0, "open: %s", devq_errmsg());
    devq_queue *q1, *q2;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load(dev, image, sizeof image, "loss_nop", &k), 0);
    devq_signal *s, *after;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &after), 0);
    /* q2 waits for s >= 1 (from q1), then signals s = 2 and more work. */
    ck_assert_int_eq(devq_queue_wait(q2, s, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q2, s, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(devq_queue_signal(q2, after, (uint64_t)i + 1), 0);
        devq_queue_submit(q2);
    }
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(devq_queue_exec(q1, k, NULL, 0, &l), 0);
    ck_assert_int_eq(devq_queue_signal(q1, s, 1), 0);
    devq_queue_submit(q1);
    r = devq_signal_wait(s, 2, 10 * SEC);
    ck_assert_msg(r == -EIO || r == -ENODEV, "wait: %d %s", r, devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "ILLEGAL_ADDRESS") || strstr(devq_errmsg(), "lost"), "root cause: %s",
                  devq_errmsg());
    r = devq_signal_wait(after, 8, 10 * SEC);
    ck_assert_msg(r < 0, "work after the loss must fail, got %d", r);
    /* Later calls say the device is lost. */
    devq_queue *q3;
    r = devq_queue_create(dev, NULL, &q3);
    ck_assert_msg(r == -ENODEV && strstr(devq_errmsg(), "lost"), "create after loss: %d %s", r,
                  devq_errmsg());
    devq_queue_destroy(q2); /* callbacks may still be queued: must be safe */
    devq_queue_destroy(q1);
    devq_kernel_destroy(k);
    devq_signal_destroy(s);
    devq_signal_destroy(after);
    devq_device_close(dev);
}
END_TEST

/* Every drop path on a lost device fails what it would have signalled
 * and written (devq(7) FAILURES): batches that ran when the device was
 * lost, a batch open at the loss, a signal op recorded after it. */
START_TEST(loss_fails_signals_and_buffers_of_every_dropped_batch)
{
    setenv("DEVQ_EMU_FAIL", "cuLaunchKernel:1:CUDA_ERROR_ILLEGAL_ADDRESS", 1);
    devq_device *dev;
    int r = devq_device_open("cuda", &dev);
    ck_assert_msg(r == 0, "open: %s", devq_errmsg());
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load(dev, image_buf, sizeof image_buf, "loss_nop", &k), 0);
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 256, NULL, 0, &b), 0);
    devq_signal *ran, *open_sig, *late;
    ck_assert_int_eq(devq_signal_create(0, &ran), 0);
    ck_assert_int_eq(devq_signal_create(0, &open_sig), 0);
    ck_assert_int_eq(devq_signal_create(0, &late), 0);
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    devq_arg a = DEVQ_ARG_BUF(b, DEVQ_WRITE);
    ck_assert_int_eq(devq_queue_exec(q, k, &a, 1, &l), 0); /* loses the device */
    ck_assert_int_eq(devq_queue_fill(q, b, 0, 256, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q, ran, 1), 0);
    r = devq_queue_submit(q); /* the driver may refuse the launch at once */
    ck_assert_msg(r == 0 || r == -EIO || r == -ENODEV, "submit: %d %s", r, devq_errmsg());
    r = devq_signal_wait(ran, 1, 10 * SEC);
    ck_assert_msg(r == -EIO || r == -ENODEV, "batch that ran: %d %s", r, devq_errmsg());
    ck_assert_int_lt(devq_queue_finish(q, 10 * SEC), 0);
    r = devq_buffer_status(b);
    ck_assert_msg(r == -EIO || r == -ENODEV, "what it wrote is failed: %d %s", r, devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "ILLEGAL_ADDRESS") || strstr(devq_errmsg(), "lost"),
                  "buffer names the root cause: %s", devq_errmsg());
    /* A batch submitted after the loss (which lib may learn only when
     * the driver refuses it) fails its signal and is reported once. */
    r = devq_queue_signal(q, late, 1);
    ck_assert_msg(r == 0 || r == -ENODEV, "late signal op: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(q), -ENODEV);
    ck_assert_int_eq(devq_signal_wait(late, 1, 10 * SEC), -ENODEV);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -ENODEV);
    ck_assert_msg(strstr(devq_errmsg(), "lost"), "finish: %s", devq_errmsg()); /* and stays lost */
    /* Now lib knows: recording fails at once, and a signal op recorded
     * then is kept, so the destroy of the open batch fails it. */
    ck_assert_int_eq(devq_queue_signal(q, open_sig, 1), -ENODEV);
    devq_queue_destroy(q);
    r = devq_signal_wait(open_sig, 1, 10 * SEC);
    ck_assert_msg(r == -ECANCELED, "open batch at destroy: %d %s", r, devq_errmsg());
    devq_buffer_free(b, NULL);
    devq_kernel_destroy(k);
    devq_signal_destroy(ran);
    devq_signal_destroy(open_sig);
    devq_signal_destroy(late);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("loss");
    tcase_add_test(tc, loss_fails_pending_work_and_destroy_is_safe);
    tcase_add_test(tc, loss_fails_signals_and_buffers_of_every_dropped_batch);
    return cuda_emu_run(tc, "device loss");
}
