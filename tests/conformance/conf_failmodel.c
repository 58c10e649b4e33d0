/* SPDX-License-Identifier: MIT */
/* The failure model (DESIGN §5a, devq(7) FAILURES), on every backend:
 * failure follows buffers as well as signals, a skipped op's
 * destinations fail, a writer that declares a whole buffer new clears
 * it (part of it does not), every dropped batch fails its signals, root
 * causes stay true.
 *
 * The failure source is a batch whose wait fails (devq_signal_fail): it
 * works the same on every backend.  Kernel failures, which only the cpu
 * backend recovers from, are covered where they are recoverable. */
#include "conf.h"

static int recoverable_kernel_failures(devq_device *dev)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    return (info.caps & DEVQ_CAP_SKIP_ON_ERROR) != 0;
}

struct fixture {
    devq_device *dev;
    devq_queue *q1, *q2, *q3;
    devq_signal *gate; /* q1's producer waits on it; failed by the test */
    devq_buffer *a, *b, *c;
};

static struct fixture fx;

static void fx_setup(void)
{
    fx.dev = conf_open();
    fx.q1 = conf_queue(fx.dev);
    fx.q2 = conf_queue(fx.dev);
    fx.q3 = conf_queue(fx.dev);
    fx.gate = conf_signal(0);
    fx.a = conf_buffer(fx.dev, 256);
    fx.b = conf_buffer(fx.dev, 256);
    fx.c = conf_buffer(fx.dev, 256);
    /* Named, so causes can be matched whatever numbers the process
     * handed out before (devq(7) NAMES). */
    ck_assert_int_eq(devq_queue_set_name(fx.q1, "producer"), 0);
    ck_assert_int_eq(devq_queue_set_name(fx.q2, "consumer"), 0);
    ck_assert_int_eq(devq_queue_set_name(fx.q3, "relay"), 0);
    ck_assert_int_eq(devq_buffer_set_name(fx.a, "a"), 0);
    ck_assert_int_eq(devq_buffer_set_name(fx.b, "b"), 0);
    ck_assert_int_eq(devq_signal_set_name(fx.gate, "gate"), 0);
    uint8_t init[256];
    memset(init, 7, sizeof init);
    conf_upload(fx.q1, fx.a, init, sizeof init);
    conf_upload(fx.q1, fx.b, init, sizeof init);
    conf_upload(fx.q1, fx.c, init, sizeof init);
}

static void fx_teardown(void)
{
    devq_signal_fail(fx.gate, -ECANCELED); /* nothing may still wait on it */
    devq_queue_finish(fx.q1, 10 * SEC);
    devq_queue_finish(fx.q2, 10 * SEC);
    devq_queue_finish(fx.q3, 10 * SEC);
    devq_buffer_free(fx.a, NULL);
    devq_buffer_free(fx.b, NULL);
    devq_buffer_free(fx.c, NULL);
    devq_queue_destroy(fx.q1);
    devq_queue_destroy(fx.q2);
    devq_queue_destroy(fx.q3);
    devq_signal_destroy(fx.gate);
    devq_device_close(fx.dev);
}

