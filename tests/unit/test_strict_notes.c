/* SPDX-License-Identifier: MIT */
/* Regression tests for the four bugs the soak reported as "note: known
 * lib bug" lines (tests/soak/README.md, SOAK_STRICT):
 *
 *   lost-device-memory  a lost device kept bytes_outstanding after every
 *                       buffer was freed;
 *   alloc-message       a failed allocation's devq_errmsg() hid the driver
 *                       error (the layer's own message overwrote it while
 *                       quoting it);
 *   cause-truncated     a long chain of failed waits cut the root cause
 *                       off the end of the message;
 *   free-lost-on-error  a stream-ordered free whose ordering failed (a
 *                       cuStreamWaitEvent failure) was dropped.
 *
 * The cuda cases run on the emulated driver with DEVQ_EMU_FAIL, which it
 * reads once per process: Check forks a child per test, so each test sets
 * its own before opening the device.  The chain case runs on cpu. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/cuda_emu_check.h"
#include <devq/devq.h>

#define SEC 1000000000ull

/* A kernel for the emulated driver (CUDA-style params): does nothing. */
int strict_nop(void **params, const devq_cpu_group *g);
int strict_nop(void **params, const devq_cpu_group *g)
{
    (void)params;
    (void)g;
    return 0;
}
static const char image[] = "devq-emu-module\nstrict_nop\n";

static devq_device *open_cuda(const char *fail, const char *pool)
{
    if (fail)
        setenv("DEVQ_EMU_FAIL", fail, 1);
    if (pool)
        setenv("DEVQ_MEM_POOL", pool, 1);
    devq_device *dev;
    int r = devq_device_open("cuda", &dev);
    ck_assert_msg(r == 0, "open cuda (emulated): %d %s", r, devq_errmsg());
    return dev;
}

static void assert_settled(devq_device *dev, const char *what)
{
    devq_mem_stats st;
    /* A reap seals a stream's frees with a fence, a later one finds it
     * reached: reap, let the fence pass, reap. */
    int r = devq_device_synchronize(dev, 10 * SEC);
    ck_assert_msg(r != -ETIMEDOUT, "%s: synchronize timed out", what);
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    r = devq_device_synchronize(dev, 10 * SEC);
    ck_assert_msg(r != -ETIMEDOUT, "%s: synchronize timed out", what);
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_msg(st.bytes_outstanding == 0 && st.pending_frees == 0,
                  "%s: bytes_outstanding %llu, pending_frees %llu after every buffer was freed "
                  "(allocations %llu, frees %llu)",
                  what, (unsigned long long)st.bytes_outstanding, (unsigned long long)st.pending_frees,
                  (unsigned long long)st.allocations, (unsigned long long)st.frees);
    ck_assert_uint_eq(st.frees, st.allocations);
}

/* ---- lost-device-memory ---- */

static const char *const pools[] = { "native", "devq", "direct" };

/* Buffers allocated synchronously and stream-ordered, used on two queues,
 * then a sticky fault loses the device; every free after that (with a
 * queue, without, of a buffer used on two streams) must settle the
 * accounting: the memory went with the context. */
