/* SPDX-License-Identifier: MIT */
/* A wait on work of another stream must not also wait for what that
 * stream was told to wait for *after* the work (tests/soak, scenario
 * SOAK_XDEV_RELEASE; seen as SOAK_SEED=13519278235 SOAK_ROUND=51).
 *
 * On cuda (device-side waits for host values) lib orders a stream after
 * another with an event.  If the event is recorded at the producer's
 * tail, or at a checkpoint placed after a wait of the same unit, the
 * consumer also waits for whatever the producer stream waits for later:
 * a host value not set yet, or another stream held by one.  The program
 * below is valid (Vulkan's rules: the value the host waits for depends
 * on nothing the host sets later), so such a false dependency deadlocks
 * it.  Each case waits a bounded time and then releases the host value,
 * so a regression fails instead of hanging. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../helpers/cuda_emu_check.h"
#include <devq/devq.h>

#define SEC 1000000000ull

struct rig {
    devq_device *dev;
    devq_queue *a, *b, *c, *d; /* a consumes b's work; c is held by the host */
    devq_signal *host, *go, *sb, *sc, *sa, *sd;
    devq_buffer *x, *y, *z; /* c writes x, b writes y, d writes z */
};

static void rig_open(struct rig *r)
{
    memset(r, 0, sizeof *r);
    int rc = devq_device_open("cuda", &r->dev);
    ck_assert_msg(rc == 0, "open cuda (emulated): %d %s", rc, devq_errmsg());
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(r->dev, &info), 0);
    ck_assert_msg(info.caps & DEVQ_CAP_WAIT_VALUE,
                  "the emulated cuda device must wait for values on the device");
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->a), 0);
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->b), 0);
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->c), 0);
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->d), 0);
    devq_signal **s[] = { &r->host, &r->go, &r->sb, &r->sc, &r->sa, &r->sd };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        ck_assert_int_eq(devq_signal_create(0, s[i]), 0);
    ck_assert_int_eq(devq_buffer_alloc(r->dev, 4096, NULL, 0, &r->x), 0);
    ck_assert_int_eq(devq_buffer_alloc(r->dev, 4096, NULL, 0, &r->y), 0);
    ck_assert_int_eq(devq_buffer_alloc(r->dev, 4096, NULL, 0, &r->z), 0);
}

/* c: waits for host >= 1 on the device, writes x, signals sc = 1. */
static void hold_c(struct rig *r)
{
    ck_assert_int_eq(devq_queue_wait(r->c, r->host, 1), 0);
    ck_assert_int_eq(devq_queue_fill(r->c, r->x, 0, 4096, 0x11), 0);
    ck_assert_int_eq(devq_queue_signal(r->c, r->sc, 1), 0);
    ck_assert_int_eq(devq_queue_submit(r->c), 0);
}

/* b: work that depends on nothing but `go`, signalling sb = 1.  The host
 * sets go once a waits for sb, so that wait is always an ordering on the
 * device (not dropped because sb was already reached). */
static void free_work_b(struct rig *r)
{
    ck_assert_int_eq(devq_queue_wait(r->b, r->go, 1), 0);
    ck_assert_int_eq(devq_queue_fill(r->b, r->y, 0, 4096, 0x22), 0);
    ck_assert_int_eq(devq_queue_signal(r->b, r->sb, 1), 0);
    ck_assert_int_eq(devq_queue_submit(r->b), 0);
}

/* a waits for sb only; the host must see sa before it sets anything. */
static void consumer_must_finish(struct rig *r, const char *what)
{
    ck_assert_int_eq(devq_queue_wait(r->a, r->sb, 1), 0);
    ck_assert_int_eq(devq_queue_signal(r->a, r->sa, 1), 0);
    ck_assert_int_eq(devq_queue_submit(r->a), 0);
    ck_assert_int_eq(devq_signal_set(r->go, 1), 0);
    int rc = devq_signal_wait(r->sa, 1, 3 * SEC);
    /* Release everything before judging, so a failure tears down cleanly. */
    ck_assert_int_eq(devq_signal_set(r->host, 100), 0);
    ck_assert_msg(rc == 0,
                  "%s: a queue waiting only for queue b's first batch did not finish while the host "
                  "held queue c (a false dependency): %d %s",
                  what, rc, devq_errmsg());
}