/* Submit a batch on q that waits w >= 1, then signals s = 1. */
static void wait_then_signal(devq_queue *q, devq_signal *w, devq_signal *s)
{
    ck_assert_int_eq(devq_queue_wait(q, w, 1), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
}

/* q1: wait gate>=1, then fill dst (skipped once the gate fails). */
static void producer_fill(devq_buffer *dst)
{
    ck_assert_int_eq(devq_queue_wait(fx.q1, fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, dst, 0, 256, 0x55), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
}

static void fail_gate(void)
{
    ck_assert_int_eq(devq_signal_fail(fx.gate, -EIO), 0);
    ck_assert_int_lt(devq_queue_finish(fx.q1, 10 * SEC), 0);
}

static void assert_mentions(const char *what, const char *needle)
{
    ck_assert_msg(strstr(devq_errmsg(), needle), "%s: '%s' not in: %s", what, needle, devq_errmsg());
}

START_TEST(read_of_failed_buffer_fails_across_queues)
{
    producer_fill(fx.a);
    uint8_t out[256];
    memset(out, 0, sizeof out);
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0); /* ordered after q1 by the tracker */
    fail_gate();
    int r = devq_queue_finish(fx.q2, 10 * SEC);
    ck_assert_int_eq(r, -EIO);
    assert_mentions("consumer", "queue \"consumer\" (#");
    assert_mentions("consumer", "reads buffer \"a\" (#");
    assert_mentions("consumer", "queue \"producer\" (#");
    assert_mentions("consumer", "signal \"gate\" (#");
    assert_mentions("consumer root cause", "devq_signal_fail(-EIO)");
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    assert_mentions("buffer status", "devq_signal_fail(-EIO)");
    ck_assert_int_eq(devq_buffer_status(fx.b), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0); /* reported once */
}
END_TEST

START_TEST(read_after_producer_finished_fails)
{
    producer_fill(fx.a);
    fail_gate();
    /* The consumer comes after the failure is known: same verdict. */
    uint8_t out[256];
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), -EIO);
    assert_mentions("consumer", "reads buffer");
    /* And on the producer's own queue, in a later batch. */
    ck_assert_int_eq(devq_queue_read(fx.q1, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), -EIO);
}
END_TEST

START_TEST(failure_travels_a_copy_chain)
{
    producer_fill(fx.a);
    ck_assert_int_eq(devq_queue_copy(fx.q2, fx.b, 0, fx.a, 0, 256), 0); /* hop 1: a -> b */
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_copy(fx.q3, fx.c, 0, fx.b, 0, 256), 0); /* hop 2: b -> c */
    ck_assert_int_eq(devq_queue_submit(fx.q3), 0);
    fail_gate();
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_queue_finish(fx.q3, 10 * SEC), -EIO);
    assert_mentions("hop 2", "queue \"relay\" (#");
    assert_mentions("hop 2", "reads buffer \"b\" (#");
    assert_mentions("hop 2 root cause", "devq_signal_fail(-EIO)");
    ck_assert_int_eq(devq_buffer_status(fx.c), -EIO);
    assert_mentions("c's status", "devq_signal_fail(-EIO)");
    ck_assert_int_eq(devq_buffer_status(fx.b), -EIO);
}
END_TEST

START_TEST(failure_through_an_elided_wait)
{
    producer_fill(fx.a);                                          /* batch 1 fails: a */
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.c, 0, 256, 1), 0); /* batch 2 fine: c */
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    fail_gate();
    ck_assert_int_eq(devq_buffer_status(fx.c), 0);
    devq_stats s0, s1;
    ck_assert_int_eq(devq_stats_get(fx.dev, &s0), 0);
    uint8_t out[256];
    /* Reading c orders q2 after q1's tail; a's wait is then implied. */
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.c, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), -EIO);
    assert_mentions("consumer", "reads buffer");
    ck_assert_int_eq(devq_stats_get(fx.dev, &s1), 0);
    ck_assert_uint_ge(s1.waits_elided, s0.waits_elided + 1);
}
END_TEST

static void assert_cleared_by(int how)
{
    producer_fill(fx.a);
    fail_gate();
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    uint8_t src[256];
    memset(src, 3, sizeof src);
    switch (how) {
    case 0:
        ck_assert_int_eq(devq_queue_fill(fx.q2, fx.a, 0, 256, 3), 0);
        break;
    case 1:
        ck_assert_int_eq(devq_queue_write(fx.q2, fx.a, 0, src, sizeof src), 0);
        break;
    case 2:
        ck_assert_int_eq(devq_queue_fill(fx.q2, fx.b, 0, 256, 3), 0);
        ck_assert_int_eq(devq_queue_copy(fx.q2, fx.a, 0, fx.b, 0, 256), 0);
        break;
    default: {
        devq_kernel *k = conf_kernel(fx.dev, "add_u32"); /* READ_WRITE: does not clear */
        uint32_t one = 1;
        devq_arg args[2] = { DEVQ_ARG_BUF(fx.a, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&one) };
        devq_launch l = conf_launch1(64, 64);
        ck_assert_int_eq(devq_queue_exec(fx.q2, k, args, 2, &l), 0);
        ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
        ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), -EIO);
        ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
        /* A kernel that declares it writes (WRITE only) clears it. */
        args[0] = DEVQ_ARG_BUF(fx.a, DEVQ_WRITE);
        ck_assert_int_eq(devq_queue_fill(fx.q2, fx.b, 0, 256, 0), 0);
        ck_assert_int_eq(devq_queue_exec(fx.q2, k, args, 2, &l), 0);
        devq_kernel_destroy(k);
        break;
    }
    }
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(fx.a), 0);
    uint8_t out[256];
    ck_assert_int_eq(devq_queue_read(fx.q3, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q3), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q3, 10 * SEC), 0);
}