START_TEST(lost_device_frees_settle_accounting)
{
    devq_device *dev = open_cuda("cuLaunchKernel:1:CUDA_ERROR_ILLEGAL_ADDRESS", pools[_i]);
    devq_queue *q1, *q2;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load(dev, image, sizeof image, "strict_nop", &k), 0);
    devq_buffer *sync_a, *sync_b, *ord_a, *ord_b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 1, &sync_a), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 1000, NULL, 2, &sync_b), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, q1, 3, &ord_a), 0);
    ck_assert_msg(devq_buffer_alloc(dev, 5u << 20, q2, 4, &ord_b) == 0, "large alloc: %s", devq_errmsg());
    ck_assert_int_eq(devq_queue_fill(q1, sync_a, 0, 4096, 1), 0);
    ck_assert_int_eq(devq_queue_copy(q1, ord_a, 0, sync_a, 0, 4096), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_copy(q2, sync_b, 0, ord_a, 0, 1000), 0); /* q2 after q1 */
    ck_assert_int_eq(devq_queue_fill(q2, ord_b, 0, 4096, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(devq_queue_exec(q1, k, NULL, 0, &l), 0);
    devq_queue_submit(q1);
    int r = devq_queue_finish(q1, 10 * SEC);
    ck_assert_msg(r < 0 && r != -ETIMEDOUT, "the launch must fail and lose the device: %d %s", r,
                  devq_errmsg());
    devq_queue_finish(q2, 10 * SEC);
    /* Each kind of free on the lost device. */
    devq_buffer_free(sync_a, q2); /* used on both streams: needs ordering */
    devq_buffer_free(sync_b, NULL);
    devq_buffer_free(ord_a, NULL); /* to its alloc queue */
    devq_buffer_free(ord_b, q1);   /* large, on another queue */
    assert_settled(dev, pools[_i]);
    devq_kernel_destroy(k);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

/* The free's own driver call is the first to meet a sticky error: it
 * answers -EIO (later calls -ENODEV), and the device is lost all the
 * same.  Each base must see that and settle the free. */
struct sticky_case {
    const char *pool, *fail;
};
static const struct sticky_case sticky_cases[] = {
    { "native", "cuMemFreeAsync:1:CUDA_ERROR_LAUNCH_FAILED" },
    { "direct", "cuEventRecord:1:CUDA_ERROR_LAUNCH_FAILED" }, /* the free's fence */
    { "devq", "cuEventRecord:1:CUDA_ERROR_LAUNCH_FAILED" },   /* sealed by the reap */
};

START_TEST(free_meeting_the_sticky_error_settles)
{
    const struct sticky_case *c = &sticky_cases[_i];
    devq_device *dev = open_cuda(c->fail, c->pool);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &b), 0);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_fill(q, b, 0, 4096, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0); /* no driver call */
    devq_signal_destroy(done);
    devq_buffer_free(b, q); /* on q, where b was used: no ordering needed */
    assert_settled(dev, c->pool);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* ---- alloc-message ---- */

struct alloc_case {
    const char *fail, *pool, *driver_error;
    int ordered;
};
static const struct alloc_case alloc_cases[] = {
    { "cuMemAllocAsync:1:CUDA_ERROR_OUT_OF_MEMORY", "native", "CUDA_ERROR_OUT_OF_MEMORY", 1 },
    { "cuMemAlloc:1:CUDA_ERROR_INVALID_VALUE", "native", "CUDA_ERROR_INVALID_VALUE", 0 },
    { "cuMemAlloc:1:CUDA_ERROR_INVALID_VALUE", "devq", "CUDA_ERROR_INVALID_VALUE", 1 },
    /* direct tries again after out of memory: both calls fail (a rule
     * counts the calls no earlier rule took: two ":1" rules fail the
     * first two calls) */
    { "cuMemAlloc:1:CUDA_ERROR_OUT_OF_MEMORY,cuMemAlloc:1:CUDA_ERROR_OUT_OF_MEMORY", "direct",
      "CUDA_ERROR_OUT_OF_MEMORY", 0 },
    { "cuMemAlloc:1:CUDA_ERROR_INVALID_VALUE", "direct", "CUDA_ERROR_INVALID_VALUE", 0 },
};

START_TEST(failed_alloc_names_driver_error_and_size)
{
    const struct alloc_case *c = &alloc_cases[_i];
    devq_device *dev = open_cuda(c->fail, c->pool);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_buffer *b = NULL;
    int r = devq_buffer_alloc(dev, 12345, c->ordered ? q : NULL, 0, &b);
    ck_assert_msg(r < 0, "%s with %s: the allocation must fail", c->pool, c->fail);
    const char *msg = devq_errmsg();
    ck_assert_msg(strstr(msg, c->driver_error), "%s with %s: message does not name %s: %s", c->pool, c->fail,
                  c->driver_error, msg);
    ck_assert_msg(strstr(msg, "12345"), "%s with %s: message does not name the size: %s", c->pool, c->fail,
                  msg);
    /* Only that call failed: the next one works. */
    ck_assert_msg(devq_buffer_alloc(dev, 12345, c->ordered ? q : NULL, 0, &b) == 0, "retry: %s",
                  devq_errmsg());
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    assert_settled(dev, c->pool);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* After a loss, an allocation's message names the sticky driver error. */
START_TEST(alloc_after_loss_names_root_cause)
{
    devq_device *dev = open_cuda("cuLaunchKernel:1:CUDA_ERROR_LAUNCH_FAILED", NULL);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load(dev, image, sizeof image, "strict_nop", &k), 0);
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    ck_assert_int_eq(devq_queue_exec(q, k, NULL, 0, &l), 0);
    devq_queue_submit(q);
    ck_assert_int_lt(devq_queue_finish(q, 10 * SEC), 0);
    devq_buffer *b;
    for (int ordered = 0; ordered < 2; ordered++) {
        int r = devq_buffer_alloc(dev, 777, ordered ? q : NULL, 0, &b);
        ck_assert_msg(r == -ENODEV || r == -EIO, "alloc after loss: %d %s", r, devq_errmsg());
        ck_assert_msg(strstr(devq_errmsg(), "CUDA_ERROR_LAUNCH_FAILED"), "no root cause: %s", devq_errmsg());
    }
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* ---- cause-truncated ---- */

#define CHAIN 16

/* s[0] is failed by the host; batch k (on queue k % 3) waits s[k-1] and
 * signals s[k].  Every signal down the chain, and every queue's finish,
 * must name the root cause and the hop just before it. */
START_TEST(long_failure_chain_keeps_root_cause)
{
    devq_device *dev;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    devq_queue *q[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(devq_queue_create(dev, NULL, &q[i]), 0);
    devq_signal *s[CHAIN + 1];
    for (int k = 0; k <= CHAIN; k++)
        ck_assert_int_eq(devq_signal_create(0, &s[k]), 0);
    for (int k = 1; k <= CHAIN; k++) {
        devq_queue *qk = q[k % 3];
        ck_assert_int_eq(devq_queue_wait(qk, s[k - 1], 1), 0);
        ck_assert_int_eq(devq_queue_signal(qk, s[k], 1), 0);
        ck_assert_int_eq(devq_queue_submit(qk), 0);
    }
    ck_assert_int_eq(devq_signal_fail(s[0], -EPIPE), 0);
    char root[128];
    snprintf(root, sizeof root, "%s", devq_signal_status(s[0]) ? "devq_signal_fail(-EPIPE)" : "?");
    for (int k = 1; k <= CHAIN; k++) {
        int r = devq_signal_wait(s[k], 1, 10 * SEC);
        ck_assert_msg(r == -EPIPE, "s[%d]: %d %s", k, r, devq_errmsg());
        const char *msg = devq_errmsg();
        ck_assert_msg(strstr(msg, root), "s[%d] (%zu hops) lost the root cause '%s': %s", k, (size_t)k, root,
                      msg);
        /* The hop just before this signal comes first. */
        ck_assert_msg(!strncmp(msg, "queue ", 6) && strstr(msg, "which failed: "), "s[%d]: no hop first: %s",
                      k, msg);
        if (k == CHAIN)
            ck_assert_msg(strstr(msg, "which failed: ... "), "s[%d]: the elided middle is not marked: %s", k,
                          msg);
    }
    for (int i = 0; i < 3; i++) {
        int r = devq_queue_finish(q[i], 10 * SEC);
        ck_assert_msg(r == -EPIPE && strstr(devq_errmsg(), root), "finish queue %d: %d %s", i, r,
                      devq_errmsg());
        devq_queue_destroy(q[i]);
    }
    for (int k = 0; k <= CHAIN; k++)
        devq_signal_destroy(s[k]);
    devq_device_close(dev);
}
END_TEST

/* ---- free-lost-on-error ---- */

/* b is written on q1 and read on q2, then freed on q3: the free must be
 * ordered after both, and the first stream wait it needs fails.  Whether
 * the next try works or not, the memory must come back. */
START_TEST(free_whose_ordering_fails_is_not_lost)
{
    static const char *const fails[] = {
        "cuStreamWaitEvent:2:CUDA_ERROR_INVALID_VALUE",
        "cuEventRecord:2:CUDA_ERROR_INVALID_VALUE",
    };
    devq_device *dev = open_cuda(fails[_i], NULL);
    devq_queue *q1, *q2, *q3;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q3), 0);
    devq_buffer *b, *c;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &c), 0);
    ck_assert_int_eq(devq_queue_fill(q1, b, 0, 4096, 7), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    /* q2 waits for q1: the first record and stream wait. */
    ck_assert_int_eq(devq_queue_copy(q2, c, 0, b, 0, 4096), 0);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_signal(q2, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    /* A host wait, not devq_queue_finish: that may make driver calls of
     * its own and move the injected failure off the free. */
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0);
    devq_signal_destroy(done);
    int r = devq_buffer_free(b, q3); /* the second: fails */
    ck_assert_msg(r == 0, "free: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_buffer_free(c, q3), 0);
    ck_assert_int_eq(devq_queue_finish(q3, 10 * SEC), 0);
    assert_settled(dev, fails[_i]);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_queue_destroy(q3);
    devq_device_close(dev);
}
END_TEST

/* Every stream wait fails for a while: b, read on q1 and on q2 (neither
 * ordered after the other), cannot be freed in order anywhere.  The free
 * stays pending (nothing is dropped, nothing freed early) and is done by
 * a later devq_mem_reap once the driver works again. */
START_TEST(free_with_no_ordering_at_all_waits_and_is_retried)
{
    /* Twelve rules "fail the first call nobody else took": calls 1-12. */
    char fail[1024] = "";
    for (int n = 1; n <= 12; n++)
        snprintf(fail + strlen(fail), sizeof fail - strlen(fail),
                 "%scuStreamWaitEvent:1:CUDA_ERROR_INVALID_VALUE", n > 1 ? "," : "");
    devq_device *dev = open_cuda(fail, NULL);
    devq_queue *q1, *q2, *q3;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q3), 0);
    devq_buffer *b, *c1, *c2;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &c1), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &c2), 0);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_copy(q1, c1, 0, b, 0, 4096), 0);
    ck_assert_int_eq(devq_queue_signal(q1, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_copy(q2, c2, 0, b, 0, 4096), 0);
    ck_assert_int_eq(devq_queue_signal(q2, done, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_signal_wait(done, 2, 10 * SEC), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0);
    devq_signal_destroy(done);
    ck_assert_int_eq(devq_buffer_free(b, q3), 0);
    devq_mem_stats st;
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_msg(st.bytes_outstanding == 3 * 4096, "the unordered free must wait, not happen: %llu",
                  (unsigned long long)st.bytes_outstanding);
    /* Each reap tries again (and uses up injected failures). */
    for (int i = 0; i < 20 && st.bytes_outstanding != 2 * 4096; i++) {
        ck_assert_int_eq(devq_mem_reap(dev), 0);
        ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    }
    ck_assert_msg(st.bytes_outstanding == 2 * 4096, "the free was never retried: %llu outstanding",
                  (unsigned long long)st.bytes_outstanding);
    ck_assert_int_eq(devq_buffer_free(c1, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(c2, NULL), 0);
    assert_settled(dev, "retried free");
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_queue_destroy(q3);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("notes");
    tcase_add_loop_test(tc, lost_device_frees_settle_accounting, 0, (int)(sizeof pools / sizeof pools[0]));
    tcase_add_loop_test(tc, free_meeting_the_sticky_error_settles, 0,
                        (int)(sizeof sticky_cases / sizeof sticky_cases[0]));
    tcase_add_loop_test(tc, failed_alloc_names_driver_error_and_size, 0,
                        (int)(sizeof alloc_cases / sizeof alloc_cases[0]));
    tcase_add_test(tc, alloc_after_loss_names_root_cause);
    tcase_add_test(tc, long_failure_chain_keeps_root_cause);
    tcase_add_loop_test(tc, free_whose_ordering_fails_is_not_lost, 0, 2);
    tcase_add_test(tc, free_with_no_ordering_at_all_waits_and_is_retried);
    return cuda_emu_run(tc, "strict notes");
}