static void rig_close(struct rig *r)
{
    devq_queue *q[] = { r->a, r->b, r->c, r->d };
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(devq_queue_finish(q[i], 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_free(r->x, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(r->y, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(r->z, NULL), 0);
    for (size_t i = 0; i < 4; i++)
        devq_queue_destroy(q[i]);
    devq_signal *s[] = { r->host, r->go, r->sb, r->sc, r->sa, r->sd };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        devq_signal_destroy(s[i]);
    devq_device_close(r->dev);
}

/* The soak's chain: b's second batch waits for c (an alignment behind
 * c's device-side wait) and then for a host value on the device. */
START_TEST(alignment_then_device_wait)
{
    struct rig r;
    rig_open(&r);
    hold_c(&r);
    free_work_b(&r);
    ck_assert_int_eq(devq_queue_wait(r.b, r.sc, 1), 0);
    ck_assert_int_eq(devq_queue_wait(r.b, r.host, 2), 0);
    ck_assert_int_eq(devq_queue_submit(r.b), 0);
    consumer_must_finish(&r, "b: wait sc, wait host");
    rig_close(&r);
}
END_TEST

/* b's second batch only waits for c: b's tail is held through c. */
START_TEST(alignment_only)
{
    struct rig r;
    rig_open(&r);
    hold_c(&r);
    free_work_b(&r);
    ck_assert_int_eq(devq_queue_wait(r.b, r.sc, 1), 0);
    ck_assert_int_eq(devq_queue_submit(r.b), 0);
    consumer_must_finish(&r, "b: wait sc");
    rig_close(&r);
}
END_TEST

/* b's second batch writes the buffer c writes: the write-after-write
 * hazard puts b behind c (legitimately), but not a, which needs sb only. */
START_TEST(buffer_hazard)
{
    struct rig r;
    rig_open(&r);
    hold_c(&r);
    free_work_b(&r);
    ck_assert_int_eq(devq_queue_fill(r.b, r.x, 0, 64, 0x33), 0);
    ck_assert_int_eq(devq_queue_submit(r.b), 0);
    consumer_must_finish(&r, "b: fill the buffer c fills");
    rig_close(&r);
}
END_TEST

/* After the held wait, b orders itself after d many times (batches
 * that are not held): whatever lib keeps to remember where b was before
 * the held wait must survive that. */
START_TEST(many_alignments_after_the_held_one)
{
    struct rig r;
    rig_open(&r);
    hold_c(&r);
    free_work_b(&r);
    ck_assert_int_eq(devq_queue_wait(r.b, r.sc, 1), 0);
    ck_assert_int_eq(devq_queue_submit(r.b), 0);
    for (uint64_t i = 1; i <= 40; i++) {
        ck_assert_int_eq(devq_queue_fill(r.d, r.z, 0, 64, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_signal(r.d, r.sd, i), 0);
        ck_assert_int_eq(devq_queue_submit(r.d), 0);
        ck_assert_int_eq(devq_queue_wait(r.b, r.sd, i), 0);
        ck_assert_int_eq(devq_queue_submit(r.b), 0);
    }
    consumer_must_finish(&r, "b: wait sc, then 40 waits on d");
    rig_close(&r);
}
END_TEST

/* The same holds for completion: a batch completed at once (its end
 * callback could not be queued on a lost device) must not move the queue
 * past an earlier batch whose callbacks are still queued, or finish
 * returns early and destroy frees the queue under those callbacks (a
 * crash the soak hit once checkpoints added ops to drain on loss). */
START_TEST(finish_waits_for_callbacks_on_a_lost_device)
{
    /* Slow ops, so the stream is still draining batch 1 after the loss;
     * the 6th memset (queue p's) poisons the context when it runs. */
    setenv("DEVQ_EMU_DELAY", "20000", 1);
    setenv("DEVQ_EMU_SEED", "7", 1);
    setenv("DEVQ_EMU_FAIL", "cuMemsetD8Async:6:CUDA_ERROR_ILLEGAL_ADDRESS", 1);
    devq_device *dev;
    int rc = devq_device_open("cuda", &dev);
    ck_assert_msg(rc == 0, "open cuda (emulated): %d %s", rc, devq_errmsg());
    devq_queue *q, *p;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &p), 0);
    devq_signal *host, *s1, *s2, *sp;
    ck_assert_int_eq(devq_signal_create(0, &host), 0);
    ck_assert_int_eq(devq_signal_create(0, &s1), 0);
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    ck_assert_int_eq(devq_signal_create(0, &sp), 0);
    devq_buffer *x, *y;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &x), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, NULL, 0, &y), 0);
    /* Batch 1 of q: held on the device until the loss gives the wait up. */
    ck_assert_int_eq(devq_queue_wait(q, host, 1), 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(devq_queue_fill(q, x, 0, 4096, (uint8_t)i), 0);
    ck_assert_int_eq(devq_queue_signal(q, s1, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_fill(p, y, 0, 4096, 1), 0);
    ck_assert_int_eq(devq_queue_signal(p, sp, 1), 0);
    ck_assert_int_eq(devq_queue_submit(p), 0);
    rc = devq_signal_wait(sp, 1, 10 * SEC);
    ck_assert_msg(rc < 0 && rc != -ETIMEDOUT, "the injected sticky error must fail p's batch: %d %s", rc,
                  devq_errmsg());
    /* Batch 2 of q: its memset fails at once, so it completes at once. */
    ck_assert_int_eq(devq_queue_fill(q, x, 0, 64, 9), 0);
    ck_assert_int_eq(devq_queue_signal(q, s2, 1), 0);
    devq_queue_submit(q);
    rc = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(rc != -ETIMEDOUT, "finish on a lost device timed out: %s", devq_errmsg());
    ck_assert_msg(devq_signal_status(s1) != 0 || devq_signal_value(s1) >= 1,
                  "devq_queue_finish returned (%d) while batch 1 of the queue had not completed", rc);
    devq_queue_destroy(q); /* must not leave callbacks pointing into q */
    devq_queue_destroy(p);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_signal *s[] = { host, s1, s2, sp };
    for (size_t i = 0; i < 4; i++)
        devq_signal_destroy(s[i]);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("false dependencies");
    tcase_add_test(tc, alignment_then_device_wait);
    tcase_add_test(tc, alignment_only);
    tcase_add_test(tc, buffer_hazard);
    tcase_add_test(tc, many_alignments_after_the_held_one);
    tcase_add_test(tc, finish_waits_for_callbacks_on_a_lost_device);
    return cuda_emu_run(tc, "held alignment");
}