/* A write of part of a failed buffer leaves it failed: the rest still
 * holds what the failed writer spoiled, and a reader must not get it as
 * good data.  Only a write of the whole buffer clears it. */
static void assert_partial_keeps_failure(int how)
{
    producer_fill(fx.a);
    fail_gate();
    uint8_t src[256];
    memset(src, 3, sizeof src);
    ck_assert_int_eq(devq_queue_fill(fx.q2, fx.b, 0, 256, 3), 0);
    switch (how) {
    case 0:
        ck_assert_int_eq(devq_queue_fill(fx.q2, fx.a, 0, 128, 3), 0);
        ck_assert_int_eq(devq_queue_fill(fx.q2, fx.a, 64, 192, 3), 0);
        break;
    case 1:
        ck_assert_int_eq(devq_queue_write(fx.q2, fx.a, 16, src, 240), 0);
        break;
    default:
        ck_assert_int_eq(devq_queue_copy(fx.q2, fx.a, 0, fx.b, 0, 255), 0);
        break;
    }
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0); /* the writes themselves ran */
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    assert_mentions("status after a partial write", "devq_signal_fail(-EIO)");
    uint8_t out[256];
    ck_assert_int_eq(devq_queue_read(fx.q3, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q3), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q3, 10 * SEC), -EIO);
    assert_mentions("reader after a partial write", "reads buffer");
    /* Covering the rest in one write clears it. */
    ck_assert_int_eq(devq_queue_write(fx.q2, fx.a, 0, src, sizeof src), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(fx.a), 0);
}

START_TEST(partial_fill_keeps_the_failure)
{
    assert_partial_keeps_failure(0);
}
END_TEST
START_TEST(partial_write_keeps_the_failure)
{
    assert_partial_keeps_failure(1);
}
END_TEST
START_TEST(partial_copy_keeps_the_failure)
{
    assert_partial_keeps_failure(2);
}
END_TEST

START_TEST(fill_clears_a_failed_buffer)
{
    assert_cleared_by(0);
}
END_TEST
START_TEST(write_clears_a_failed_buffer)
{
    assert_cleared_by(1);
}
END_TEST
START_TEST(copy_destination_clears_a_failed_buffer)
{
    assert_cleared_by(2);
}
END_TEST
START_TEST(exec_write_clears_but_read_write_fails)
{
    assert_cleared_by(3);
}
END_TEST

START_TEST(failure_does_not_spread_to_what_was_only_read)
{
    /* The skipped copy read b and would have written a. */
    ck_assert_int_eq(devq_queue_wait(fx.q1, fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_copy(fx.q1, fx.a, 0, fx.b, 0, 256), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.c, 0, 256, 9), 0); /* skipped too */
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    fail_gate();
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    ck_assert_int_eq(devq_buffer_status(fx.c), -EIO);
    ck_assert_int_eq(devq_buffer_status(fx.b), 0);
    uint8_t out[256];
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.b, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0);
    ck_assert_int_eq(out[0], 7);
}
END_TEST

/* cpu: a kernel's own failure spoils what it writes, not what it reads,
 * and only ops from the failure on. */
