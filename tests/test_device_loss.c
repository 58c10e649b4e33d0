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
#include "cuda_emu_check.h"
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
    ck_assert_msg(strstr(devq_errmsg(), "ILLEGAL_ADDRESS") || strstr(devq_errmsg(), "lost"),
                  "root cause: %s", devq_errmsg());
    r = devq_signal_wait(after, 8, 10 * SEC);
    ck_assert_msg(r < 0, "work after the loss must fail, got %d", r);
    /* Later calls say the device is lost. */
    devq_queue *q3;
    r = devq_queue_create(dev, NULL, &q3);
    ck_assert_msg(r == -ENODEV && strstr(devq_errmsg(), "lost"), "create after loss: %d %s", r, devq_errmsg());
    devq_queue_destroy(q2);     /* callbacks may still be queued: must be safe */
    devq_queue_destroy(q1);
    devq_kernel_destroy(k);
    devq_signal_destroy(s);
    devq_signal_destroy(after);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("loss");
    tcase_add_test(tc, loss_fails_pending_work_and_destroy_is_safe);
    return cuda_emu_run(tc, "device loss");
}