int conf_cpu_fm_fail_write(void *const *a, const devq_cpu_group *g);
int conf_cpu_fm_fail_write(void *const *a, const devq_cpu_group *g)
{
    (void)g;
    ((uint8_t *)a[0])[0] = 0xee; /* a partial write: spoiled */
    return -EIO;
}

START_TEST(failed_kernel_spoils_what_it_writes)
{
    /* A cpu kernel of this program; elsewhere a kernel failure loses the
     * device (cuda, hip) or cannot happen (a Vulkan shader cannot fail). */
    if (strcmp(conf_backend(), "cpu") != 0 || !recoverable_kernel_failures(fx.dev)) {
        printf("failed_kernel_spoils_what_it_writes: skipped on %s: needs a kernel that fails and a "
               "backend that survives it (cpu)\n",
               conf_backend());
        return;
    }
    devq_kernel *k = NULL;
    ck_assert_int_eq(devq_kernel_load(fx.dev, NULL, 0, "conf_cpu_fm_fail_write", &k), 0);
    devq_arg args[2] = { DEVQ_ARG_BUF(fx.a, DEVQ_WRITE), DEVQ_ARG_BUF(fx.b, DEVQ_READ) };
    devq_launch l = conf_launch1(1, 1);
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.c, 0, 256, 1), 0); /* before the failure: fine */
    ck_assert_int_eq(devq_queue_exec(fx.q1, k, args, 2, &l), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    uint8_t out[256];
    ck_assert_int_eq(devq_queue_read(fx.q2, out, fx.a, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), -EIO);
    assert_mentions("consumer", "reads buffer");
    assert_mentions("consumer root cause", "fm_fail_write");
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    ck_assert_int_eq(devq_buffer_status(fx.b), 0);
    devq_kernel_destroy(k);
}
END_TEST

/* One batch uses a buffer in several ops (the recorder counts and holds
 * it once per batch, record.c): a read before a failure runs, what comes
 * after it is skipped, and whether each buffer ends failed is decided op
 * by op, as if every use were counted on its own. */
START_TEST(repeated_uses_fail_from_the_failure_on)
{
    devq_kernel *k = conf_kernel(fx.dev, "slow_copy");
    uint32_t ms = 0, n = 256;
    devq_launch l = conf_launch1(1, 1);
    /* 1: a -> c (runs); 2: wait for the gate (fails); 3: fill a (skipped:
     * a fails); 4: a -> b (skipped: b fails); 5: a -> c again (skipped: c
     * fails, although op 1 wrote it fine). */
    devq_arg read_a[4] = { DEVQ_ARG_BUF(fx.a, DEVQ_READ), DEVQ_ARG_BUF(fx.c, DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                           DEVQ_ARG_VAL(&n) };
    devq_arg a_to_b[4] = { DEVQ_ARG_BUF(fx.a, DEVQ_READ), DEVQ_ARG_BUF(fx.b, DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                           DEVQ_ARG_VAL(&n) };
    ck_assert_int_eq(devq_queue_exec(fx.q1, k, read_a, 4, &l), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.a, 0, 256, 0x55), 0);
    ck_assert_int_eq(devq_queue_exec(fx.q1, k, a_to_b, 4, &l), 0);
    ck_assert_int_eq(devq_queue_exec(fx.q1, k, read_a, 4, &l), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    fail_gate();
    ck_assert_int_eq(devq_buffer_status(fx.a), -EIO);
    ck_assert_int_eq(devq_buffer_status(fx.b), -EIO);
    ck_assert_int_eq(devq_buffer_status(fx.c), -EIO); /* written again by op 5, skipped */
    /* A whole write after the failure, on another queue, clears a; the
     * readers of b still fail. */
    uint8_t src[256], out[256];
    memset(src, 9, sizeof src);
    ck_assert_int_eq(devq_queue_write(fx.q2, fx.a, 0, src, sizeof src), 0);
    ck_assert_int_eq(devq_queue_exec(fx.q2, k, read_a, 4, &l), 0); /* c = a, good again */
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(fx.a), 0);
    ck_assert_int_eq(devq_buffer_status(fx.c), 0);
    conf_download(fx.q3, out, fx.c, sizeof out);
    ck_assert_int_eq(out[0], 9);
    ck_assert_int_eq(out[255], 9);
    ck_assert_int_eq(devq_queue_read(fx.q3, out, fx.b, 0, sizeof out), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q3), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q3, 10 * SEC), -EIO);
    assert_mentions("reader of b", "reads buffer");
    devq_kernel_destroy(k);
}
END_TEST

/* A batch counts a buffer's unissued uses once, held by its latest use
 * (record.c): a free must still wait for the last use of the batch, not
 * the first, when the batch parks between them.  With `others` buffers
 * used in between, the recorder's memo forgets x and counts it twice;
 * that must hold too.  Freed early, x's memory would go back to the
 * stack while ops 3 and 4 still write and read it. */
static void free_waits_for_the_last_use(int others)
{
    const size_t size = 4096;
    devq_buffer *x = conf_buffer(fx.dev, size), *o[24];
    ck_assert_int_le(others, 24);
    for (int i = 0; i < others; i++)
        o[i] = conf_buffer(fx.dev, 256);
    uint8_t out[4096];
    memset(out, 0, sizeof out);
    ck_assert_int_eq(devq_queue_fill(fx.q1, x, 0, size, 0x11), 0); /* issued before the park */
    for (int i = 0; i < others; i++)
        ck_assert_int_eq(devq_queue_fill(fx.q1, o[i], 0, 256, (uint8_t)i), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, fx.gate, 1), 0); /* parks here */
    ck_assert_int_eq(devq_queue_fill(fx.q1, x, 0, size, 0x55), 0);
    ck_assert_int_eq(devq_queue_read(fx.q1, out, x, 0, size), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    /* A backend that waits on the device issues the rest at once, and the
     * free goes out in stream order behind it; the others park, and the
     * free must wait for them. */
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(fx.dev, &info), 0);
    int parks = !(info.caps & DEVQ_CAP_WAIT_VALUE);
    devq_mem_stats st0, st1;
    ck_assert_int_eq(devq_mem_stats_get(fx.dev, &st0), 0);
    ck_assert_int_eq(devq_buffer_free(x, NULL), 0);
    ck_assert_int_eq(devq_mem_stats_get(fx.dev, &st1), 0);
    ck_assert_msg(!parks || st1.frees == st0.frees,
                  "x was freed (%llu -> %llu frees) while the batch had "
                  "two uses of it left",
                  (unsigned long long)st0.frees, (unsigned long long)st1.frees);
    /* Memory handed out now must not be x's. */
    devq_buffer *y = conf_buffer(fx.dev, size);
    uint8_t ones[4096];
    memset(ones, 0x77, sizeof ones);
    conf_upload(fx.q2, y, ones, size);
    ck_assert_int_eq(devq_signal_set(fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    ck_assert_int_eq(out[0], 0x55);
    ck_assert_int_eq(out[size - 1], 0x55);
    conf_download(fx.q2, out, y, size);
    ck_assert_int_eq(out[0], 0x77);
    ck_assert_int_eq(out[size - 1], 0x77);
    ck_assert_int_eq(devq_mem_stats_get(fx.dev, &st1), 0);
    ck_assert_uint_eq(st1.frees, st0.frees + 1); /* and then it was freed */
    devq_buffer_free(y, NULL);
    for (int i = 0; i < others; i++)
        devq_buffer_free(o[i], NULL);
}

START_TEST(free_waits_for_the_last_use_in_a_batch)
{
    free_waits_for_the_last_use(0);
}
END_TEST
START_TEST(free_waits_for_the_last_use_past_the_memo)
{
    free_waits_for_the_last_use(24);
}
END_TEST

/* ---- drops: every dropped batch fails the signals it would have signalled ---- */

START_TEST(discard_fails_signals_before_and_after_the_error)
{
    devq_signal *before = conf_signal(0), *after = conf_signal(0);
    ck_assert_int_eq(devq_queue_signal(fx.q1, before, 1), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.a, 0, 4096, 0), -EINVAL); /* past the end: sticky */
    ck_assert_int_eq(devq_queue_signal(fx.q1, after, 1), -EINVAL);
    ck_assert_int_eq(devq_queue_submit(fx.q1), -EINVAL);
    ck_assert_int_eq(devq_signal_wait(before, 1, 5 * SEC), -EINVAL);
    assert_mentions("before", "discarded");
    ck_assert_int_eq(devq_signal_wait(after, 1, 5 * SEC), -EINVAL);
    assert_mentions("after", "discarded");
    ck_assert_int_eq(devq_queue_finish(fx.q1, 5 * SEC), -EINVAL); /* reported once */
    assert_mentions("finish", "discarded");
    ck_assert_int_eq(devq_queue_finish(fx.q1, 5 * SEC), 0);
    /* The queue records normally afterwards. */
    ck_assert_int_eq(devq_queue_fill(fx.q1, fx.a, 0, 256, 0), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 5 * SEC), 0);
    devq_signal_destroy(before);
    devq_signal_destroy(after);
}
END_TEST

START_TEST(destroy_with_an_open_batch_fails_its_signals)
{
    devq_queue *q = conf_queue(fx.dev);
    devq_signal *s = conf_signal(0);
    ck_assert_int_eq(devq_queue_fill(q, fx.a, 0, 256, 0), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    devq_queue_destroy(q); /* never submitted */
    ck_assert_int_eq(devq_signal_wait(s, 1, 5 * SEC), -ECANCELED);
    assert_mentions("open batch", "destroyed");
    assert_mentions("open batch", "never submitted");
    devq_signal_destroy(s);
}
END_TEST

START_TEST(destroy_with_deferred_batches_fails_their_signals)
{
    devq_queue *q = conf_queue(fx.dev);
    devq_signal *w = conf_signal(0), *s1 = conf_signal(0), *s2 = conf_signal(0);
    wait_then_signal(q, w, s1);
    ck_assert_int_eq(devq_queue_signal(q, s2, 1), 0); /* a second batch behind it */
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_queue_destroy(q);
    ck_assert_int_eq(devq_signal_wait(s1, 1, 5 * SEC), -ECANCELED);
    assert_mentions("deferred head", "destroyed");
    int r = devq_signal_wait(s2, 1, 5 * SEC);
    ck_assert_msg(r == -ECANCELED, "second batch: %d %s", r, devq_errmsg());
    devq_signal_destroy(w);
    devq_signal_destroy(s1);
    devq_signal_destroy(s2);
}
END_TEST

/* ---- root causes: the same program, the same errno and cause everywhere ---- */

static void user_fail_keeps_cause(int err, const char *name)
{
    devq_signal *t = conf_signal(0);
    wait_then_signal(fx.q1, fx.gate, t);
    ck_assert_int_eq(devq_signal_fail(fx.gate, err), 0);
    ck_assert_int_eq(devq_signal_wait(t, 1, 5 * SEC), err);
    assert_mentions("downstream signal", name);
    ck_assert_msg(!strstr(devq_errmsg(), "destroyed"), "not a destroy: %s", devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(fx.q1, 5 * SEC), err);
    assert_mentions("finish", name);
    devq_signal_destroy(t);
}

/* Each link of a chain names the device whose queue waited
 * (devq_queue_wait(3)): "queue "consumer" (#2) batch 1 on cpu:0 waits for
 * signal ... >= 1, which failed: ...", whether the wait met a failed
 * signal at issue, was deferred and saw it fail later, or waits across
 * devices (where only the device tells the two "batch 1"s apart). */
static void assert_waiter_named(devq_signal *t, const char *queue, const char *dev)
{
    ck_assert_int_eq(devq_signal_wait(t, 1, 5 * SEC), -EIO);
    char want[96];
    snprintf(want, sizeof want, "batch 1 on %s waits for signal", dev);
    assert_mentions(queue, want);
    assert_mentions(queue, "which failed: devq_signal_fail(-EIO)");
}

START_TEST(a_failed_wait_names_the_waiting_device)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(fx.dev, &info), 0);
    char here[40];
    snprintf(here, sizeof here, "%s:%d", info.backend, info.ordinal);

    devq_signal *w = conf_signal(0), *t = conf_signal(0);
    ck_assert_int_eq(devq_signal_fail(w, -EIO), 0); /* failed before issue */
    wait_then_signal(fx.q2, w, t);
    assert_waiter_named(t, "issue", here);
    devq_queue_finish(fx.q2, 5 * SEC);

    devq_signal *w2 = conf_signal(0), *t2 = conf_signal(0);
    wait_then_signal(fx.q3, w2, t2); /* deferred, then failed */
    ck_assert_int_eq(devq_signal_fail(w2, -EIO), 0);
    assert_waiter_named(t2, "deferred", here);
    devq_queue_finish(fx.q3, 5 * SEC);

    /* Across devices: a queue of a second device, where there is one. */
    char spec[40];
    snprintf(spec, sizeof spec, "%s:%d", info.backend, info.ordinal + 1);
    devq_device *other = NULL;
    if (devq_device_open(spec, &other) == 0) {
        devq_queue *q = conf_queue(other);
        devq_signal *w3 = conf_signal(0), *t3 = conf_signal(0);
        wait_then_signal(q, w3, t3);
        ck_assert_int_eq(devq_signal_fail(w3, -EIO), 0);
        assert_waiter_named(t3, "other device", spec);
        devq_queue_finish(q, 5 * SEC);
        devq_queue_destroy(q);
        devq_signal_destroy(w3);
        devq_signal_destroy(t3);
        devq_device_close(other);
    } else {
        fprintf(stderr,
                "a_failed_wait_names_the_waiting_device: no %s, the cross-device case "
                "is skipped (%s)\n",
                spec, devq_errmsg());
    }
    devq_signal_destroy(w);
    devq_signal_destroy(t);
    devq_signal_destroy(w2);
    devq_signal_destroy(t2);
}
END_TEST

START_TEST(user_fail_ecanceled_is_not_a_destroy)
{
    user_fail_keeps_cause(-ECANCELED, "devq_signal_fail(-ECANCELED)");
}
END_TEST
START_TEST(user_fail_eio_keeps_its_cause)
{
    user_fail_keeps_cause(-EIO, "devq_signal_fail(-EIO)");
}
END_TEST
START_TEST(user_fail_etimedout_keeps_its_cause)
{
    user_fail_keeps_cause(-ETIMEDOUT, "devq_signal_fail(-ETIMEDOUT)");
}
END_TEST

START_TEST(destroying_a_waited_signal_cancels_the_batch)
{
    devq_signal *w = conf_signal(0), *t = conf_signal(0);
    wait_then_signal(fx.q1, w, t);
    devq_signal_destroy(w);
    ck_assert_int_eq(devq_signal_wait(t, 1, 5 * SEC), -ECANCELED);
    assert_mentions("downstream signal", "was destroyed");
    ck_assert_int_eq(devq_queue_finish(fx.q1, 5 * SEC), -ECANCELED);
    assert_mentions("finish", "was destroyed");
    devq_signal_destroy(t);
}
END_TEST

START_TEST(destroying_a_producer_queue_cancels_its_consumers)
{
    devq_queue *p = conf_queue(fx.dev);
    devq_signal *w = conf_signal(0), *s = conf_signal(0), *t = conf_signal(0);
    wait_then_signal(p, w, s);
    wait_then_signal(fx.q2, s, t);
    devq_queue_destroy(p);
    ck_assert_int_eq(devq_signal_wait(t, 1, 5 * SEC), -ECANCELED);
    assert_mentions("consumer", "destroyed");
    ck_assert_int_eq(devq_queue_finish(fx.q2, 5 * SEC), -ECANCELED);
    devq_signal_destroy(w);
    devq_signal_destroy(s);
    devq_signal_destroy(t);
}
END_TEST

/* ---- a wait cycle is named from every queue in it ---- */

START_TEST(three_queue_cycle_named_from_each_queue)
{
    devq_signal *a = conf_signal(0), *b = conf_signal(0), *c = conf_signal(0);
    devq_queue *q[3] = { fx.q1, fx.q2, fx.q3 };
    devq_signal *wait_on[3] = { a, b, c }, *signals[3] = { b, c, a };
    for (int i = 0; i < 3; i++)
        wait_then_signal(q[i], wait_on[i], signals[i]);
    for (int i = 0; i < 3; i++) {
        int r = devq_queue_finish(q[i], 50 * MS);
        ck_assert_int_eq(r, -ETIMEDOUT);
        ck_assert_msg(strstr(devq_errmsg(), "wait cycle"), "queue %d: %s", i + 1, devq_errmsg());
        ck_assert_msg(strstr(devq_errmsg(), "1 batch(es) unfinished"), "queue %d: %s", i + 1, devq_errmsg());
    }
    ck_assert_int_eq(devq_signal_set(a, 1), 0); /* the host breaks it */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(devq_queue_finish(q[i], 10 * SEC), 0);
    ck_assert_uint_eq(devq_signal_value(c), 1);
    devq_signal_destroy(a);
    devq_signal_destroy(b);
    devq_signal_destroy(c);
}
END_TEST

START_TEST(timeout_counts_what_is_unfinished_now)
{
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 20 * MS), -ETIMEDOUT);
    ck_assert_msg(strstr(devq_errmsg(), ": 1 batch(es) unfinished"), "%s", devq_errmsg());
    ck_assert_msg(!strstr(devq_errmsg(), " of "), "counts only what is unfinished: %s", devq_errmsg());
    ck_assert_int_eq(devq_signal_set(fx.gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
}
END_TEST

Suite *conf_failmodel_suite(void)
{
    Suite *s = suite_create("failmodel");
    TCase *tc = tcase_create("buffers");
    tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, read_of_failed_buffer_fails_across_queues);
    tcase_add_test(tc, read_after_producer_finished_fails);
    tcase_add_test(tc, failure_travels_a_copy_chain);
    tcase_add_test(tc, failure_through_an_elided_wait);
    tcase_add_test(tc, fill_clears_a_failed_buffer);
    tcase_add_test(tc, write_clears_a_failed_buffer);
    tcase_add_test(tc, copy_destination_clears_a_failed_buffer);
    tcase_add_test(tc, exec_write_clears_but_read_write_fails);
    tcase_add_test(tc, partial_fill_keeps_the_failure);
    tcase_add_test(tc, partial_write_keeps_the_failure);
    tcase_add_test(tc, partial_copy_keeps_the_failure);
    tcase_add_test(tc, failure_does_not_spread_to_what_was_only_read);
    tcase_add_test(tc, failed_kernel_spoils_what_it_writes);
    tcase_add_test(tc, repeated_uses_fail_from_the_failure_on);
    tcase_add_test(tc, free_waits_for_the_last_use_in_a_batch);
    tcase_add_test(tc, free_waits_for_the_last_use_past_the_memo);
    suite_add_tcase(s, tc);
    tc = tcase_create("drops");
    tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, discard_fails_signals_before_and_after_the_error);
    tcase_add_test(tc, destroy_with_an_open_batch_fails_its_signals);
    tcase_add_test(tc, destroy_with_deferred_batches_fails_their_signals);
    suite_add_tcase(s, tc);
    tc = tcase_create("causes");
    tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, user_fail_ecanceled_is_not_a_destroy);
    tcase_add_test(tc, user_fail_eio_keeps_its_cause);
    tcase_add_test(tc, a_failed_wait_names_the_waiting_device);
    tcase_add_test(tc, user_fail_etimedout_keeps_its_cause);
    tcase_add_test(tc, destroying_a_waited_signal_cancels_the_batch);
    tcase_add_test(tc, destroying_a_producer_queue_cancels_its_consumers);
    tcase_add_test(tc, three_queue_cycle_named_from_each_queue);
    tcase_add_test(tc, timeout_counts_what_is_unfinished_now);
    suite_add_tcase(s, tc);
    return s;
}
